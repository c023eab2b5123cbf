"""Section 4: one command instead of many (MGET, MSET, variadic SADD and HSET against pipelines).

The harness only: each workload's two shapes are the notebook's cell tagged code:variadic, passed in by
the notebook as {workload: function} tables, one per shape."""

from __future__ import annotations

import statistics

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ... import observe, plots, stats
from ...measure import Measurement, settled_heap, timed
from ...params import Size
from ...results import md_table, median_figure, quantity, ratio_figure
from ...server import Endpoint
from ..ch01 import delete_keys
from .common import PREFIX

VARIADIC_SIZES = Size(full=[10, 100, 1_000, 10_000, 30_000], quick=[10, 1_000, 10_000])
VARIADIC_REPEAT = Size(full=9, quick=3)  # rounds; intervals need three or more
VALUE = "v" * 100


COUNTED = {"GET": ("get", "mget"), "SET": ("set", "mset"), "SADD": ("sadd",), "HSET": ("hset",)}  # commandstats
VARIADIC = list(COUNTED)


def measure_variadic(endpoint: Endpoint, sizes: list[int], repeat: int, pipelined: dict, one_command: dict) -> dict:
    """{(workload, "pipeline" | "one command", n): Measurement} of the notebook's functions, `pipelined` and
    `one_command` ({workload: function} for each of VARIADIC), with the server's µs per key (INFO
    commandstats: the commands' own execution) and the server's CPU per key (everything: reading,
    parsing, dispatching, replying) as params, one reading per sample. The two shapes take turns,
    sample by sample, so their ratios pair up by round. SADD and HSET start from an empty key each time."""
    out = {}
    counters, r = observe.Counters(endpoint), endpoint.client()
    for n in sizes:
        keys = [f"{PREFIX}var:{i}" for i in range(n)]
        for start in range(0, n, 10_000):
            one_command["SET"](r, keys[start : start + 10_000])  # GET reads these
        members = [f"m{i}" for i in range(n)]
        for workload in VARIADIC:
            shapes = {"pipeline": pipelined[workload], "one command": one_command[workload]}
            runs = {shape: _variadic_calls(r, fn, workload, keys, members) for shape, fn in shapes.items()}
            group = f"{workload}, {n:,} keys"
            ms = {
                shape: Measurement(f"{workload}, {shape}, {n:,} keys", n, paired_with=group, stopped=f"{repeat} rounds")
                for shape in shapes
            }
            with settled_heap():
                rounds(runs, ms, repeat, counters, r, workload, n)
            for shape, m in ms.items():
                m.params.update(
                    workload=workload,
                    shape=shape,
                    n=n,
                    server_us_per_key=statistics.median(m.params["server_us_per_key_samples"]),
                    server_cpu_us_per_key=statistics.median(m.params["server_cpu_us_per_key_samples"]),
                )
                out[(workload, shape, n)] = m
        r.unlink(*[f"{PREFIX}var:sadd", f"{PREFIX}var:hset"])
        delete_keys(r, keys)
    counters.close()
    r.close()
    return out


def rounds(runs: dict, ms: dict, repeat: int, counters, r, workload: str, n: int) -> None:
    """One untimed round, then `repeat` rounds of every shape in turn, each call with its own
    server readings."""
    for round_no in range(1 + repeat):  # the first round warms up (a fresh server touches its pages)
        for shape, (call, reset) in runs.items():
            if reset:
                reset()
            before = observe.command_stats(r)
            with counters.measure() as delta:
                elapsed = timed(call)
            after = observe.command_stats(r)
            m = ms[shape]
            if round_no == 0:
                m.warmup.append(elapsed)
                continue
            m.samples.append(elapsed)
            usec = sum(after.get(c, (0, 0))[1] - before.get(c, (0, 0))[1] for c in COUNTED[workload])
            m.params.setdefault("server_us_per_key_samples", []).append(usec / n)
            m.params.setdefault("server_cpu_us_per_key_samples", []).append(delta.server_cpu_s * 1e6 / n)


def _variadic_calls(r, fn, workload: str, keys: list[str], members: list[str]):
    """(call, reset) for one shape of a workload: SADD and HSET write one key, emptied before each call."""
    if workload in ("SADD", "HSET"):
        key = f"{PREFIX}var:{workload.lower()}"
        return (lambda: fn(r, key, members)), (lambda: r.unlink(key))
    return (lambda: fn(r, keys)), None


def server_figure(piped: Measurement, single: Measurement, param: str) -> dict:
    """Pipeline over one command of a per-key server reading, paired by round, with its interval."""
    a, b = piped.params[f"{param}_samples"], single.params[f"{param}_samples"]
    value = statistics.median(a) / statistics.median(b) if statistics.median(b) else None
    return quantity(value, "x", interval=stats.ratio_interval(a, b, paired=True) if value else None)


def server_us(m: Measurement, param: str) -> dict:
    samples = m.params[f"{param}_samples"]
    return quantity(statistics.median(samples), "us", f"{m.params[param]:.2f} µs", stats.median_interval(samples))


