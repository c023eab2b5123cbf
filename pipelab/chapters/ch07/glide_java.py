"""Section 3, GLIDE for Java (ch07-glide): one client under 1, 8 and 64 threads beside the other Java clients."""

from __future__ import annotations

from ...results import md_table, median_figure, quantity, rate_figure
from .glide import GLIDE_CLUSTER_CALLS, GLIDE_CLUSTER_SETS, GLIDE_SADD_N
from .mux import MUX_N, MUX_THREADS

GLIDE_JAVA_TIMEOUT_N = 100_000  # the book's SADD workload, sent under GLIDE's default request timeout


def measure_glide_java(lab, cluster, repeat: int):
    node = cluster.nodes[0]
    return lab.java(
        "ch07-glide",
        lab.size(GLIDE_SADD_N),
        repeat,
        1,
        ",".join(map(str, MUX_THREADS)),
        f"{node.host}:{node.port}",
        lab.size(MUX_N),
        GLIDE_JAVA_TIMEOUT_N,
        GLIDE_CLUSTER_SETS,
        lab.size(GLIDE_CLUSTER_CALLS),
        cluster=node,
    )


def java_clients_table(mux, glide) -> str:
    """Jedis, Lettuce, Redisson and GLIDE, the same INCRs from the same thread counts."""
    rows = []
    for run, mode, label in (
        (mux, "jedis_pool", "Jedis, a pool of T connections"),
        (mux, "lettuce", "Lettuce, one shared connection"),
        (mux, "redisson", "Redisson, sync RAtomicLong"),
        (glide, "glide", "GLIDE, one client"),
    ):
        f, ms = run.facts, run.measurements()
        for t in MUX_THREADS:
            m = ms[f"{mode}_t{t}"]
            rows.append(
                [
                    label if t == MUX_THREADS[0] else "",
                    t,
                    f"{m.ops_per_s:,.0f} ({m.ops / m.max:,.0f}–{m.ops / m.min:,.0f})",
                    f[f"{mode}_t{t}_connections"],
                    f"{f[f'{mode}_t{t}_cmds_per_read']:.2f}",
                ]
            )
    return md_table(["Client (Java)", "Threads", "INCRs/s (min–max)", "Connections", "Commands per server read"], rows)


def glide_java_summary(run) -> dict:
    f, ms = run.facts, run.measurements()
    out = {
        "batch_ms": median_figure(ms["glide_batch"], "ms"),
        "atomic_ms": median_figure(ms["glide_atomic"], "ms"),
        "n": quantity(ms["glide_batch"].ops, "count"),
        "timeout_n": quantity(f["timeout_batch"], "count"),
        "timeout_outcome": quantity(0, "count", f["timeout_outcome"]),
        "timeout_s": quantity(f["timeout_seconds"], "s"),
        "timeout_ran": quantity(f["timeout_ran"], "count"),
        "default_timeout_ms": quantity(f["default_request_timeout_ms"], "ms"),
        "raise_true": quantity(0, "count", f["raise_true_outcome"]),
        "raise_true_counter": quantity(f["raise_true_counter"], "count"),
        "cluster_reads_max": quantity(max(f[f"cluster_master{i}_reads"] for i in range(f["cluster_masters"])), "num"),
        "cluster_connections": quantity(f["cluster_connections"], "count"),
        "cluster_atomic": quantity(0, "count", f["cluster_atomic_outcome"]),
        # From the jar the JVM loaded (its manifest or pom.properties), else the version the DEPS line pins.
        "glide_version": quantity(0, "count", run.clients.get("valkey-glide", "unknown")),
    }
    for t in MUX_THREADS:
        out[f"t{t}_ops"] = rate_figure(ms[f"glide_t{t}"])
        out[f"t{t}_cmds_per_read"] = quantity(
            f[f"glide_t{t}_cmds_per_read"], "num", f"{f[f'glide_t{t}_cmds_per_read']:.2f}"
        )
        out[f"t{t}_connections"] = quantity(f[f"glide_t{t}_connections"], "count")
    return out
