"""Exercise 1, pipeline the loop: the reader's incr_all against one INCR per round trip."""

from __future__ import annotations

from collections.abc import Callable

from ...chapters.ch01 import delete_keys
from ...lab import Lab
from .common import MIN_SPEEDUP, REPEAT, _call, _fail, _own_keys, _prefix, _solved, _timed_in_turns, _values


def check_ex01(lab: Lab, incr_all: Callable) -> dict:
    n = lab.size(full=10_000, quick=2_000)
    keys = [f"{_prefix(1)}piped:{i}" for i in range(n)]
    loop_keys = [f"{_prefix(1)}loop:{i}" for i in range(n)]
    with _own_keys(lab, 1) as client:
        # Right first, untimed: a wrong answer is reported before any timing is spent on it.
        replies = _call(1, incr_all, client, keys)
        if replies is None:
            raise _fail(1, "incr_all returned None; return the list that the pipeline's execute() gives back")
        replies = list(replies)
        if len(replies) != n:
            raise _fail(
                1,
                f"incr_all returned {len(replies):,} replies for {n:,} keys; queue one INCR per key "
                "and return execute()'s list",
            )
        wrong = next((i for i, r in enumerate(replies) if r != 1), None)
        if wrong is not None:
            raise _fail(
                1,
                f"reply {wrong} is {replies[wrong]!r}, but INCR on an empty key answers 1; return "
                "execute()'s replies unchanged",
            )
        stored = _values(client, keys)
        if any(v != b"1" for v in stored):
            raise _fail(
                1,
                f"after incr_all, {sum(v != b'1' for v in stored):,} of {n:,} keys do not hold 1; "
                "INCR each key exactly once",
            )
        print(f"{n:,} INCRs on empty keys: every reply is 1 and every key holds 1")

        def one_by_one():
            for key in loop_keys:
                client.incr(key)

        print(f"warm-up + {REPEAT} timed rounds, the two in turns, keys cleared before every run:")
        piped, loop = _timed_in_turns(
            {
                "incr_all (yours)": lambda: incr_all(client, keys),
                "one INCR per round trip (the check's loop)": one_by_one,
            },
            n,
            setup=lambda: delete_keys(client, keys + loop_keys),
        )
    speedup = loop.median / piped.median
    print(f"  speed-up: {speedup:.1f}x (median against median; {MIN_SPEEDUP:.0f}x needed)")
    if speedup < MIN_SPEEDUP:
        raise _fail(
            1,
            f"incr_all took {piped.median * 1e3:.1f} ms against {loop.median * 1e3:.1f} ms for one INCR "
            f"per round trip, a speed-up of {speedup:.1f}x where {MIN_SPEEDUP:.0f}x is needed; queue every "
            "INCR on one pipeline(transaction=False) and call execute() once",
        )
    _solved(1, f"{speedup:.1f}x faster than one INCR per round trip")
    return {"n": n, "pipeline_median_s": piped.median, "loop_median_s": loop.median, "speedup": speedup}
