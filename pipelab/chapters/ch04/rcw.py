"""Section 3: read, compute, write by round trips, two pipelines, EVAL and pipelined EVALSHA. The five
ways and the computation are the notebook's cell tagged code:rcw, passed in by the notebook."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ... import plots
from ...results import md_table, quantity
from .common import PREFIX
from .instruments import net_input_bytes, seed_numbers

# The notebook's five ways, in the order it passes them (rcw_round_trips, rcw_two_pipelines,
# rcw_eval_each, rcw_eval_pipelined, rcw_evalsha_pipelined).
RCW_MODES = (
    "round trips (GET, then SET)",
    "two pipelines (not atomic)",
    "EVAL per key",
    "EVAL, pipelined",
    "SCRIPT LOAD + EVALSHA, pipelined",
)


def measure_rcw(lab, sizes: dict, repeat: int, ways: list, collatz) -> tuple[list, list]:
    """Every read-compute-write way (the notebook's five `way(r, keys)`, named by RCW_MODES) at each RTT
    (ms) of `sizes` {rtt: keys}: time and bytes sent per key; each must leave `collatz` of every value."""
    r = lab.client()
    runs, rows = [], []
    for rtt, n in sizes.items():
        keys = [f"{PREFIX}num:{i}" for i in range(n)]
        with lab.rtt(rtt) as link:
            c = link.client()
            for mode, run in zip(RCW_MODES, ways, strict=True):
                m = lab.measure(
                    f"{mode}, {rtt} ms",
                    lambda: run(c, keys),
                    ops=n,
                    repeat=repeat,
                    setup=lambda: seed_numbers(r, keys),
                    mode=mode,
                    rtt_ms=rtt,
                )
                seed_numbers(r, keys)
                before = net_input_bytes(r)
                run(c, keys)
                sent = net_input_bytes(r) - before
                assert r.mget(keys) == [str(collatz(1000 + i)).encode() for i in range(n)], mode  # same result
                runs.append(m)
                rows.append(
                    {
                        "mode": mode,
                        "rtt_ms": rtt,
                        "n": n,
                        "median_s": m.median,
                        "us_per_key": m.per_op_us,
                        "bytes_per_key": sent / n,
                    }
                )
            c.close()
        r.unlink(*keys)
    r.close()
    return runs, rows


def rcw_table(rows: list) -> str:
    return md_table(
        ["mode", "RTT", "keys", "time (median)", "µs per key", "bytes sent per key"],
        [
            [
                x["mode"],
                f"{x['rtt_ms']} ms",
                f"{x['n']:,}",
                f"{x['median_s'] * 1e3:,.1f} ms",
                f"{x['us_per_key']:,.1f}",
                f"{x['bytes_per_key']:.0f}",
            ]
            for x in rows
        ],
    )


@plots.draws("ch04/rcw")
def rcw_plot(doc: dict) -> Figure:
    rows = doc["params"]["rows"]
    rtts = sorted({x["rtt_ms"] for x in rows})
    fig, axes = plt.subplots(1, len(rtts), figsize=(12, 4.5), squeeze=False)
    for ax, rtt in zip(axes[0], rtts):
        sel = [x for x in rows if x["rtt_ms"] == rtt]
        colors = [
            plots.COLORS["one by one"] if "per key" in x["mode"] or "round" in x["mode"] else plots.COLORS["pipelined"]
            for x in sel
        ]
        plots.per_op_bars(
            ax,
            [x["mode"] for x in sel],
            [x["us_per_key"] for x in sel],
            colors,
            xlabel="µs per key (median, log scale)",
            title=("loopback" if rtt == 0 else f"{rtt} ms injected RTT") + f", {sel[0]['n']:,} keys",
        )
    fig.tight_layout()
    return fig


RCW_ALT = (
    "Horizontal bar charts, log scale: microseconds per key for five ways to read, compute and write; "
    "the two round-trip modes are slowest, the pipelined script fastest"
)


def rcw_summary(rows: list) -> dict:
    def rcw(mode, rtt, key="us_per_key"):
        hit = [x[key] for x in rows if x["mode"] == mode and x["rtt_ms"] == rtt]
        return hit[0] if hit else None

    def speed(a, b, rtt):
        return rcw(a, rtt) / rcw(b, rtt) if rcw(a, rtt) and rcw(b, rtt) else None

    rt, two, each, evalp, sha = RCW_MODES
    return {
        "round_trips_us": quantity(rcw(rt, 0), "us"),
        "evalsha_us": quantity(rcw(sha, 0), "us"),
        "two_pipelines_us": quantity(rcw(two, 0), "us"),
        "eval_each_us": quantity(rcw(each, 0), "us"),
        "evalsha_speedup": quantity(speed(rt, sha, 0), "x"),
        "round_trips_us_rtt": quantity(rcw(rt, 1), "us"),
        "evalsha_us_rtt": quantity(rcw(sha, 1), "us"),
        "eval_each_us_rtt": quantity(rcw(each, 1), "us"),
        "evalsha_speedup_rtt": quantity(speed(rt, sha, 1), "x"),
        "eval_bytes": quantity(rcw(evalp, 0, "bytes_per_key"), "num"),
        "evalsha_bytes": quantity(rcw(sha, 0, "bytes_per_key"), "num"),
        "round_trip_bytes": quantity(rcw(rt, 0, "bytes_per_key"), "num"),
    }
