"""2. Throughput against pipeline depth: redis-py, Jedis and redis-benchmark."""

from __future__ import annotations

import matplotlib.pyplot as plt
import redis
from matplotlib.figure import Figure

from ... import observe, plots
from ...measure import Measurement
from ...results import quantity, rate_figure, ratio_figure
from .parameters import BENCH_DEPTH, BENCH_ROUND_TRIPS, BENCH_SECONDS, JEDIS_BAR_PCT, PY_ROUND_TRIPS, SET_KEY


def measure_depth_python(lab, counters, r: redis.Redis, depths: list[int], n: int, repeat: int, set_in_batches):
    """redis-py's SET rate at each depth (the notebook's `set_in_batches`), with the client's and the
    server's CPU share during the run."""
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


def jedis_share_figure(jedis_runs: dict, bench_runs: dict) -> dict:
    """jedis_share_of_benchmark in %, with the interval of its two medians (the runs are not paired)."""
    if jedis_share_of_benchmark(jedis_runs, bench_runs) is None:
        return quantity(None, "%")
    jedis, bench = jedis_runs[BENCH_DEPTH], bench_runs[BENCH_DEPTH]
    share = ratio_figure(bench, jedis, 100 * jedis.ops / bench.ops)  # a ratio of rates from their times
    return quantity(share["value"], "%", interval=share.get("interval"))


def depth_summary(py_runs: dict, py_cpu: dict, jedis_runs: dict, bench_runs: dict, bench_cpu: dict) -> dict:
    peak = max(py_runs, key=lambda x: py_runs[x].ops_per_s)

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
        "jedis_share_of_benchmark_at_1000": jedis_share_figure(jedis_runs, bench_runs),
        "jedis_bar_pct": quantity(JEDIS_BAR_PCT, "%"),
        "depths": quantity(sorted(py_runs), "list", text=", ".join(f"{d:,}" for d in sorted(py_runs))),
    }
