"""Chapter 8, batches that hang: Lettuce commands never flushed, Jedis ClusterPipelines crossed on pools
of one connection, Redisson futures under skipResult(), each wait bounded by the example ch08-hangs,
and each fix measured the same way."""

from __future__ import annotations

from ...params import Size
from ...results import md_table, quantity

HANG_BOUND_S = 2  # how long the example waits on a hang before it gives up (it interrupts or closes)
LETTUCE_HANG_N = Size(full=500_000, quick=100_000)  # async INCRs issued with auto-flush off (Lettuce #2345: 500k)
SKIP_RESULT_N = Size(full=10_000, quick=2_000)  # INCRs in the Redisson batch

LETTUCE_CASES = {
    "unflushed_default": "auto-flush off, never flushed (default timeout)",
    "unflushed_timeout": "auto-flush off, never flushed, 1 s command timeout",
    "flush_per_batch": "flushCommands() per 1,000 (fix)",
}
JEDIS_CASES = {
    "default_wait": "maxTotal=1, default maxWait",
    "bounded_wait": "maxTotal=1, bounded maxWait",
    "sized_pool": "maxTotal=2, bounded maxWait (fix)",
}
REDISSON_CASES = {
    "skip_result": "skipResult()",
    "with_results": "without skipResult() (fix)",
}


def measure_hangs(lab, cluster, n: int, skip_n: int):
    """ch08-hangs on the lab's server and chapter 5's cluster (its first master as the seed)."""
    seed = cluster.nodes[0]
    return lab.java("ch08-hangs", n, 1, 0, HANG_BOUND_S * 1000, skip_n, f"{seed.host}:{seed.port}", cluster=seed)


def _ended(f: dict, prefix: str, waited: str) -> str:
    if f[f"{prefix}_hung"]:
        return f"still waiting at the bound ({f[waited]:,} ms)"
    return f"{f[waited]:,} ms"


def hangs_table(facts: dict) -> str:
    """One row per case: futures (or pipelines) done, failed and never done, how the wait ended, what ran."""
    rows = []
    for case, label in LETTUCE_CASES.items():
        p = f"lettuce_{case}"
        rows.append(
            [
                "Lettuce",
                label,
                f"{facts[p + '_futures_ok']:,} / {facts[p + '_futures_failed']:,} / {facts[p + '_futures_pending']:,}",
                _ended(facts, p, p + "_wait_ms"),
                f"{facts[p + '_applied']:,}",
            ]
        )
    if "jedis_skipped" not in facts:
        for case, label in JEDIS_CASES.items():
            p = f"jedis_{case}"
            rows.append(
                [
                    "Jedis, 2 crossed ClusterPipelines",
                    label,
                    f"{facts[p + '_ok']} / {facts[p + '_failed']} / {facts[p + '_hung']}",
                    f"still waiting at the bound ({facts[p + '_ms']:,} ms)"
                    if facts[p + "_hung"]
                    else f"{facts[p + '_ms']:,} ms",
                    f"{facts[p + '_keys_written']:,}",
                ]
            )
    for case, label in REDISSON_CASES.items():
        p = f"redisson_{case}"
        rows.append(
            [
                "Redisson RBatch",
                label,
                f"{facts[p + '_futures_ok']:,} / {facts[p + '_futures_failed']:,} / {facts[p + '_futures_pending']:,}",
                _ended(facts, p, p + "_wait_ms"),
                f"{facts[p + '_applied']:,}",
            ]
        )
    return md_table(["Client", "Case", "ok / failed / never done", "The wait ended", "Applied"], rows)


def hangs_summary(run, figures: dict) -> dict:
    """`figures` (the run's facts as figures: the package's facts_summary) with the bound in seconds
    and how far Lettuce's default command timeout lies beyond it."""
    f = run.facts
    out = figures | {"bound_s": quantity(HANG_BOUND_S, "s", f"{HANG_BOUND_S} s")}
    if "lettuce_default_timeout_s" in f:
        ratio = f["lettuce_default_timeout_s"] * 1000 / f["bound_ms"]
        out["lettuce_default_timeout_over_bound"] = quantity(ratio, "x", f"{ratio:g}x")
    return out
