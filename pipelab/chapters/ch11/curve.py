"""Section 2: redis-rs's multiplexed connection and ConnectionManager, and one fred client (fred 10
always pipelines; its switch is gone) beside fred's ExclusivePool, a client per caller, under 1 to 256 concurrent tasks at 0 and 1 ms RTT: chapter 10's curve (its
callers, RTTs, point length and tables), with chapter 10's own figures for a few clients drawn beside."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ... import plots
from ...jbang import JavaRun
from ...measure import Measurement
from ...params import Size
from ...paths import reference_dir, results_dir
from ...results import load, quantity
from ..ch10.auto import auto_summary, curve_axes, point_stat, series
from ..ch10.common import each_rtt, merge_rtts
from ..ch10.parameters import CALLERS, POINT_MS, REPEAT_AUTO, VALUE_BYTES
from .runs import run, rust_note

# The comparisons the prose makes, measured in the same rounds: (name, one client-mode, the other).
PAIRS = (
    ("fred_pool", ("fred", "one client"), ("fred", "ExclusivePool")),
    ("redisrs_manager", ("redis-rs", "ConnectionManager"), ("redis-rs", "multiplexed connection")),
    ("fred_vs_redisrs", ("fred", "one client"), ("redis-rs", "multiplexed connection")),
)
# Chapter 10's curves drawn beside the Rust ones (grey): its fastest and its plainest auto-pipeliners.
CH10_BESIDE = (("rueidis", "auto"), ("Lettuce", "shared connection"), ("ioredis", "auto"))


# TCP_NODELAY: the multiplexed connection and fred's one client each at its default and with it on,
# one task (a loop one by one) and the most tasks, at each RTT, in turns; more rounds than the curve's.
NODELAY_CALLERS = (1, max(CALLERS))
NODELAY_REPEAT = Size(full=7, quick=1)
NODELAY_PAIRS = (
    ("redisrs_nodelay", ("redis-rs", "multiplexed, TCP_NODELAY on"), ("redis-rs", "multiplexed connection")),
    ("fred_nodelay", ("fred", "one client, TCP_NODELAY on"), ("fred", "one client")),
)


def measure_rust_auto(lab, callers=CALLERS, repeat=REPEAT_AUTO, nodelay: str = "default") -> JavaRun | None:
    """The curve at each RTT the lab can inject, one run each (its modes suffixed _rtt<ms>); with
    nodelay="both", the TCP_NODELAY subjects at `callers` instead."""
    if rust_note(lab):  # before a proxy is opened for nothing
        return None
    runs = {}
    for rtt, link in each_rtt(lab):
        got = run(
            lab,
            "auto",
            link.endpoint,
            lab.size(POINT_MS),
            lab.size(repeat),
            1,
            ",".join(map(str, callers)),
            rtt,
            VALUE_BYTES,
            nodelay,
        )
        if got is None:
            return None
        runs[rtt] = got
    return merge_rtts(runs)


def measure_rust_nodelay(lab) -> JavaRun | None:
    """The TCP_NODELAY subjects at one task and the most, at each RTT."""
    return measure_rust_auto(lab, NODELAY_CALLERS, NODELAY_REPEAT, "both")


def nodelay_facts(run: JavaRun | None) -> dict:
    """Each subject's TCP_NODELAY as read back from its sockets: `<client>_<tag>_tcp_nodelay`, a text."""
    facts = {} if run is None else run.facts
    return {k: quantity(0, "count", str(v)) for k, v in facts.items() if k.endswith("_tcp_nodelay")}


def nodelay_summary(points: list[Measurement], run: JavaRun | None) -> dict:
    """auto_summary's figures for the TCP_NODELAY subjects, their pairs (`<pair>_gain_r<rtt>_c<callers>`:
    ops/s with it on ÷ at the default), and what each socket had."""
    return auto_summary(points, NODELAY_PAIRS) | nodelay_facts(run)


def chapter10_curve() -> dict:
    """Chapter 10's points for CH10_BESIDE as the site shows them (this machine's run, else the
    reference's), measured in another run than these: {"from": where they come from, "points": [{client, mode, rtt_ms, callers, ops, p99_us}]}."""
    # as the site picks a chapter's results (pipelab.book, which notebooks do not import)
    found = (load("ch10/auto", base) for base in (results_dir(), reference_dir()))
    doc = next((doc for doc in found if doc is not None), None)
    if doc is None:
        return {"from": "", "points": []}
    points = []
    for (client, mode), curve in series([m for m in doc["measurements"] if "callers" in m.params]).items():
        if (client, mode) not in CH10_BESIDE:
            continue
        for (rtt, callers), m in curve.items():
            p99 = point_stat(m, "p99")[0]
            points.append(
                {"client": client, "mode": mode, "rtt_ms": rtt, "callers": callers, "ops": m.ops_per_s, "p99_us": p99}
            )
    measured = (doc.get("environment") or {}).get("measured_at", "")[:10]
    return {
        "from": f"chapter 10's run of {measured}",
        "points": points,
    }


def curve_summary(points: list[Measurement], run: JavaRun | None = None) -> dict:
    return auto_summary(points, PAIRS) | nodelay_facts(run)


@plots.draws("ch11/curve")
def curve_plot(doc: dict) -> Figure:
    points = [m for m in doc["measurements"] if "callers" in m.params]
    beside = doc["params"].get("chapter10", {"points": [], "from": ""})
    rtts = sorted({m.params["rtt_ms"] for m in points}) or [0]
    fig, axes = plt.subplots(2, len(rtts), figsize=(5.5 * len(rtts), 8), squeeze=False, sharex=True)
    colors = plt.get_cmap("tab10").colors
    greys = ("0.35", "0.55", "0.75")
    for col, rtt in enumerate(rtts):
        top, bottom = axes[0][col], axes[1][col]
        for i, (client, mode) in enumerate(CH10_BESIDE):
            own = sorted(
                (p["callers"], p)
                for p in beside["points"]
                if (p["client"], p["mode"]) == (client, mode) and p["rtt_ms"] == rtt
            )
            if own:
                style = {"color": greys[i], "linestyle": "--", "label": f"{client}, {mode} ({beside['from']})"}
                top.plot([c for c, _ in own], [p["ops"] for _, p in own], **style)
                bottom.plot(
                    [c for c, p in own if p["p99_us"]], [p["p99_us"] / 1e3 for _, p in own if p["p99_us"]], **style
                )
        for i, ((client, mode), curve) in enumerate(series(points).items()):
            xs = sorted(c for r, c in curve if r == rtt)
            style = {"color": colors[i % len(colors)], "marker": "v", "label": f"{client}, {mode}"}
            top.plot(xs, [curve[(rtt, c)].ops_per_s for c in xs], **style)
            p99 = [(c, point_stat(curve[(rtt, c)], "p99")[0]) for c in xs]
            bottom.plot([c for c, v in p99 if v], [v / 1e3 for _, v in p99 if v], **style)
        curve_axes(top, bottom, rtt, "tasks")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=9)
    fig.suptitle("Rust's clients on chapter 10's curve: throughput and p99 against concurrent tasks")
    fig.tight_layout(rect=(0, 0.16, 1, 1))  # the legend's rows below the axes, clear of their labels
    return fig


CURVE_ALT = (
    "Two rows of line charts, one column per RTT: operations per second (top) and p99 latency (bottom) against 1 "
    "to 256 concurrent tasks on one client, one coloured line per Rust client and mode, and dashed grey lines "
    "for three of chapter 10's clients"
)
