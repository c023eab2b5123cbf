"""Chapter 2, system calls: what the server and the client do per command, and per batch."""

from __future__ import annotations

import os
import socket
import time

import matplotlib.pyplot as plt
import numpy as np
import redis
from matplotlib.figure import Figure

from .. import observe, placement, plots
from ..measure import Measurement, settled_heap, timed
from ..params import Size
from ..resp import connect, encode, read_bytes
from ..results import md_table, median_figure, quantity, rate_figure, ratio_figure
from ..server import PREFIX as LAB_PREFIX
from .ch01 import ping_pipelined
from .claims import Claim, Published


# --8<-- [start:depth]
def set_in_batches(r: redis.Redis, n: int, depth: int, key: str = LAB_PREFIX + "ch02:set") -> None:
    # n SETs sent `depth` at a time: one write and one wait per batch (depth 1 = a round trip each).
    pipe = r.pipeline(transaction=False)
    sent = 0
    while sent < n:
        batch = min(depth, n - sent)
        for _ in range(batch):
            pipe.set(key, "xxx")
        replies = pipe.execute()
        assert len(replies) == batch
        sent += batch


# --8<-- [end:depth]


# --8<-- [start:batches]
def get_in_batches(r: redis.Redis, n: int, batch: int, key: str) -> None:
    # n GETs of one value; the server must hold every reply of a batch until the client reads it.
    pipe = r.pipeline(transaction=False)
    done = 0
    while done < n:
        size = min(batch, n - done)
        for _ in range(size):
            pipe.get(key)
        pipe.execute()
        done += size


# --8<-- [end:batches]


def ping_latencies(r: redis.Redis, n: int) -> list[float]:
    """Seconds per PING, each timed on its own (one round trip each)."""
    out = []
    for _ in range(n):
        start = time.perf_counter()
        r.ping()
        out.append(time.perf_counter() - start)
    return out


