"""Section 1: the ceiling across servers, redis-benchmark -P x -c and Jedis, in one interleaved, pinned run."""

from __future__ import annotations

import statistics

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ... import observe, plots, taught
from ...measure import Measurement, adaptive
from ...params import Size
from ...results import md_table, quantity, rate_figure, ratio_figure
from ...server import EmbeddedRedis, Endpoint
from .common import KEY, LABELS
from .servers import BENCH_CPUS

GRID = Size(full=[(1, 1), (16, 1), (256, 1), (1, 50), (16, 50), (256, 50)], quick=[(1, 1), (256, 1), (256, 50)])
N_MAX = Size(full=500_000, quick=40_000)  # a third of a second per run at the deepest settings
JEDIS_N = Size(full=100_000, quick=4_000)  # SETs per Jedis run, depth 256, one connection
ROUND_TRIPS = 2_000  # per connection in the warm-up run, which sizes the timed ones
RUN_S = 0.3  # seconds a timed redis-benchmark run aims for (quick mode keeps the warm-up's size)
SET_COMMAND = ("SET", KEY, "xxx")


def requests_for(depth: int, clients: int, n_max: int) -> int:
    return max(depth * clients, min(n_max, ROUND_TRIPS * depth * min(clients, 4)))


def bench_once(
    endpoint: Endpoint,
    command,
    depth: int,
    clients: int,
    requests: int,
    *,
    bench_cpus: set[int] | None = None,
    keyspace: int | None = None,
) -> dict:
    """One redis-benchmark run, with the CPU each side used (the server's from INFO, all threads)."""
    counters = observe.Counters(endpoint)
    try:
        with counters.measure() as delta:
            run = observe.run_benchmark(
                endpoint, *command, depth=depth, requests=requests, clients=clients, cpus=bench_cpus, keyspace=keyspace
            )
    finally:
        counters.close()
    seconds = requests / run.rps
    return {
        "seconds": seconds,
        "server_cpu": delta.server_cpu_s / run.wall_s,
        "bench_cpu": run.cpu_s / run.wall_s,
        "reads_per_cmd": delta.values["total_reads_processed"] / max(delta.values["total_commands_processed"], 1),
        "server_cpu_per_cmd_us": delta.server_cpu_s / max(delta.values["total_commands_processed"], 1) * 1e6,
    }


def interleaved(cells: list[tuple], run_cell, repeat: int, requests_of) -> dict:
    """Run every cell once per round, `repeat` rounds after one warm-up round: a drift in the
    machine hits every cell alike, so ratios within one run hold even when absolute rates wander.
    The warm-up round runs requests_of(cell) requests; the timed ones as many as take RUN_S at the
    rate the warm-up saw (never fewer), so that every depth runs long enough to be a ceiling.
    `run_cell(cell, requests)` returns bench_once's row."""
    out: dict = {}
    requests = {cell: requests_of(cell) for cell in cells}
    for round_no in range(repeat + 1):
        for cell in cells:
            row = run_cell(cell, requests[cell])
            m = out.setdefault(cell, {"samples": [], "warmup": [], "rows": []})
            (m["samples"] if round_no else m["warmup"]).append(row["seconds"])
            if round_no:
                m["rows"].append(row)
                m["requests"] = requests[cell]
        if round_no == 0 and adaptive():
            requests = {cell: max(n, int(n * RUN_S / out[cell]["warmup"][0])) for cell, n in requests.items()}
    return out


def to_measurements(raw: dict, label_of) -> dict:
    return {
        cell: Measurement(
            label_of(cell),
            d["requests"],
            d["samples"],
            {"cell": list(cell), **{k: [r[k] for r in d["rows"]] for k in d["rows"][0]}},
            d["warmup"],
            paired_with="redis-benchmark rounds",  # every cell once per round: ratios pair by round
        )
        for cell, d in raw.items()
    }


