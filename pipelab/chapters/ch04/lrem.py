"""Section 1: LREM against LTRIM in a pipeline, the same job at a different cost. The two ways are the
notebook's cell tagged code:lrem, passed in by the notebook."""

from __future__ import annotations

import math
import statistics

import matplotlib.pyplot as plt
import redis
from matplotlib.figure import Figure

from ... import observe, plots
from ...results import md_table, median_figure, quantity, ratio_figure
from .common import PREFIX, restore_oldest
from .instruments import Probe, last_slowlog_id, server_time, slowlog_entries, slowlog_threshold
from .parameters import SLOWLOG_US, P


def build_list(r: redis.Redis, key: str, length: int, chunk: int = 10_000) -> None:
    """item:0 is the newest (head), item:<length-1> the oldest (tail), as with LPUSH-ed events."""
    r.unlink(key)
    for start in range(0, length, chunk):
        r.rpush(key, *(f"item:{i}" for i in range(start, min(start + chunk, length))))


def measure_lrem(lab, lengths: list[int], repeat: int, drop_oldest_lrem, drop_oldest_ltrim) -> tuple[list, list, int]:
    """Per length and way (the notebook's `drop_oldest_lrem(r, key, length, count)` and
    `drop_oldest_ltrim(r, key, count)`): the timed pipeline of P commands, then one observed run
    (server µs per call, server CPU, slow log, a second client's wait). Returns (measurements, rows,
    threshold)."""
    r = lab.client()
    key = PREFIX + "list"
    counters = observe.Counters(lab.endpoint)
    rows, runs = [], []
    with slowlog_threshold(r, SLOWLOG_US, allowed=lab.owned) as threshold_us:
        for length in lengths:
            build_list(r, key, length)
            for way in ("lrem", "ltrim"):
                job = (
                    (lambda: drop_oldest_lrem(r, key, length, P))
                    if way == "lrem"
                    else (lambda: drop_oldest_ltrim(r, key, P))
                )

                def restore():
                    return restore_oldest(r, key, length, P)

                # The server's time per call over every timed and warm-up run (restore sends no LREM
                # or LTRIM): one run of 100 LTRIMs at 0.2 µs each is too short to read twice alike.
                with server_time(lab.endpoint, way) as timed_usec:
                    runs.append(
                        lab.measure(
                            f"{way.upper()} ×{P}, list of {length:,}",
                            job,
                            ops=P,
                            repeat=repeat,
                            setup=restore,
                            way=way,
                            length=length,
                        )
                    )
                restore()
                last_id = last_slowlog_id(r)
                with server_time(lab.endpoint, way) as usec, counters.measure() as delta, Probe(lab.endpoint) as probe:
                    job()
                slow = slowlog_entries(r, last_id, key)
                restore()
                rows.append(
                    {
                        "way": way,
                        "length": length,
                        "median_s": runs[-1].median,
                        "usec_per_call": timed_usec[way],
                        "observed_usec_per_call": usec[way],
                        "server_cpu_pct": 100 * delta.server_cpu_s / delta.wall_s,
                        "observed_wall_s": delta.wall_s,
                        "probe_worst_ms": probe.worst_s * 1e3,
                        "probe_median_ms": probe.median_s * 1e3,
                        "slowlog": len(slow),
                        "slowlog_max_us": max((e["duration"] for e in slow), default=0),
                    }
                )
        r.unlink(key)
    counters.close()
    r.close()
    return runs, rows, threshold_us


def lrem_table(rows: list, threshold_us: int) -> str:
    return md_table(
        [
            "way",
            "list length",
            f"pipeline of {P} (median)",
            "server µs per call",
            "server CPU",
            "second client's worst wait",
            f"slow log entries (> {threshold_us:,} µs)",
        ],
        [
            [
                x["way"].upper(),
                f"{x['length']:,}",
                f"{x['median_s'] * 1e3:,.2f} ms",
                f"{x['usec_per_call']:,.1f}",
                f"{x['server_cpu_pct']:.0f}%",
                f"{x['probe_worst_ms']:,.1f} ms",
                x["slowlog"],
            ]
            for x in rows
        ],
    )