def pipelined_latencies(r: redis.Redis, n: int, depth: int) -> list[float]:
    """Seconds per PING amortised over batches of `depth`: what each command costs when pipelined."""
    out = []
    for _ in range(n // depth):
        start = time.perf_counter()
        ping_pipelined(r, depth)
        out.append((time.perf_counter() - start) / depth)
    return out


# --8<-- [start:raw]
def pings_one_write(sock: socket.socket, n: int) -> None:
    sock.sendall(encode("PING") * n)  # every command in one buffer, one write
    read_bytes(sock, len(b"+PONG\r\n") * n)


def pings_many_writes(sock: socket.socket, n: int) -> None:
    one = encode("PING")
    for _ in range(n):
        sock.sendall(one)  # still no waiting, but one write per command
    read_bytes(sock, len(b"+PONG\r\n") * n)


def pings_round_trips(sock: socket.socket, n: int) -> None:
    one = encode("PING")
    for _ in range(n):
        sock.sendall(one)
        read_bytes(sock, len(b"+PONG\r\n"))  # wait for each reply: no pipelining


# --8<-- [end:raw]


# --- the chapter's parameters, declared once (the notebook passes them to the Java example) ---

REPEAT = Size(full=5, quick=2)
SET_KEY, VALUE_KEY = LAB_PREFIX + "ch02:set", LAB_PREFIX + "ch02:value"
SYS_DEPTHS = Size(full=[1, 2, 4, 10, 100, 1_000, 10_000], quick=[1, 10, 100, 1_000])
N_SYS = Size(full=20_000, quick=2_000)
N_STRACE = Size(full=5_000, quick=1_000)
STRACE_DEPTHS = (1, 1_000)
DEPTHS = Size(full=[2**i for i in range(14)], quick=[1, 4, 16, 64, 256])  # 1 ... 8,192
BENCH_DEPTH = 1_000  # where Jedis is held against redis-benchmark
N_PY = Size(full=20_000, quick=3_000)  # SETs per redis-py sample ...
PY_ROUND_TRIPS = 2_000  # ... but at most this many batches, so depth 1 stays short
N_JAVA = Size(full=50_000, quick=2_000)
N_BENCH = Size(full=100_000, quick=20_000)  # the probe run at each depth ...
BENCH_ROUND_TRIPS = 5_000  # ... at most this many round trips (depth 1 stays short)
# Each timed redis-benchmark run is sized from the probe's rate to last this long, at every depth:
# count-bound, a run at depth 1,000 lasted 30 ms, too short to be the server's ceiling.
BENCH_SECONDS = Size(full=0.3, quick=0.1)
SIZES = Size(full=[1_000, 10_000, 100_000, 300_000], quick=[1_000, 10_000, 100_000])
BATCH = 10_000
VALUE_BYTES = 100
BATCH_REPEAT = Size(full=3, quick=2)
N_LAT = Size(full=10_000, quick=1_000)
DEPTH_LAT = 100
N_RAW = Size(full=10_000, quick=1_000)
CLIENT_NAME = "pipelab-ch02-batches"  # so the sampler finds the connection in CLIENT LIST


def java_depths(depths: list[int]) -> list[int]:
    """The depths the Jedis example runs: the chapter's, and the one compared with redis-benchmark."""
    return sorted(set(depths) | {BENCH_DEPTH})


# --- system calls per command ------------------------------------------------------------------


def measure_syscalls(counters, r: redis.Redis, depths: list[int], n: int) -> dict:
    """Server reads and writes per command at each depth, from INFO counter deltas."""
    per_command = {}
    for depth in depths:
        sets = max(n, 2 * depth)
        with counters.measure() as delta:
            set_in_batches(r, sets, depth)
        per_command[depth] = {
            "reads": delta.per_command("total_reads_processed"),
            "writes": delta.per_command("total_writes_processed"),
            "n": sets,
        }
    return per_command


def measure_strace(r: redis.Redis, server_pid: int | None, n: int) -> tuple[dict, str | None]:
    """System calls per command of the server and of this process's main thread, at depth 1 and 1,000."""
    rows = {}
    try:
        if server_pid is None:
            raise observe.StraceUnavailable("the server is not a process on this machine")
        for depth in STRACE_DEPTHS:
            with (
                observe.strace_count(server_pid) as server,
                observe.strace_count(os.getpid(), all_threads=False, only="%network") as client,
            ):
                set_in_batches(r, n, depth)
            rows[depth] = {
                "server read": server.get("read", 0) / n,
                "server write": server.get("write", 0) / n,
                "server epoll_wait": server.get("epoll_wait", 0) / n,
                "client sendto": client.get("sendto", 0) / n,
                "client recvfrom": client.get("recvfrom", 0) / n,
            }
    except observe.StraceUnavailable as err:
        return {}, f"strace skipped: {err}"
    return rows, None


def strace_table(rows: dict) -> str:
    low, high = STRACE_DEPTHS
    return md_table(
        ["system calls per command", f"depth {low:,}", f"depth {high:,}"],
        [[name, f"{rows[low][name]:.3f}", f"{rows[high][name]:.4f}"] for name in rows[low]],
    )


@plots.draws("ch02/syscalls")
def syscalls_plot(doc: dict) -> Figure:
    per_command = {int(depth): row for depth, row in doc["params"]["per_command"].items()}  # JSON keys are text
    fig, ax = plt.subplots()
    depths = sorted(per_command)
    ax.loglog(depths, [per_command[d]["reads"] for d in depths], "o-", label="server read() per command")
    ax.loglog(depths, [per_command[d]["writes"] for d in depths], "s--", label="server write() per command")
    ax.loglog(depths, [1 / d for d in depths], ":", color=plots.COLORS["bound"], label="1 / depth")
    plots.depth_axis(ax)
    ax.set_ylabel("system calls per command (log)")
    ax.set_title("The server's reads and writes per command against pipeline depth")
    ax.legend()
    return fig


SYSCALLS_ALT = "Log-log chart: server reads and writes per command fall as 1/depth as the pipeline deepens"


def syscalls_summary(per_command: dict, strace_rows: dict) -> dict:
    def straced(depth, name):
        return strace_rows[depth][name] if strace_rows else None

    return {
        "reads_per_cmd_depth1": quantity(per_command[1]["reads"], "num"),
        "writes_per_cmd_depth1": quantity(per_command[1]["writes"], "num"),
        "reads_per_cmd_depth1000": quantity(per_command[1_000]["reads"], "num"),
        "writes_per_cmd_depth1000": quantity(per_command[1_000]["writes"], "num"),
        "commands_per_read_depth1000": quantity(1 / per_command[1_000]["reads"], "num"),
        "strace_client_sends_depth1": quantity(straced(1, "client sendto"), "num"),
        "strace_server_epoll_depth1": quantity(straced(1, "server epoll_wait"), "num"),
        "strace_server_epoll_depth1000": quantity(straced(1_000, "server epoll_wait"), "num"),
    }


# --- throughput against depth --------------------------------------------------------------------


def measure_depth_python(lab, counters, r: redis.Redis, depths: list[int], n: int, repeat: int):
    """redis-py's SET rate at each depth, with the client's and the server's CPU share during the run."""
    runs, cpu = {}, {}
    for depth in depths:
        sets = max(depth, min(n, PY_ROUND_TRIPS * depth))
        with counters.measure() as delta:
            runs[depth] = lab.measure(
                f"redis-py depth {depth}",
                lambda: set_in_batches(r, sets, depth),
                ops=sets,
                repeat=repeat,
                depth=depth,
                client="redis-py",
            )
        cpu[depth] = {"client": delta.client_cpu_s / delta.wall_s, "server": delta.server_cpu_s / delta.wall_s}
    return runs, cpu


def measure_depth_java(lab, depths: list[int], n: int, repeat: int) -> dict:
    """Jedis's SET rate at each depth (ch02-depth, given the chapter's depths)."""
    java = lab.java("ch02-depth", n, repeat, 1, ",".join(map(str, depths))).measurements()
    runs = {m.params["depth"]: m for m in java.values()}
    for depth, m in runs.items():
        m.label = f"Jedis depth {depth}"
    return dict(sorted(runs.items()))


def jvm_cpu_share(m) -> str:
    """The JVM's CPU beside a Jedis run; its clock ticks coarsely and counts JIT and GC threads,
    so only runs of 0.2 s or more say anything."""
    cpu = m.params.get("client_cpu_s")
    return f" | JVM CPU {sum(cpu) / sum(m.samples):.0%} of one core" if cpu and sum(m.samples) >= 0.2 else ""


def measure_depth_benchmark(lab, counters, depths: list[int], n: int, repeat: int):
    """redis-benchmark's SET rate at each depth (one client), and the server's CPU over its own timing.
    An untimed probe run gives the rate, from which every timed run is sized to last BENCH_SECONDS."""
    runs, cpu = {}, {}
    seconds = lab.size(BENCH_SECONDS)
    try:
        for depth in depths:
            probe = max(depth, min(n, BENCH_ROUND_TRIPS * depth))
            rate = observe.redis_benchmark(lab.endpoint, "SET", SET_KEY, "xxx", depth=depth, requests=probe)
            sets = max(probe, -(-int(rate * seconds) // depth) * depth)  # whole pipelines
            samples = []
            with counters.measure() as delta:
                for _ in range(repeat):
                    rps = observe.redis_benchmark(lab.endpoint, "SET", SET_KEY, "xxx", depth=depth, requests=sets)
                    samples.append(sets / rps)  # seconds, so the spread is computed like every other run
            runs[depth] = Measurement(f"redis-benchmark -P {depth}", sets, samples, {"depth": depth}, [probe / rate])
            cpu[depth] = delta.server_cpu_s / sum(samples)
    except observe.BenchmarkUnavailable as err:
        return runs, cpu, f"redis-benchmark skipped: {err}"
    return runs, cpu, None


def gain(runs: dict) -> float:
    """The best rate over the rate at the smallest depth."""
    return max(m.ops_per_s for m in runs.values()) / runs[min(runs)].ops_per_s


def depth_series(doc: dict) -> tuple[dict, dict, dict]:
    """The saved depth runs as {depth: Measurement} for redis-py, Jedis and redis-benchmark; every
    label ends in its depth ("Jedis depth 16", "redis-benchmark -P 16")."""

    def series(prefix: str) -> dict:
        return {int(m.label.rsplit(" ", 1)[1]): m for m in doc["measurements"] if m.label.startswith(prefix)}

    return series("redis-py "), series("Jedis "), series("redis-benchmark ")


@plots.draws("ch02/depth")
def depth_plot(doc: dict) -> Figure:
    py_runs, jedis_runs, bench_runs = depth_series(doc)
    py_cpu = {int(depth): cpu for depth, cpu in doc["params"]["redispy_cpu"].items()}
    fig, (ax, ax_cpu) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    for runs, name, style in (
        (py_runs, "redis-py", "o-"),
        (jedis_runs, "Jedis", "s-"),
        (bench_runs, "redis-benchmark", "^-"),
    ):
        if runs:
            d = sorted(runs)
            ax.loglog(
                d, [runs[x].ops_per_s for x in d], style, label=f"{name} (plateau {gain(runs):.0f}x its depth-1 rate)"
            )
    ax.axhline(10 * py_runs[1].ops_per_s, ls=":", color=plots.COLORS["bound"], label="10x redis-py's depth-1 rate")
    plots.depth_axis(ax)
    ax.set_ylabel("SET per second (log)")
    ax.set_title("Throughput against depth, one connection")
    ax.legend(fontsize=9)
    d = sorted(py_cpu)
    ax_cpu.semilogx(d, [100 * py_cpu[x]["client"] for x in d], "o-", label="redis-py process CPU")
    ax_cpu.semilogx(d, [100 * py_cpu[x]["server"] for x in d], "s-", label="redis-server CPU")
    plots.depth_axis(ax_cpu)
    ax_cpu.set_ylim(0, 110)
    ax_cpu.set_ylabel("% of one core during the run")
    ax_cpu.set_title("Who is busy (redis-py runs)")
    ax_cpu.legend(fontsize=9)
    return fig


DEPTH_ALT = (
    "Log-log chart: SET throughput against pipeline depth for redis-py, Jedis and redis-benchmark, "
    "rising then flattening; beside it, client and server CPU for the redis-py runs"
)


def jedis_share_of_benchmark(jedis_runs: dict, bench_runs: dict) -> float | None:
    """Jedis's rate at BENCH_DEPTH as a share of redis-benchmark's: how close a JVM client gets to C."""
    if BENCH_DEPTH in jedis_runs and BENCH_DEPTH in bench_runs:
        return jedis_runs[BENCH_DEPTH].ops_per_s / bench_runs[BENCH_DEPTH].ops_per_s
    return None


def depth_summary(py_runs: dict, py_cpu: dict, jedis_runs: dict, bench_runs: dict, bench_cpu: dict) -> dict:
    peak = max(py_runs, key=lambda x: py_runs[x].ops_per_s)
    share = jedis_share_of_benchmark(jedis_runs, bench_runs)

    def bench(value):
        return value if bench_runs else None

    return {
        "redispy_baseline_ops": rate_figure(py_runs[1]),
        "redispy_peak_ops": rate_figure(py_runs[peak]),
        "redispy_gain": quantity(gain(py_runs), "x"),
        "redispy_client_cpu_at_peak": quantity(100 * py_cpu[peak]["client"], "%"),
        "redispy_server_cpu_at_peak": quantity(100 * py_cpu[peak]["server"], "%"),
        "jedis_baseline_ops": rate_figure(jedis_runs[1]),
        "jedis_peak_ops": quantity(max(m.ops_per_s for m in jedis_runs.values()), "ops/s"),
        "jedis_gain": quantity(gain(jedis_runs), "x"),
        "benchmark_baseline_ops": quantity(bench(bench_runs and bench_runs[1].ops_per_s), "ops/s"),
        "benchmark_peak_ops": quantity(bench(bench_runs and max(m.ops_per_s for m in bench_runs.values())), "ops/s"),
        "benchmark_gain": quantity(bench(bench_runs and gain(bench_runs)), "x"),
        "benchmark_server_cpu_at_1000": quantity(bench(bench_cpu and 100 * bench_cpu[BENCH_DEPTH]), "%"),
        "jedis_ops_at_1000": quantity(
            jedis_runs[BENCH_DEPTH].ops_per_s if BENCH_DEPTH in jedis_runs else None, "ops/s"
        ),
        "benchmark_ops_at_1000": quantity(bench(bench_runs and bench_runs[BENCH_DEPTH].ops_per_s), "ops/s"),
        "jedis_share_of_benchmark_at_1000": quantity(100 * share if share else None, "%"),
        "depths": quantity(sorted(py_runs), "list", text=", ".join(f"{d:,}" for d in sorted(py_runs))),
    }


# --- reply memory: one pipeline against batches --------------------------------------------------


def measure_batches(lab, sizes: list[int], repeat: int) -> dict:
    """{(size, mode): (Measurement, peak buffers)} for one pipeline of `size` GETs and 10k batches."""
    with lab.client() as r:
        r.set(VALUE_KEY, "v" * VALUE_BYTES)
    big = lab.client()
    big.client_setname(CLIENT_NAME)
    rows = {}
    for size in sizes:
        for mode, batch in (("one pipeline", size), ("10k batches", BATCH)):
            with observe.reply_buffer_peak(lab.endpoint, CLIENT_NAME) as peak:
                m = lab.measure(
                    f"{size:,} GETs, {mode}",
                    lambda: get_in_batches(big, size, batch, VALUE_KEY),
                    ops=size,
                    repeat=repeat,
                    size=size,
                    mode=mode,
                )
            rows[(size, mode)] = (m, dict(peak))
    big.close()
    return rows


@plots.draws("ch02/batches")
def batches_plot(doc: dict) -> Figure:
    peaks = doc["params"]["peaks"]
    rows = {
        (m.params["size"], m.params["mode"]): (m, peaks[f"{m.params['size']}|{m.params['mode']}"])
        for m in doc["measurements"]
    }
    sizes = sorted({size for size, _ in rows})
    fig, (ax_mem, ax_t) = plt.subplots(1, 2, figsize=(12, 4.5))
    for mode, style in (("one pipeline", "o-"), ("10k batches", "s--")):
        ax_mem.loglog(sizes, [max(rows[(s, mode)][1]["tot_mem"], 1) for s in sizes], style, label=mode)
        ax_t.loglog(sizes, [rows[(s, mode)][0].median for s in sizes], style, label=mode)
    ax_mem.set_xlabel("commands in the job")
    ax_mem.set_ylabel("peak client buffers on the server, bytes (log)")
    ax_mem.set_title("Reply memory: CLIENT LIST tot-mem, peak")
    ax_t.set_xlabel("commands in the job")
    ax_t.set_ylabel("seconds for the whole job (log)")
    ax_t.set_title("Time for the whole job (median)")
    ax_mem.legend()
    ax_t.legend()
    return fig


BATCHES_ALT = (
    "Two log-log charts: peak reply memory grows with the size of one pipeline but stays flat in 10k "
    "batches, while the total time of both stays about the same"
)


def batches_summary(rows: dict) -> dict:
    largest = max(size for size, _ in rows)
    one, one_peak = rows[(largest, "one pipeline")]
    cut, cut_peak = rows[(largest, "10k batches")]
    return {
        "largest_job": quantity(largest, "count"),
        "peak_one_pipeline": quantity(one_peak["tot_mem"], "bytes"),
        "peak_batched": quantity(cut_peak["tot_mem"], "bytes"),
        "memory_ratio": quantity(one_peak["tot_mem"] / max(cut_peak["tot_mem"], 1), "x"),
        "time_one_pipeline_s": median_figure(one),
        "time_batched_s": median_figure(cut),
        "time_ratio": ratio_figure(one, cut),
        "peak_omem_100k_one": quantity(rows[(100_000, "one pipeline")][1]["omem"], "bytes"),
        "peak_omem_100k_batched": quantity(rows[(100_000, "10k batches")][1]["omem"], "bytes"),
    }


def batches_params(rows: dict) -> dict:
    return {
        "sizes": sorted({size for size, _ in rows}),
        "batch": BATCH,
        "value_bytes": VALUE_BYTES,
        "peaks": {f"{s}|{mode}": peak for (s, mode), (_, peak) in rows.items()},
    }


# --- a busy loop: latency and context switches ---------------------------------------------------


def measure_busy_loop(r: redis.Redis, server_pid: int | None, n: int) -> tuple[dict, dict]:
    """Seconds per command, one by one and in pipelines of DEPTH_LAT, with the voluntary context
    switches per command of this process and of the server."""
    latencies, switches = {}, {}
    for mode, run in (
        ("one by one", lambda: ping_latencies(r, n)),
        (f"pipelined x{DEPTH_LAT}", lambda: pipelined_latencies(r, n, DEPTH_LAT)),
    ):
        client0 = observe.context_switches()
        server0 = observe.context_switches(server_pid) if server_pid else None
        latencies[mode] = run()
        client1 = observe.context_switches()
        server1 = observe.context_switches(server_pid) if server_pid else None

        def voluntary(after, before):
            return (after["voluntary_ctxt_switches"] - before["voluntary_ctxt_switches"]) / n

        switches[mode] = {
            "client": voluntary(client1, client0),
            "server": voluntary(server1, server0) if server_pid else None,
        }
    return latencies, switches


def percentiles_us(values: list[float], points=(50, 90, 99, 99.9)) -> list[float]:
    return list(np.percentile(np.array(values) * 1e6, points))


def busy_loop_histogram(latencies: dict) -> dict:
    """Commands per latency bin (log bins from 0.1 µs to 10 ms) for each mode, what the plot draws;
    the results file keeps these rather than every latency."""
    edges = np.logspace(-1, 4, 80)
    commands = {}
    for (mode, values), per_sample in zip(latencies.items(), (1, DEPTH_LAT)):
        # A pipelined sample stands for DEPTH_LAT commands, so both histograms count commands.
        counts, _ = np.histogram(np.array(values) * 1e6, bins=edges, weights=np.full(len(values), per_sample))
        commands[mode] = [int(c) for c in counts]
    return {"edges_us": edges.tolist(), "commands": commands}


@plots.draws("ch02/busy-loop")
def busy_loop_plot(doc: dict) -> Figure:
    histogram = doc["params"]["histogram"]
    edges = np.array(histogram["edges_us"])
    fig, ax = plt.subplots()
    for (mode, counts), color in zip(
        histogram["commands"].items(), (plots.COLORS["one by one"], plots.COLORS["pipelined"])
    ):
        ax.hist(edges[:-1], bins=edges, weights=counts, alpha=0.7, color=color, label=mode)
    ax.set_xscale("log")
    ax.set_xlabel("microseconds per command (log)")
    ax.set_ylabel("commands")
    ax.set_title(f"Per-command latency: each PING on its own vs its share of a pipeline of {doc['params']['depth']}")
    ax.legend()
    return fig


BUSY_LOOP_ALT = (
    "Histogram, log scale: unpipelined PING latencies cluster around tens of microseconds, the "
    "per-command cost inside a pipeline of 100 around one microsecond"
)


def busy_loop_summary(latencies: dict, switches: dict) -> dict:
    (one, one_values), (piped, piped_values) = latencies.items()
    (p50_one, p99_one), (p50_piped, p99_piped) = (
        percentiles_us(one_values, (50, 99)),
        percentiles_us(piped_values, (50, 99)),
    )
    return {
        "p50_one_by_one_us": quantity(p50_one, "us"),
        "p99_one_by_one_us": quantity(p99_one, "us"),
        "p50_pipelined_us": quantity(p50_piped, "us"),
        "p99_pipelined_us": quantity(p99_piped, "us"),
        "ctx_client_one_by_one": quantity(switches[one]["client"], "num"),
        "ctx_server_one_by_one": quantity(switches[one]["server"], "num"),
        "ctx_client_pipelined": quantity(switches[piped]["client"], "num"),
        "ctx_server_pipelined": quantity(switches[piped]["server"], "num"),
    }


# --- where the two processes run -----------------------------------------------------------------

N_PLACE = Size(full=5_000, quick=500)  # PINGs one by one per sample
PLACE_REPEAT = Size(full=9, quick=3)


def measure_placement(lab, n: int, repeat: int) -> dict[str, Measurement] | str:
    """Seconds for `n` PINGs one by one with the server on a CPU of its own (the book's placement) and
    moved onto this kernel's CPU, taking turns round by round; put back afterwards. A server the lab
    did not start is never moved: then the reason, instead."""
    if not (lab.owned and lab.server_pid and placement.enabled()):
        return "the lab did not start this server, or this machine has a single CPU: nothing was moved"
    shared, own = placement.client_cpus(), placement.server_cpus()
    ways = {"separate CPUs": own, "one CPU": {min(shared)}}
    r = lab.client()
    ms = {way: Measurement(f"{n:,} PINGs one by one, {way}", n, paired_with="placement") for way in ways}
    try:
        with settled_heap():
            for round_no in range(1 + repeat):  # the first round warms up
                for way, cpus in ways.items():
                    placement.pin(lab.server_pid, cpus)
                    time.sleep(0.05)  # let the server settle where it was put
                    ping_latencies(r, 200)
                    elapsed = timed(lambda: [r.ping() for _ in range(n)])
                    (ms[way].warmup if round_no == 0 else ms[way].samples).append(elapsed)
    finally:
        placement.pin(lab.server_pid, own)
        r.close()
    for way, m in ms.items():
        m.params.update(placement=way, server_cpus=sorted(ways[way]), client_cpus=sorted(shared))
        m.stopped = f"{repeat} rounds"
    return ms


def placement_summary(ms: dict[str, Measurement]) -> dict:
    apart, together = ms["separate CPUs"], ms["one CPU"]
    return {
        "separate_us": median_figure(apart, "us", per_op=True),
        "together_us": median_figure(together, "us", per_op=True),
        "separate_vs_together": ratio_figure(apart, together),
    }


# --- raw RESP: one write, many writes, round trips -----------------------------------------------


def measure_raw(lab, counters, n: int, repeat: int) -> tuple[dict, dict]:
    runs, reads = {}, {}
    sock = connect(lab.endpoint.host, lab.endpoint.port)
    for name, fn in (
        ("one write", pings_one_write),
        ("many writes", pings_many_writes),
        ("round trips", pings_round_trips),
    ):
        with counters.measure() as delta:
            runs[name] = lab.measure(f"raw {name}", lambda: fn(sock, n), ops=n, repeat=repeat)
        reads[name] = delta.per_command("total_reads_processed")
    sock.close()
    return runs, reads


def raw_summary(runs: dict, reads: dict) -> dict:
    one = runs["one write"].median
    return {
        "raw_one_write_s": quantity(one, "s"),
        "raw_many_writes_s": median_figure(runs["many writes"]),
        "raw_round_trips_s": median_figure(runs["round trips"]),
        "raw_reads_one_write": quantity(reads["one write"], "num"),
        "raw_reads_many_writes": quantity(reads["many writes"], "num"),
        "raw_reads_round_trips": quantity(reads["round trips"], "num"),
        "raw_many_vs_one": quantity(runs["many writes"].median / one, "x"),
        "raw_trips_vs_one": quantity(runs["round trips"].median / one, "x"),
    }


# --- what the sources published, and the figures that answer them ---------------------------

PUBLISHED = {
    "plateau_gain": Published(
        10.0, "x", "redis.io: throughput grows almost linearly with pipeline length, up to 10x the baseline"
    ),
    "batch_time_ratio": Published(1.0, "x", "redis.io: in batches of about 10k commands the speed is nearly the same"),
    "reads_per_unpipelined_command": Published(
        1.0, "num", "redis.io: each unpipelined command costs a read() and a write()"
    ),
}
CLAIMS = [
    Claim(
        "Server read() calls per command, depth 1",
        "ch02/syscalls",
        "reads_per_cmd_depth1",
        "num",
        PUBLISHED["reads_per_unpipelined_command"],
    ),
    Claim(
        "Throughput at the plateau ÷ depth 1 (redis-py)", "ch02/depth", "redispy_gain", "x", PUBLISHED["plateau_gain"]
    ),
    Claim("Throughput at the plateau ÷ depth 1 (Jedis)", "ch02/depth", "jedis_gain", "x", PUBLISHED["plateau_gain"]),
    Claim(
        "Throughput at the plateau ÷ depth 1 (redis-benchmark)",
        "ch02/depth",
        "benchmark_gain",
        "x",
        PUBLISHED["plateau_gain"],
    ),
    Claim(
        "Time of one pipeline ÷ time in 10k batches (largest job)",
        "ch02/batches",
        "time_ratio",
        "x",
        PUBLISHED["batch_time_ratio"],
    ),
]
