"""4. Why a busy loop is slow on loopback: latency and context switches per command, and where the
two processes run."""

from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np
import redis
from matplotlib.figure import Figure

from ... import host, observe, placement, plots, taught
from ...measure import Measurement, settled_heap, timed
from ...results import median_figure, quantity, ratio_figure
from .parameters import DEPTH_LAT


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
    out, ping_pipelined = [], taught.load("01-round-trip-time").ping_pipelined  # chapter 1's loop
    for _ in range(n // depth):
        start = time.perf_counter()
        ping_pipelined(r, depth)
        out.append((time.perf_counter() - start) / depth)
    return out


def measure_busy_loop(r: redis.Redis, server_pid: int | None, n: int) -> tuple[dict, dict]:
    """Seconds per command, one by one and in pipelines of DEPTH_LAT, with the voluntary context
    switches per command of this process and of the server (None on both sides, and one sentence
    printed, where the system cannot count them)."""
    latencies, switches = {}, {}
    if skipped := switches_missing():
        print(skipped)
    for mode, run in (
        ("one by one", lambda: ping_latencies(r, n)),
        (f"pipelined x{DEPTH_LAT}", lambda: pipelined_latencies(r, n, DEPTH_LAT)),
    ):
        if skipped:
            latencies[mode] = run()
            switches[mode] = {"client": None, "server": None}
            continue
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


def switches_missing() -> str | None:
    """Why context switches are not counted here (one sentence), or None."""
    reason = host.lacks(host.PROC)
    return f"Context switches not counted: {reason}." if reason else None


def switches_text(counts: dict) -> str:
    """One mode's voluntary switches per command as the notebook prints them."""
    if counts["client"] is None:
        return "not counted"
    return f"client {counts['client']:.2f}, server {counts['server']}"


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


ASLEEP = "separate CPUs, idle CPUs halting"


def measure_placement(lab, n: int, repeat: int) -> dict[str, Measurement] | str:
    """Seconds for `n` PINGs one by one with the server on a CPU of its own (the book's placement) and
    moved onto this kernel's CPU, taking turns round by round; put back afterwards. Where the lab
    keeps idle CPUs polling (pipelab.placement), a third way lets them halt, as the kernel would. A
    server the lab did not start is never moved: then the reason, instead."""
    if not (lab.owned and lab.server_pid and placement.enabled()):
        reason = placement.unpinnable() or "the lab did not start this server, or this machine has a single CPU"
        return f"{reason}: nothing was moved"
    shared, own = placement.client_cpus(), placement.server_cpus()
    ways = {"separate CPUs": own, "one CPU": {min(shared)}}
    if placement.keep_cpus_awake():
        ways[ASLEEP] = own
    r = lab.client()
    ms = {way: Measurement(f"{n:,} PINGs one by one, {way}", n, paired_with="placement") for way in ways}
    try:
        with settled_heap():
            for round_no in range(1 + repeat):  # the first round warms up
                for way, cpus in ways.items():
                    placement.pin(lab.server_pid, cpus)
                    if way == ASLEEP:
                        placement.let_cpus_sleep()
                    time.sleep(0.05)  # let the server settle where it was put
                    ping_latencies(r, 200)
                    elapsed = timed(lambda: [r.ping() for _ in range(n)])
                    placement.keep_cpus_awake()
                    (ms[way].warmup if round_no == 0 else ms[way].samples).append(elapsed)
    finally:
        placement.keep_cpus_awake()
        placement.pin(lab.server_pid, own)
        r.close()
    for way, m in ms.items():
        m.params.update(placement=way, server_cpus=sorted(ways[way]), client_cpus=sorted(shared))
        m.params["cpu_idle"] = "halting" if way == ASLEEP else placement.cpu_idle()
        m.stopped = f"{repeat} rounds"
    return ms


def placement_summary(ms: dict[str, Measurement]) -> dict:
    apart, together = ms["separate CPUs"], ms["one CPU"]
    return {
        "separate_us": median_figure(apart, "us", per_op=True),
        "together_us": median_figure(together, "us", per_op=True),
        "separate_vs_together": ratio_figure(apart, together),
        **(
            {
                "asleep_us": median_figure(ms[ASLEEP], "us", per_op=True),
                "asleep_vs_awake": ratio_figure(ms[ASLEEP], apart),
            }
            if ASLEEP in ms
            else {}
        ),
    }