REPLY_KEYS = 100_000  # quick runs too: a smaller MGET is built and sent between two samples of CLIENT LIST
REPLY_CLIENT = "pipelab-ch07-replies"


def measure_reply_memory(endpoint: Endpoint, n: int, pipelined: dict, one_command: dict) -> dict[str, int]:
    """Peak CLIENT LIST tot-mem of n GETs of 100-byte values, as one MGET and as one pipeline (the
    notebook's GET functions)."""
    keys = [f"{PREFIX}reply:{i}" for i in range(n)]
    peaks = {}
    with endpoint.client() as r:
        for start in range(0, n, 10_000):
            one_command["SET"](r, keys[start : start + 10_000])
        r.client_setname(REPLY_CLIENT)
        for shape, fn in (("pipeline", pipelined["GET"]), ("one command", one_command["GET"])):
            best = 0
            for _ in range(3):  # each sampled peak is a lower bound of the true one
                with observe.reply_buffer_peak(endpoint, REPLY_CLIENT) as peak:
                    fn(r, keys)
                best = max(best, peak["tot_mem"])
            peaks[shape] = best
        delete_keys(r, keys)
    return peaks


def variadic_table(runs: dict, n: int) -> str:
    rows = []
    for workload in VARIADIC:
        piped, single = runs[(workload, "pipeline", n)], runs[(workload, "one command", n)]
        one = {"GET": "MGET", "SET": "MSET", "SADD": "SADD key m1 m2 …", "HSET": "HSET key f1 v1 …"}[workload]
        rows.append(
            [
                workload,
                one,
                f"{piped.per_op_us:.2f} µs",
                f"{single.per_op_us:.2f} µs",
                f"{piped.median / single.median:.1f}x",
                f"{piped.params['server_us_per_key']:.2f} / {single.params['server_us_per_key']:.2f} µs",
                f"{piped.params['server_cpu_us_per_key']:.2f} / {single.params['server_cpu_us_per_key']:.2f} µs",
            ]
        )
    return md_table(
        [
            "Workload",
            "One command",
            "Pipeline, per key",
            "One command, per key",
            "Pipeline ÷ one command",
            "commandstats per key, pipeline / one",
            "Server CPU per key, pipeline / one",
        ],
        rows,
    )


@plots.draws("ch07/variadic")
def variadic_plot(doc: dict) -> Figure:
    runs = {(m.params["workload"], m.params["shape"], m.params["n"]): m for m in doc["measurements"]}
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for workload in VARIADIC:
        sizes = sorted({n for w, _, n in runs if w == workload})
        ratios = [runs[(workload, "pipeline", n)].median / runs[(workload, "one command", n)].median for n in sizes]
        ax.plot(sizes, ratios, "o-", label=workload)
    ax.axhline(1, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("keys (log)")
    ax.set_ylabel("pipeline time ÷ one-command time")
    ax.set_title("A pipeline of single commands against one variadic command (redis-py)")
    ax.legend()
    return fig


VARIADIC_ALT = (
    "Line chart: for GET, SET, SADD and HSET, the time of a pipeline of single commands divided by the "
    "time of one variadic command, against the number of keys; above 1 the single command is faster"
)


def variadic_summary(runs: dict, reply: dict[str, int], reply_keys: int) -> dict:
    sizes = sorted({n for _, _, n in runs})
    n = 10_000 if 10_000 in sizes else sizes[-1]
    out = {"n": quantity(n, "count"), "biggest": quantity(sizes[-1], "count")}
    for workload in VARIADIC:
        piped, single = runs[(workload, "pipeline", n)], runs[(workload, "one command", n)]
        tag = workload.lower()
        out[f"{tag}_ratio"] = ratio_figure(piped, single)
        out[f"{tag}_server_ratio"] = server_figure(piped, single, "server_us_per_key")
        out[f"{tag}_cpu_ratio"] = server_figure(piped, single, "server_cpu_us_per_key")
        for shape, m in (("pipeline", piped), ("single", single)):
            for stat, param in (("cpu", "server_cpu_us_per_key"), ("stat", "server_us_per_key")):
                out[f"{tag}_{shape}_{stat}_us"] = server_us(m, param)
        out[f"{tag}_pipeline_us"] = median_figure(piped, "us", per_op=True)
        out[f"{tag}_single_us"] = median_figure(single, "us", per_op=True)
        out[f"{tag}_ratio_10"] = ratio_figure(
            runs[(workload, "pipeline", sizes[0])], runs[(workload, "one command", sizes[0])]
        )
    out["reply_pipeline"] = quantity(reply["pipeline"], "bytes")
    out["reply_mget"] = quantity(reply["one command"], "bytes")
    out["reply_keys"] = quantity(reply_keys, "count")
    out["reply_mget_vs_pipeline"] = quantity(reply["one command"] / max(reply["pipeline"], 1), "x")
    return out