def measure_ceiling(servers: dict[str, EmbeddedRedis], grid: list[tuple[int, int]], n_max: int, repeat: int) -> dict:
    """{(server, depth, clients): Measurement} of SETs from redis-benchmark (on BENCH_CPUS), every
    server in every round."""
    cells = [(name, depth, clients) for depth, clients in grid for name in servers]
    raw = interleaved(
        cells,
        lambda c, requests: bench_once(
            servers[c[0]].endpoint, SET_COMMAND, c[1], c[2], requests, bench_cpus=BENCH_CPUS
        ),
        repeat,
        lambda c: requests_for(c[1], c[2], n_max),
    )
    return to_measurements(raw, lambda c: f"{LABELS[c[0]]} -P {c[1]} -c {c[2]}")


def measure_ceiling_jedis(lab, servers: dict[str, EmbeddedRedis], depths: list[int], n: int, repeat: int) -> dict:
    """{(server, depth): Measurement} of Jedis pipelined SETs on one connection (chapter 2's ch02-depth)."""
    out = {}
    for name, server in servers.items():
        for m in (
            lab.java("ch02-depth", n, repeat, 1, ",".join(map(str, depths)), target=server.endpoint)
            .measurements()
            .values()
        ):
            m.label = f"Jedis on {LABELS[name]}, depth {m.params['depth']}"
            out[(name, m.params["depth"])] = m
    return out


def rate(m: Measurement) -> str:
    """Median rate with the spread of the repetitions."""
    lo, hi = m.ops / m.max, m.ops / m.min
    return (
        f"{m.ops_per_s / 1e6:.2f} M/s ({lo / 1e6:.2f}–{hi / 1e6:.2f})"
        if m.ops_per_s >= 1e5
        else f"{m.ops_per_s / 1e3:.0f} k/s ({lo / 1e3:.0f}–{hi / 1e3:.0f})"
    )


def ceiling_table(runs: dict, jedis: dict, facts: dict) -> str:
    grid = sorted({(d, c) for _, d, c in runs}, key=lambda dc: (dc[1], dc[0]))
    names = [n for n in LABELS if n in facts]
    jedis_depth = max((d for _, d in jedis), default=None)
    header = ["Server", "Build"] + [f"-P {d} -c {c}" for d, c in grid]
    header += [f"Jedis, depth {jedis_depth}"] if jedis else []
    rows = []
    for name in names:
        built = f"GCC {facts[name]['compiler']}" if facts[name].get("compiler") else "compiler not recorded"
        row = [f"{LABELS[name]} ({facts[name]['version']})", f"{facts[name]['allocator']}; {built}"]
        row += [rate(runs[(name, d, c)]) for d, c in grid]
        row += [rate(jedis[(name, jedis_depth)]) if (name, jedis_depth) in jedis else "–"] if jedis else []
        rows.append(row)
    return md_table(header, rows)


@plots.draws("ch06/ceiling")
def ceiling_plot(doc: dict) -> Figure:
    # redis-benchmark's runs carry their (server, depth, clients) cell; Jedis's do not.
    runs = {tuple(m.params["cell"]): m for m in doc["measurements"] if "cell" in m.params}
    facts = doc["params"]["servers"]
    grid = sorted({(d, c) for _, d, c in runs}, key=lambda dc: (dc[1], dc[0]))
    names = [n for n in LABELS if n in facts]
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        ms = [runs[(name, d, c)] for d, c in grid]
        xs = np.arange(len(grid)) + i * width
        ax.bar(
            xs,
            [m.ops_per_s for m in ms],
            width,
            label=LABELS[name],
            yerr=[[m.ops_per_s - m.ops / m.max for m in ms], [m.ops / m.min - m.ops_per_s for m in ms]],
            capsize=2,
        )
    ax.set_xticks(np.arange(len(grid)) + 0.4 - width / 2, [f"-P {d}\n-c {c}" for d, c in grid])
    ax.set_yscale("log")
    ax.set_ylabel("SETs per second (log), median and min–max")
    ax.set_title("redis-benchmark against each server, same run, same load generator")
    ax.legend(fontsize=8)
    return fig