@plots.draws("ch04/lrem")
def lrem_plot(doc: dict) -> Figure:
    rows, java_facts, p = doc["params"]["rows"], doc["params"]["java_facts"], doc["params"]["p"]
    lengths = sorted({x["length"] for x in rows})

    def series(way, key):
        return [x[key] for x in rows if x["way"] == way]

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for way, color in (("lrem", plots.COLORS["one by one"]), ("ltrim", plots.COLORS["pipelined"])):
        ax1.plot(lengths, series(way, "usec_per_call"), "o-", color=color, label=f"{way.upper()} (redis-py run)")
        ax1.plot(
            lengths,
            [java_facts.get(f"{way}_usec_per_call_{n}") for n in lengths],
            "x:",
            color=color,
            label=f"{way.upper()} (Jedis run)",
        )
        ax2.plot(lengths, series(way, "probe_worst_ms"), "o-", color=color, label=way.upper())
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("list length (elements)")
        ax.legend()
    ax1.set_ylabel("server µs per command (INFO commandstats)")
    ax1.set_title("Cost of one command against list length")
    ax2.set_ylabel("worst PING latency, ms")
    ax2.set_title(f"What a second client waits while {p} run")
    fig.tight_layout()
    return fig


LREM_ALT = (
    "Two log-log line charts against list length: server microseconds per LREM grow in proportion to the "
    "length while LTRIM stays flat; a second client's worst PING latency grows the same way under LREM"
)


def lrem_summary(runs: list, rows: list, threshold_us: int, java_facts: dict) -> dict:
    lengths = sorted({x["length"] for x in rows})
    first, last = lengths[0], lengths[-1]
    row = {(x["way"], x["length"]): x for x in rows}
    run = {(m.params["way"], m.params["length"]): m for m in runs}

    def at(way, length, key):
        return row[(way, length)][key]

    def growth(way):
        return at(way, last, "usec_per_call") / at(way, first, "usec_per_call")

    def exponent(way):
        # the slope of log(time) on log(length) over every length: 1 is O(N); two ends alone swing
        # far apart from run to run with the smallest list's few microseconds
        logs = [(math.log(n), math.log(at(way, n, "usec_per_call"))) for n in lengths]
        return statistics.linear_regression(*zip(*logs)).slope

    return {
        "p": quantity(P, "count"),
        "smallest": quantity(first, "count"),
        "largest": quantity(last, "count"),
        "lrem_usec_smallest": quantity(at("lrem", first, "usec_per_call"), "us"),
        "lrem_usec_largest": quantity(at("lrem", last, "usec_per_call"), "us"),
        "ltrim_usec_smallest": quantity(at("ltrim", first, "usec_per_call"), "us"),
        "ltrim_usec_largest": quantity(at("ltrim", last, "usec_per_call"), "us"),
        "lrem_growth": quantity(growth("lrem"), "x"),
        "ltrim_growth": quantity(growth("ltrim"), "x"),
        "length_growth": quantity(last / first, "x"),
        "lrem_exponent": quantity(exponent("lrem"), "num"),
        "lrem_pipeline_largest_ms": median_figure(run[("lrem", last)], "ms"),
        "ltrim_pipeline_largest_ms": median_figure(run[("ltrim", last)], "ms"),
        "lrem_over_ltrim_largest": ratio_figure(run[("lrem", last)], run[("ltrim", last)]),
        "lrem_cpu_largest": quantity(at("lrem", last, "server_cpu_pct"), "%"),
        "ltrim_cpu_largest": quantity(at("ltrim", last, "server_cpu_pct"), "%"),
        "probe_lrem_largest_ms": quantity(at("lrem", last, "probe_worst_ms"), "ms"),
        "probe_ltrim_largest_ms": quantity(at("ltrim", last, "probe_worst_ms"), "ms"),
        "probe_median_ms": quantity(statistics.median(x["probe_median_ms"] for x in rows), "ms"),
        "slowlog_lrem_largest": quantity(at("lrem", last, "slowlog"), "count"),
        "slowlog_ltrim_largest": quantity(at("ltrim", last, "slowlog"), "count"),
        "slowlog_lrem_max_us": quantity(at("lrem", last, "slowlog_max_us"), "us"),
        "slowlog_threshold_us": quantity(threshold_us, "us"),
        "java_lrem_usec_largest": quantity(java_facts.get(f"lrem_usec_per_call_{last}"), "us"),
        "java_ltrim_usec_largest": quantity(java_facts.get(f"ltrim_usec_per_call_{last}"), "us"),
    }
