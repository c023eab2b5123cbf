"""Exercise 2, chunk a big job: set_in_chunks at every depth, each chunk one round trip."""

from __future__ import annotations

import math
from collections.abc import Callable

import redis

from ...chapters.ch01 import delete_keys
from ...lab import Lab
from ...measure import Measurement
from .common import MIN_SPEEDUP, REPEAT, _call, _fail, _own_keys, _prefix, _solved, _timed_in_turns, _values

DEPTHS = (1, 10, 100, 1000)


class _ExecuteCounter:
    """Hands out the client's own pipelines, each recording how many commands every execute() sends
    (and, in `stacks`, which: each command's arguments)."""

    def __init__(self, client: redis.Redis):
        self.sizes: list[int] = []
        self.stacks: list[list[tuple]] = []
        self._pipeline = client.pipeline
        client.pipeline = self.pipeline  # on this instance only: the reader still gets a redis.Redis

    def pipeline(self, *args, **kwargs):
        pipe = self._pipeline(*args, **kwargs)
        execute = pipe.execute

        def counted_execute(*a, **kw):
            if len(pipe.command_stack):  # an empty execute() sends nothing
                self.sizes.append(len(pipe.command_stack))
                self.stacks.append([args for args, _ in pipe.command_stack])
            return execute(*a, **kw)

        pipe.execute = counted_execute  # chained calls (pipe.set(...).execute()) return this same object
        return pipe


def _check_chunks(n: int, depth: int, returned, sizes: list[int]) -> None:
    want = math.ceil(n / depth)
    if sum(sizes) != n:
        raise _fail(
            2,
            f"at depth {depth} the pipelines sent {sum(sizes):,} commands for {n:,} keys; send one SET "
            "per key, all through client.pipeline(...)",
        )
    if max(sizes) > depth:
        raise _fail(
            2,
            f"at depth {depth} one execute() sent {max(sizes):,} commands; call execute() once a chunk "
            f"holds depth commands ({depth:,} here), then queue the next chunk",
        )
    if len(sizes) != want:
        raise _fail(
            2,
            f"at depth {depth} set_in_chunks ran {len(sizes):,} pipelines where {want:,} suffice; "
            "fill each chunk up to depth before executing it",
        )
    if returned != want:
        raise _fail(
            2,
            f"at depth {depth} set_in_chunks returned {returned!r} but executed {want:,} pipelines; "
            "return how many times execute() ran",
        )


def check_ex02(lab: Lab, set_in_chunks: Callable) -> dict:
    n = lab.size(full=20_000, quick=5_000)
    keys = [f"{_prefix(2)}{i}" for i in range(n)]
    value = "ex02-value"
    runs: dict[int, Measurement] = {}
    with _own_keys(lab, 2) as client, lab.client() as handed:
        counter = _ExecuteCounter(handed)
        for depth in DEPTHS:  # right at every depth first, untimed
            delete_keys(client, keys)
            counter.sizes.clear()
            returned = _call(2, set_in_chunks, handed, keys, value, depth)
            _check_chunks(n, depth, returned, counter.sizes)
            stored = _values(client, keys)
            if any(v != value.encode() for v in stored):
                raise _fail(
                    2,
                    f"at depth {depth}, {sum(v != value.encode() for v in stored):,} of {n:,} keys do "
                    "not hold the value; SET every key to `value`",
                )
        print(
            f"{n:,} SETs at depths {', '.join(map(str, DEPTHS))}: every key holds the value, every execute() "
            "sent at most depth commands, and the count returned is right"
        )
        print(f"warm-up + {REPEAT} timed rounds, the depths in turns, keys cleared before every run:")
        timed = _timed_in_turns(
            {f"depth {depth}": lambda depth=depth: set_in_chunks(handed, keys, value, depth) for depth in DEPTHS},
            n,
            setup=lambda: delete_keys(client, keys),
            show=False,
        )
        runs = dict(zip(DEPTHS, timed))
    base = runs[1].ops_per_s
    gains = {depth: m.ops_per_s / base for depth, m in runs.items()}
    for depth, m in runs.items():
        print(
            f"  depth {depth:>5,}: {m.ops_per_s:>9,.0f} SETs/s, {gains[depth]:4.1f}x depth 1 "
            f"({math.ceil(n / depth):,} pipelines, {m.spread()})"
        )
    if gains[100] < MIN_SPEEDUP:
        raise _fail(
            2,
            f"depth 100 ran only {gains[100]:.1f}x the SETs per second of depth 1 ({MIN_SPEEDUP:.0f}x "
            "needed); look for work per key outside the pipeline, such as a round trip or a new "
            "connection per command",
        )
    _solved(2, f"depth 100 ran {gains[100]:.1f}x the SETs per second of depth 1")
    return {"n": n, "ops_per_s": {d: m.ops_per_s for d, m in runs.items()}, "gain": gains, "gain_at_100": gains[100]}
