"""Section 2: a pipeline is not a transaction; another client's commands land between its commands.
A's pipeline is the notebook's cell tagged code:interleave, passed in by the notebook."""

from __future__ import annotations

import statistics

from ... import observe
from ...results import md_table, median_figure, quantity, ratio_figure
from .common import PREFIX
from .instruments import Probe


def foreign_entries_inside(entries: list[bytes]) -> int:
    """Another client's entries that landed between the pipeline's first and last entry ("A:…")."""
    positions = [i for i, e in enumerate(entries) if e.startswith(b"A:")]
    return sum(1 for e in entries[positions[0] : positions[-1]] if not e.startswith(b"A:"))


def interleave_trials(lab, n: int, trials: int, push_in_pipeline) -> dict:
    """B's entries that landed inside A's pipeline of n RPUSH (the notebook's `push_in_pipeline(r, key,
    n, transaction)`), per trial: {transaction: [count, ...]}."""
    r = lab.client()
    log = PREFIX + "log"
    inside = {False: [], True: []}

    def run(a):
        for transaction in (False, True):
            for _ in range(trials):
                r.unlink(log)
                with Probe(lab.endpoint, command=lambda c, i: c.rpush(log, f"B:{i}")):
                    push_in_pipeline(a, log, n, transaction)
                inside[transaction].append(foreign_entries_inside(r.lrange(log, 0, -1)))
        r.unlink(log)

    if lab.rtt_available:
        # On loopback A's pipeline arrives almost at once; over a real network it takes a while.
        # A bandwidth toxic makes A's bytes take about 100 ms, the way a slower link would.
        with lab.faults() as faults:
            a = faults.link.client()
            a.ping()
            faults.add(("a-link", "bandwidth", "upstream", {"rate": max(1, n * 48 // 1024 * 10)}))
            run(a)
            a.close()
    else:
        run(r)
    r.close()
    return inside


def measure_transaction_cost(lab, n: int, repeat: int, push_in_pipeline) -> tuple[list, dict, dict]:
    """A's pipeline and A's MULTI/EXEC timed alone, B's worst wait (median of runs) behind each,
    and what a 3-command transaction sent."""
    r = lab.client()
    log = PREFIX + "log"

    def reset():
        return r.unlink(log)

    # The two take turns, round by round, so their ratio pairs up.
    runs = lab.measure_interleaved(
        {
            f"{n:,} RPUSH, pipeline": lambda: push_in_pipeline(r, log, n, False),
            f"{n:,} RPUSH, MULTI/EXEC": lambda: push_in_pipeline(r, log, n, True),
        },
        ops=n,
        repeat=repeat,
        setup=reset,
    )
    worst = {}
    for transaction, m in zip((False, True), runs):
        m.params["transaction"] = transaction
        waits = []
        for _ in range(repeat):
            reset()
            with Probe(lab.endpoint) as probe:
                push_in_pipeline(r, log, n, transaction)
            waits.append(probe.worst_s)
        worst[transaction] = statistics.median(waits)
    reset()
    with observe.wire(lab.endpoint) as tx_wire:
        push_in_pipeline(r, log, 3, True)
    reset()
    r.close()
    return runs, worst, tx_wire


def interleave_table(inside: dict, runs: list, worst: dict, n: int) -> str:
    return md_table(
        [
            "mode",
            "trials with B inside A",
            "B entries inside A (per trial)",
            f"time for {n:,} RPUSH",
            "B's worst wait (median of runs)",
        ],
        [
            [name, sum(1 for x in inside[tx] if x), inside[tx], m.spread(), f"{worst[tx] * 1e3:.2f} ms"]
            for name, tx, m in (("pipeline", False, runs[0]), ("MULTI/EXEC", True, runs[1]))
        ],
    )


def interleave_summary(inside: dict, runs: list, worst: dict, n: int, trials: int) -> dict:
    plain, multi = runs
    return {
        "n": quantity(n, "count"),
        "trials": quantity(trials, "count"),
        "pipeline_trials_interleaved": quantity(sum(1 for x in inside[False] if x), "count"),
        "multi_trials_interleaved": quantity(sum(1 for x in inside[True] if x), "count"),
        "pipeline_inside_max": quantity(max(inside[False]), "count"),
        "multi_inside_max": quantity(max(inside[True]), "count"),
        "pipeline_ms": median_figure(plain, "ms"),
        "multi_ms": median_figure(multi, "ms"),
        "multi_cost": ratio_figure(multi, plain),
        "probe_pipeline_ms": quantity(worst[False] * 1e3, "ms"),
        "probe_multi_ms": quantity(worst[True] * 1e3, "ms"),
    }
