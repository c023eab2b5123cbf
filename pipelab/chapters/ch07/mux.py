"""Section 2 (Java: ch07-mux): a shared Lettuce connection, a Jedis pool and Redisson under threads; head-of-line blocking."""

from __future__ import annotations

from ...params import Size
from ...results import md_table, quantity, rate_figure

MUX_THREADS = [1, 8, 64]
MUX_N = Size(full=5_000, quick=2_000)  # INCRs per client and thread count
MUX_REPEAT = Size(full=3, quick=2)
HOL_LIST = 200_000  # elements in the list the slow LRANGE reads whole (about 3.4 MB of reply)
HOL_READERS = 8
HOL_MS = Size(full=1_500, quick=1_000)  # how long the readers GET in each case
MUX_CLIENTS = {
    "jedis_pool": "Jedis, a pool of T connections",
    "lettuce": "Lettuce, one shared connection",
    "redisson": "Redisson, sync RAtomicLong",
}
HOL_CASES = {
    "alone": "readers alone",
    "shared": "LRANGE on the readers' connection",
    "separate": "LRANGE on another connection",
}


def measure_mux(lab):
    return lab.java(
        "ch07-mux",
        lab.size(MUX_N),
        lab.size(MUX_REPEAT),
        1,
        ",".join(map(str, MUX_THREADS)),
        HOL_LIST,
        HOL_READERS,
        lab.size(HOL_MS),
    )


def mux_table(run) -> str:
    f, ms = run.facts, run.measurements()
    rows = [
        [
            label,
            t,
            f"{ms[f'{mode}_t{t}'].ops_per_s:,.0f}",
            f[f"{mode}_t{t}_connections"],
            f"{f[f'{mode}_t{t}_cmds_per_read']:.2f}",
        ]
        for mode, label in MUX_CLIENTS.items()
        for t in MUX_THREADS
    ]
    return md_table(["Client", "Threads", "INCRs/s", "Connections", "Commands per server read"], rows)


def hol_table(run) -> str:
    f = run.facts
    rows = [
        [
            label,
            f"{f[f'hol_{case}_p50_us']:,.0f} µs",
            f"{f[f'hol_{case}_p99_us']:,.0f} µs",
            f"{f[f'hol_{case}_max_us']:,.0f} µs",
            f"{f[f'hol_{case}_gets']:,}",
            f[f"hol_{case}_slow_commands"],
        ]
        for case, label in HOL_CASES.items()
    ]
    return md_table(["Readers' GETs (Lettuce, shared connection)", "p50", "p99", "max", "GETs", "LRANGEs"], rows)


def mux_summary(run) -> dict:
    f, ms = run.facts, run.measurements()
    out = {
        "threads": quantity(0, "count", ", ".join(map(str, MUX_THREADS))),
        "n": quantity(ms["lettuce_t1"].ops, "count"),
    }
    for mode in MUX_CLIENTS:
        for t in MUX_THREADS:
            out[f"{mode}_t{t}_ops"] = rate_figure(ms[f"{mode}_t{t}"])
            out[f"{mode}_t{t}_cmds_per_read"] = quantity(
                f[f"{mode}_t{t}_cmds_per_read"], "num", f"{f[f'{mode}_t{t}_cmds_per_read']:.2f}"
            )
            out[f"{mode}_t{t}_connections"] = quantity(f[f"{mode}_t{t}_connections"], "count")
    for case in HOL_CASES:
        for stat in ("p50", "p99", "max"):
            out[f"hol_{case}_{stat}"] = quantity(f[f"hol_{case}_{stat}_us"], "us")
        out[f"hol_{case}_gets"] = quantity(f[f"hol_{case}_gets"], "count")
    out["hol_reply_mb"] = quantity(f["lrange_reply_bytes"] / 1e6, "num", f"{f['lrange_reply_bytes'] / 1e6:.1f} MB")
    out["hol_lrange_server_ms"] = quantity(
        f["hol_separate_lrange_server_us"] / 1e3, "num", f"{f['hol_separate_lrange_server_us'] / 1e3:.1f} ms"
    )
    out["hol_shared_vs_separate_p99"] = quantity(f["hol_shared_p99_us"] / f["hol_separate_p99_us"], "x")
    out["hol_shared_vs_alone_p99"] = quantity(f["hol_shared_p99_us"] / f["hol_alone_p99_us"], "x")
    return out
