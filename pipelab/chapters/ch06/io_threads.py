"""Section 2: io-threads 1 and 2 against depth and clients, pinned, with CPU on each side and a marked model."""

from __future__ import annotations

import statistics
import time

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ... import host, observe, plots
from ...params import Size
from ...results import md_table, quantity, rate_figure, ratio_figure
from ...server import Endpoint
from .ceiling import SET_COMMAND, bench_once, interleaved, rate, requests_for, to_measurements
from .common import LABELS
from .servers import _FIRST_TWO, BENCH_CPUS, SERVER_CPUS, cpu_count, lineup, running

IO_GRID = Size(full=[(1, 1), (1, 50), (16, 50), (256, 50)], quick=[(1, 1), (1, 50), (256, 50)])
IO_SERVERS = ("redis", "valkey")
# (io-threads, the server's CPUs, the load generator's CPUs) on a 2-core machine
IO_MODES = {"io-threads 1": (1, SERVER_CPUS, BENCH_CPUS), "io-threads 2": (2, {*_FIRST_TWO}, BENCH_CPUS)}
# What decides when I/O threads run. Valkey 9.1 has io-threads-always-active (off by default) and no
# longer has events-per-io-thread (Valkey 8's rule); Redis 8 has neither. A setting a server lacks reads as None.
IO_SETTINGS = ("io-threads", "io-threads-always-active", "events-per-io-thread")


def io_settings(endpoint: Endpoint) -> dict:
    with endpoint.client() as r:
        return {name: r.config_get(name).get(name) for name in IO_SETTINGS}


def io_thread_cpu_s(pid: int) -> float | None:
    """CPU seconds the server's I/O threads have used so far: the threads both servers name io_thd_N
    (None where the system does not tell, io_cpu_missing)."""
    try:
        return host.threads_cpu_s(pid, "io_thd")
    except host.Unavailable:
        return None


def io_cpu_missing() -> str | None:
    """Why the I/O threads' CPU is not counted here (one sentence), or None."""
    reason = host.lacks(host.PROC)
    return f"The I/O threads' CPU is not counted: {reason}." if reason else None


def io_thread_active_s(r) -> float | None:
    """Valkey's count of the time its I/O threads found jobs in their queues (INFO's
    used_active_time_io_thread_N); None on a server that keeps no such count."""
    fields = [float(v) for k, v in r.info("cpu").items() if k.startswith("used_active_time_io_thread_")]
    return sum(fields) if fields else None


def measure_io_threads(grid: list[tuple[int, int]], n_max: int, repeat: int) -> dict:
    """{(server, mode, depth, clients): Measurement}: each server started with io-threads 1 (pinned to
    CPU 0, redis-benchmark on CPU 1) and with io-threads 2 (both CPUs, sharing CPU 1 with redis-benchmark).
    Each run also records its I/O threads' CPU, and on Valkey the part of it spent on jobs, as shares
    of the run's wall time; the params keep the settings that decide when I/O threads run."""
    names = {n: v for n, v in lineup(with_jemalloc_variant=False).items() if n in IO_SERVERS}
    if skipped := io_cpu_missing():
        print(skipped)
    out = {}
    for mode, (threads, server_cpus, bench_cpus) in IO_MODES.items():
        with running(names, args=["--io-threads", str(threads)], cpus=server_cpus) as servers:
            settings = {name: io_settings(s.endpoint) for name, s in servers.items()}
            infos = {name: s.endpoint.client() for name, s in servers.items()}

            def run_cell(c, requests):
                server, r = servers[c[0]], infos[c[0]]
                cpu0, active0, t0 = io_thread_cpu_s(server.proc.pid), io_thread_active_s(r), time.perf_counter()
                row = bench_once(server.endpoint, SET_COMMAND, c[1], c[2], requests, bench_cpus=bench_cpus)
                cpu1, active1, wall = io_thread_cpu_s(server.proc.pid), io_thread_active_s(r), time.perf_counter() - t0
                row["io_thread_cpu"] = None if cpu0 is None else (cpu1 - cpu0) / wall
                row["io_thread_active"] = None if active0 is None else (active1 - active0) / wall
                return row

            cells = [(name, depth, clients) for depth, clients in grid for name in servers]
            raw = interleaved(cells, run_cell, repeat, lambda c: requests_for(c[1], c[2], n_max))
            for r in infos.values():
                r.close()
            for (name, depth, clients), m in to_measurements(
                raw, lambda c: f"{LABELS[c[0]]}, {mode}, -P {c[1]} -c {c[2]}"
            ).items():
                m.params["settings"] = settings[name]
                out[(name, mode, depth, clients)] = m
    return out


def measure_io_threads_remote(endpoint: Endpoint, grid, n_max: int, repeat: int) -> dict:
    """REDIS_URL's server as it is configured (nothing is changed on it): the same grid; empty, with
    the reason printed, where redis-benchmark cannot run against it."""
    try:
        raw = interleaved(
            [("remote", d, c) for d, c in grid],
            lambda c, requests: bench_once(endpoint, SET_COMMAND, c[1], c[2], requests),
            repeat,
            lambda c: requests_for(c[1], c[2], n_max),
        )
    except observe.BenchmarkUnavailable as err:  # e.g. a password, which redis-benchmark would show to `ps`
        print(f"Skipped on REDIS_URL's server: {err}.")
        return {}
    return {
        ("remote", "as configured", d, c): m
        for (_, d, c), m in to_measurements(raw, lambda c: f"REDIS_URL, -P {c[1]} -c {c[2]}").items()
    }


