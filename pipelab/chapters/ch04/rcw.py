"""Section 3: read, compute, write by round trips, two pipelines, EVAL and pipelined EVALSHA."""

from __future__ import annotations

import matplotlib.pyplot as plt
import redis
from matplotlib.figure import Figure

from ... import plots
from ...results import md_table, quantity
from .common import PREFIX
from .instruments import net_input_bytes, seed_numbers


# --8<-- [start:rcw]
def collatz(x: int) -> int:
    # The "compute" step: nothing Redis has a command for.
    return x // 2 if x % 2 == 0 else 3 * x + 1


COLLATZ_LUA = """
local x = tonumber(redis.call('GET', KEYS[1]))
if x % 2 == 0 then x = x / 2 else x = 3 * x + 1 end
redis.call('SET', KEYS[1], x)
return x
"""


def rcw_round_trips(r: redis.Redis, keys: list[str]) -> None:
    # Read, compute, write: two round trips per key, and the read must come back first.
    for key in keys:
        r.set(key, collatz(int(r.get(key))))


def rcw_two_pipelines(r: redis.Redis, keys: list[str]) -> None:
    # Every read in one pipeline, every write in another: two round trips in all, but a
    # write by someone else between the two is silently overwritten.
    reads = r.pipeline(transaction=False)
    for key in keys:
        reads.get(key)
    values = reads.execute()
    writes = r.pipeline(transaction=False)
    for key, value in zip(keys, values):
        writes.set(key, collatz(int(value)))
    writes.execute()


def rcw_eval_each(r: redis.Redis, keys: list[str]) -> None:
    # The computation moves into Redis: one round trip per key, the script's text every time.
    for key in keys:
        r.eval(COLLATZ_LUA, 1, key)


def rcw_evalsha_pipelined(r: redis.Redis, keys: list[str]) -> None:
    # SCRIPT LOAD once, then EVALSHA (40 hex digits instead of the text) for every key in one
    # pipeline: one round trip, and each key's read-compute-write is atomic.
    sha = r.script_load(COLLATZ_LUA)
    pipe = r.pipeline(transaction=False)
    for key in keys:
        pipe.evalsha(sha, 1, key)
    pipe.execute()


def rcw_eval_pipelined(r: redis.Redis, keys: list[str]) -> None:
    # One round trip too, but the script's text travels once per key.
    pipe = r.pipeline(transaction=False)
    for key in keys:
        pipe.eval(COLLATZ_LUA, 1, key)
    pipe.execute()


# --8<-- [end:rcw]

RCW_MODES = {
    "round trips (GET, then SET)": rcw_round_trips,
    "two pipelines (not atomic)": rcw_two_pipelines,
    "EVAL per key": rcw_eval_each,
    "EVAL, pipelined": rcw_eval_pipelined,
    "SCRIPT LOAD + EVALSHA, pipelined": rcw_evalsha_pipelined,
}


def measure_rcw(lab, sizes: dict, repeat: int) -> tuple[list, list]:
    """Every read-compute-write mode at each RTT (ms) of `sizes` {rtt: keys}: time and bytes sent per key;
    each mode must leave the same values."""
    r = lab.client()
    runs, rows = [], []
    for rtt, n in sizes.items():
        keys = [f"{PREFIX}num:{i}" for i in range(n)]
        with lab.rtt(rtt) as link:
            c = link.client()
            for mode, run in RCW_MODES.items():
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