CEILING_ALT = (
    "Grouped bar chart, log scale: SETs per second from redis-benchmark for each server at each "
    "pipeline depth and client count"
)


def ceiling_summary(runs: dict, jedis: dict, reply_mem: dict, facts: dict) -> dict:
    deepest = max((d, c) for _, d, c in runs)
    out = {"servers": quantity(len(facts), "count", ", ".join(f"{LABELS[n]} {facts[n]['version']}" for n in facts))}
    for name in facts:
        m, tag = runs[(name, *deepest)], name.replace("-", "_")  # summary keys are identifiers
        out[f"{tag}_version"] = quantity(0, "count", facts[name]["version"])
        out[f"{tag}_allocator"] = quantity(0, "count", facts[name]["allocator"])
        out[f"{tag}_io_threads"] = quantity(facts[name]["io_threads"], "count")  # CONFIG GET, the default
        out[f"{tag}_compiler"] = quantity(
            0, "count", f"GCC {facts[name]['compiler']}" if facts[name].get("compiler") else "not recorded"
        )
        out[f"{tag}_top_ops"] = rate_figure(m)
        out[f"{tag}_us_per_cmd"] = quantity(statistics.median(m.params["server_cpu_per_cmd_us"]), "us")
        out[f"{tag}_server_cpu_top"] = quantity(100 * statistics.median(m.params["server_cpu"]), "%")
        if name in reply_mem:
            out[f"{tag}_reply_peak"] = quantity(reply_mem[name], "bytes")
        if (name, 1, 1) in runs:
            out[f"{tag}_depth1_ops"] = rate_figure(runs[(name, 1, 1)])
        if (name, 1, 1) in runs and (name, 256, 1) in runs:
            out[f"{tag}_gain_c1"] = ratio_figure(
                runs[(name, 1, 1)], runs[(name, 256, 1)], runs[(name, 256, 1)].ops / runs[(name, 1, 1)].ops
            )
    if "redis" in facts:
        base = runs[("redis", *deepest)]
        for name in facts:
            out[f"{name.replace('-', '_')}_vs_redis"] = ratio_figure(
                base, runs[(name, *deepest)], runs[(name, *deepest)].ops / base.ops
            )
    if "valkey-jemalloc" in facts:
        libc, jemalloc = runs[("valkey", *deepest)], runs[("valkey-jemalloc", *deepest)]
        out["jemalloc_gain"] = ratio_figure(libc, jemalloc, jemalloc.ops / libc.ops)
    if "redis6" in reply_mem and "redis" in reply_mem:
        out["reply_peak_8_vs_6"] = quantity(reply_mem["redis"] / max(reply_mem["redis6"], 1), "x")
    out["top_cell"] = quantity(0, "count", f"-P {deepest[0]} -c {deepest[1]}")
    if jedis:
        depth = max(d for _, d in jedis)
        for name in facts:
            if (name, depth) in jedis:
                out[f"{name.replace('-', '_')}_jedis_ops"] = rate_figure(jedis[(name, depth)])
    return out


REPLY_N = Size(full=100_000, quick=10_000)
REPLY_CLIENT = "pipelab-ch06-replies"


def measure_reply_memory(servers: dict[str, EmbeddedRedis], n: int, repeat: int = 3) -> dict[str, int]:
    """Peak CLIENT LIST tot-mem while one pipeline of `n` GETs of 100 bytes runs, per server: the
    highest of `repeat` runs, since each sampled peak is a lower bound of the true one."""

    peaks: dict[str, int] = {}
    get_in_batches = taught.load("02-system-calls").get_in_batches  # chapter 2's GET loop, as its notebook runs it
    for _ in range(repeat):
        for name, server in servers.items():  # interleaved, like the rates
            with server.endpoint.client() as r:
                r.set(KEY, "v" * 100)
                r.client_setname(REPLY_CLIENT)
                with observe.reply_buffer_peak(server.endpoint, REPLY_CLIENT) as peak:
                    get_in_batches(r, n, n, KEY)
                peaks[name] = max(peaks.get(name, 0), peak["tot_mem"])
    return peaks