def io_table(runs: dict) -> str:
    rows = []
    for (name, mode, depth, clients), m in sorted(
        runs.items(), key=lambda kv: (kv[0][0], kv[0][3], kv[0][2], kv[0][1])
    ):
        p = m.params
        rows.append(
            [
                LABELS.get(name, name),
                mode,
                depth,
                clients,
                rate(m),
                f"{statistics.median(p['server_cpu']):.0%}",
                f"{statistics.median(p['bench_cpu']):.0%}",
                f"{statistics.median(p['reads_per_cmd']):.3f}",
                f"{statistics.median(p['server_cpu_per_cmd_us']):.2f}",
                share(p.get("io_thread_cpu")),
                share(p.get("io_thread_active")),
            ]
        )
    return md_table(
        [
            "Server",
            "Mode",
            "Depth",
            "Clients",
            "SET rate",
            "Server CPU",
            "redis-benchmark CPU",
            "Reads per command",
            "Server CPU per command, µs",
            "I/O threads' CPU",
            "I/O threads with a job (Valkey's count)",
        ],
        rows,
    )


def share(values: list | None) -> str:
    """The median of per-round shares of wall time, or a dash where nothing was counted."""
    values = [v for v in values or [] if v is not None]
    return f"{statistics.median(values):.0%}" if values else "–"


def fit_costs(runs: dict, server: str, mode: str = "io-threads 1") -> tuple[float, float]:
    """Server CPU per command = a + b × reads per command, least squares over the single-threaded
    runs with many clients: a is what a command costs the main thread however it arrives, b what
    one read (with its write and wake-up) costs. One client is left out: there the server also
    pays for waking up with nothing else to do, once per command."""
    points = [
        (statistics.median(m.params["reads_per_cmd"]), statistics.median(m.params["server_cpu_per_cmd_us"]))
        for (name, md, _, clients), m in runs.items()
        if name == server and md == mode and clients > 1
    ]
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


MODEL_CORES = [1, 2, 4, 8, 16]
MODEL_SERVER = "redis"  # the server whose measured costs the plot extends to more cores


@plots.draws("ch06/io-threads")
def model_plot(doc: dict) -> Figure:
    # io_summary's fit
    def cost(per):
        return doc["summary"][f"{MODEL_SERVER}_cost_per_{per}_us"]["value"]

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


MODEL_ALT = (
    "Model, dashed lines: modelled commands per second against cores for depths 1, 16 and 256; depth 1 "
    "gains from I/O threads until it meets the main thread's ceiling, depth 256 starts at that ceiling"
)


def io_summary(runs: dict) -> dict:
    out = {}
    for name in IO_SERVERS:
        cells = {(d, c) for (n, _, d, c) in runs if n == name}
        for depth, clients in cells:
            one, two = (
                runs.get((name, "io-threads 1", depth, clients)),
                runs.get((name, "io-threads 2", depth, clients)),
            )
            if one and two:
                out[f"{name}_io2_vs_io1_p{depth}_c{clients}"] = ratio_figure(one, two, two.ops / one.ops)
                out[f"{name}_io1_p{depth}_c{clients}_ops"] = rate_figure(one)
                out[f"{name}_io1_p{depth}_c{clients}_server_cpu"] = quantity(
                    100 * statistics.median(one.params["server_cpu"]), "%"
                )
                out[f"{name}_io2_p{depth}_c{clients}_server_cpu"] = quantity(
                    100 * statistics.median(two.params["server_cpu"]), "%"
                )
                out[f"{name}_io2_p{depth}_c{clients}_bench_cpu"] = quantity(
                    100 * statistics.median(two.params["bench_cpu"]), "%"
                )
                for key in ("io_thread_cpu", "io_thread_active"):  # the I/O threads alone, with io-threads 2
                    values = [v for v in two.params.get(key, []) if v is not None]
                    if values:
                        out[f"{name}_io2_p{depth}_c{clients}_{key}"] = quantity(100 * statistics.median(values), "%")
        settings = next(
            (m.params.get("settings") for (n, md, _, _), m in runs.items() if n == name and md != "io-threads 1"), None
        )
        for setting in IO_SETTINGS[1:] if settings else ():  # as CONFIG GET read them on the io-threads 2 server
            value = settings.get(setting)
            out[f"{name}_{setting.replace('-', '_')}"] = quantity(
                0, "count", value if value is not None else "no such setting"
            )
        if any(n == name and md == "io-threads 1" for n, md, _, _ in runs):
            a, b = fit_costs(runs, name)
            out[f"{name}_cost_per_cmd_us"] = quantity(a, "us")
            out[f"{name}_cost_per_read_us"] = quantity(b, "us")
            out[f"{name}_model_8_cores_depth1"] = quantity(modelled_rate(a, b, 1.0, 8), "ops/s")
            out[f"{name}_model_8_cores_depth256"] = quantity(modelled_rate(a, b, 1 / 256, 8), "ops/s")
            out[f"{name}_model_1_core_depth256"] = quantity(modelled_rate(a, b, 1 / 256, 1), "ops/s")
    out["cpus"] = quantity(cpu_count(), "count")
    return out
