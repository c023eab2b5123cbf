"""Section 2: the auto-pipelining curve. Concurrent callers on one client, 1 to 256, at 0 and 1 ms RTT:
ops/s, p50 and p99 per operation, commands per server read, client CPU. GLIDE (Python) is measured here,
Lettuce's shared connection, a Jedis pool and GLIDE (Java) through chapter 7's examples, the Node and Go
clients through their examples (node.py, go.py).

The harness only: GLIDE (Python)'s callers are the notebook's cell tagged code:glide_callers (taught.py),
passed in by the notebook."""

from __future__ import annotations

import re
import statistics
import time

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from ... import observe, plots, stats
from ...measure import Measurement
from ...params import Size
from ...results import md_table, quantity, rate_figure, ratio_figure, with_interval
from ..ch07.common import LoopThread
from ..ch07.glide import glide_client
from ..ch07.mux import HOL_LIST, HOL_READERS
from .common import LANGUAGES, PREFIX, as_runs, each_rtt, language, slug
from .parameters import CALLERS, GO_SIDE_PROCS, POINT_MS, REPEAT_AUTO, RTTS_MS, VALUE_BYTES

KEY = PREFIX + "auto:small"  # the small key every caller GETs (the notebook's callers_get imports it)
OPS_UNIT = 1_000  # a time-bounded sample is kept as the seconds 1,000 operations took
# Chapter 7's Java examples INCR a counter (not GET): per RTT, INCRs per client and caller count, so
# that one caller at 1 ms ends in about a quarter of a second (the two JVMs per RTT took 88 s with 800).
JAVA_N = {0: Size(full=2_000, quick=1_000), 1: Size(full=200, quick=200)}
# Two JVMs per RTT cost about 15 s even at quick sizes: the quick run measures them on loopback only,
# the RTT whose Java figures the page prints.
JAVA_RTTS_MS = Size(full=RTTS_MS, quick=(0,))
HOL_MS_JAVA = Size(full=300, quick=200)  # Lettuce's head-of-line readers, per case
JAVA_MODES = {"lettuce": ("Lettuce", "shared connection"), "jedis_pool": ("Jedis", "pool of T connections")}
JAVA_CLIENTS = "jedis,lettuce"  # of ch07-mux's three: Redisson is chapter 7's


QUANTILES = {"p50": 0.5, "p99": 0.99}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def glide_point(
    loop: LoopThread, client, endpoint, callers: int, rtt_ms: float, seconds: float, repeat: int, callers_get
):
    """One point of GLIDE (Python)'s curve: `repeat` time-bounded samples after one warm-up, each a run of
    the notebook's `callers_get(client, callers, seconds)`, which returns every GET's latency."""
    loop.run(callers_get(client, callers, seconds / 2))  # warm-up, untimed
    samples, cpu, latencies, rounds = [], [], [], {"p50": [], "p99": []}
    counters = observe.Counters(endpoint)
    with counters.measure() as delta:
        for _ in range(repeat):
            cpu0, t0 = time.process_time(), time.perf_counter()
            lat = loop.run(callers_get(client, callers, seconds))
            wall, spent = time.perf_counter() - t0, time.process_time() - cpu0
            samples.append(wall / len(lat) * OPS_UNIT)
            cpu.append(spent / len(lat) * OPS_UNIT)
            latencies += lat
            for stat, q in QUANTILES.items():
                rounds[stat].append(percentile(lat, q) * 1e6)
    counters.close()
    v = delta.values
    return Measurement(
        f"GLIDE (Python) {callers} callers +{rtt_ms:g} ms",
        OPS_UNIT,
        samples,
        {
            "client": "GLIDE (Python)",
            "mode": "one client",
            "operation": "GET",
            "callers": callers,
            "rtt_ms": rtt_ms,
            "p50_us": percentile(latencies, 0.5) * 1e6,
            "p99_us": percentile(latencies, 0.99) * 1e6,
            "p50_us_rounds": rounds["p50"],
            "p99_us_rounds": rounds["p99"],
            "cmds_per_read": v["total_commands_processed"] / max(v["total_reads_processed"], 1),
            "client_cpu_s": cpu,
        },
    )


def measure_python_auto(lab, callers_get) -> list[Measurement]:
    """GLIDE (Python)'s curve: one client, each caller count, each RTT, the callers the notebook's."""
    seconds, repeat, out = lab.size(POINT_MS) / 1e3, lab.size(REPEAT_AUTO), []
    with lab.client() as r:
        r.set(KEY, "v" * VALUE_BYTES)
    with LoopThread() as loop:
        for rtt, link in each_rtt(lab):
            client = loop.run(glide_client(link.endpoint))
            try:
                for callers in CALLERS:
                    out.append(glide_point(loop, client, lab.endpoint, callers, rtt, seconds, repeat, callers_get))
            finally:
                loop.run(client.close())
    with lab.client() as r:
        r.delete(KEY)
    return out


def measure_java_auto(lab) -> dict:
    """Lettuce's shared connection and a Jedis pool (ch07-mux), GLIDE for Java (ch07-glide), at
    chapter 10's caller counts, per RTT: {rtt_ms: (mux run, glide run)}."""
    callers, repeat, out = ",".join(map(str, CALLERS)), lab.size(REPEAT_AUTO), {}
    for rtt, link in each_rtt(lab, lab.size(JAVA_RTTS_MS)):
        n = lab.size(JAVA_N[rtt])
        # Jedis and Lettuce only, and the head-of-line part (a list of 0 leaves it out) at 0 ms only: the
        # figures this chapter reads. Redisson and the rest took a quarter of the Java time.
        hol_list = HOL_LIST if rtt == 0 else 0
        mux = lab.java(
            "ch07-mux", n, repeat, 1, callers, hol_list, HOL_READERS, lab.size(HOL_MS_JAVA), JAVA_CLIENTS, link=link
        )
        # No cluster ("-"), and batches of a token size: only the shared-client part is read here.
        glide = lab.java("ch07-glide", 100, 1, 1, callers, "-", n, 1_000, link=link)
        out[rtt] = (mux, glide)
    return out


def java_points(java: dict) -> list[Measurement]:
    """The Java runs as points of the curve, shaped like the others (they INCR where the others GET)."""
    out = []
    for rtt, (mux, glide) in java.items():
        for run, modes in ((mux, JAVA_MODES), (glide, {"glide": ("GLIDE (Java)", "one client")})):
            ms = run.measurements()
            for prefix, (client, mode) in modes.items():
                for t in CALLERS:
                    m = ms.get(f"{prefix}_t{t}")
                    if m is None:
                        continue
                    m.label = f"{client} {t} callers +{rtt:g} ms"
                    m.params.update(
                        client=client,
                        mode=mode,
                        operation="INCR",
                        callers=t,
                        rtt_ms=rtt,
                        p50_us=None,
                        p99_us=None,
                        cmds_per_read=run.facts.get(f"{prefix}_t{t}_cmds_per_read"),
                    )
                    out.append(m)
    return out


# Head-of-line facts: "hol_[<client>_]<case>_<p50|p99>_us", the case alone, shared (the big reply on the
# same connection) or separate (on another one). Chapter 7's Lettuce example and the Go example (rueidis)
# name no client; the Node example names ioredis and noderedis. The Node and Go examples take the cases
# in turns and add each turn's figure ("..._us_rounds").
HOL_FACT = re.compile(
    r"^hol_(?:(?P<client>[a-z0-9]+)_)?(?P<case>alone|shared|separate)_(?P<stat>p50|p99)_us(?P<rounds>_rounds)?$"
)
HOL_CASES = {"alone": "alone", "shared": "big reply on the same connection", "separate": "big reply elsewhere"}
HOL_CLIENTS = {"ioredis": "ioredis (auto-pipelining on)", "noderedis": "node-redis"}


def hol_from_facts(facts: dict, client: str | None = None) -> dict:
    """{client: {case: {"p50": µs, "p99": µs, "p50_rounds": [µs per turn], "p99_rounds": [...]}}} from an
    example's facts; `client` for facts that name none. A case taken in turns gives the median of its
    turns, so that the figure and its interval (hol_summary) come from the same turns."""
    out: dict = {}
    for name, value in facts.items():
        m = HOL_FACT.match(name)
        if m and value is not None and (m["client"] or client):
            who = HOL_CLIENTS.get(m["client"], m["client"]) if m["client"] else client
            out.setdefault(who, {}).setdefault(m["case"], {})[m["stat"] + (m["rounds"] or "")] = value
    for cases in out.values():
        for case in cases.values():
            for stat in ("p50", "p99"):
                if case.get(f"{stat}_rounds"):
                    case[stat] = statistics.median(case[f"{stat}_rounds"])
    return out


def _facts(run) -> dict:
    runs = run if isinstance(run, list | tuple) else [run]
    return {k: v for one in runs if one is not None for k, v in one.facts.items()}


def hol_cases(java: dict, node=None, go=None) -> dict:
    """Every client's head-of-line case: Lettuce's from chapter 7's example at 0 ms, ioredis's and
    node-redis's from the Node example, rueidis's from the Go one (None where a toolchain is missing)."""
    out = hol_from_facts(java[0][0].facts, "Lettuce") if 0 in java else {}
    return out | hol_from_facts(_facts(node)) | hol_from_facts(_facts(go), "rueidis")


def hol_summary(hol: dict) -> dict:
    """`<client>_hol_<case>_p50` / `_p99`, and `<client>_hol_p99_ratio`: p99 behind the big reply on
    the same connection ÷ on another connection; with intervals where the example took turns (paired
    by turn for the ratio)."""
    out = {}
    for client, cases in hol.items():
        for case, figures in cases.items():
            for stat in ("p50", "p99"):
                if figures.get(stat) is not None:
                    out[f"{slug(client)}_hol_{case}_{stat}"] = quantity(
                        figures[stat],
                        "us",
                        f"{figures[stat]:,.0f} µs",
                        interval=stats.median_interval(figures.get(f"{stat}_rounds") or []),
                    )
        shared, separate = cases.get("shared", {}), cases.get("separate", {})
        if shared.get("p99") and separate.get("p99"):
            out[f"{slug(client)}_hol_p99_ratio"] = quantity(
                shared["p99"] / separate["p99"],
                "x",
                interval=stats.ratio_interval(
                    shared.get("p99_rounds") or [], separate.get("p99_rounds") or [], paired=True
                ),
            )
    return out


def auto_points(*runs) -> list[Measurement]:
    """Every point of the curve in one list, from lists of Measurements and the examples' runs."""
    out = []
    for run in runs:
        for m in as_runs(run):
            p = m.params
            if "callers" not in p:  # an example's other modes (head-of-line) are not points of the curve
                continue
            p["callers"], p["rtt_ms"] = int(p["callers"]), float(p["rtt_ms"])
            m.label = f"{p['client']} {p['mode']} {p['callers']} callers +{p['rtt_ms']:g} ms"
            out.append(m)
    return out


# A point's figures besides its rate: (the example's field, its unit, how it prints). Each is the median over the
# point's samples of the sample's own value, with its interval, where the example gives them per
# sample (`<field>_rounds`); otherwise the example's one value, with no interval.
POINT_STATS = {
    "p50": ("p50_us", "us", "{:,.0f} µs"),
    "p99": ("p99_us", "us", "{:,.0f} µs"),
    "cpr": ("cmds_per_read", "num", "{:.2f}"),
    "cpu": ("cpu_us_per_op", "us", "{:,.1f} µs"),
}
# Figures the summary gives beside those, but not the table (the Go example's): the server's CPU per GET,
# and the most connections the server listed for the client.
SUMMARY_STATS = {
    "srv_cpu": ("server_cpu_us_per_op", "us", "{:,.1f} µs"),
    "conns": ("connections", "count", "{:,.0f}"),
}


def _rounds(m: Measurement, stat: str) -> list[float] | None:
    field = (POINT_STATS | SUMMARY_STATS)[stat][0]
    if rounds := m.params.get(f"{field}_rounds"):
        return [float(v) for v in rounds]
    if stat == "cpu" and (cpu := m.params.get("client_cpu_s")):  # each sample's CPU for the point's operations
        return [c / m.ops * 1e6 for c in cpu]
    return None


def point_stat(m: Measurement, stat: str) -> tuple[float | None, tuple[float, float] | None]:
    """One of a point's POINT_STATS: (value, 95% interval or None); (None, None) where the example has none."""
    rounds = _rounds(m, stat)
    if rounds:
        return statistics.median(rounds), stats.median_interval(rounds)
    value = m.params.get((POINT_STATS | SUMMARY_STATS)[stat][0])
    return (float(value) if value is not None else None), None


def cpu_us_per_op(m: Measurement) -> float | None:
    return point_stat(m, "cpu")[0]


def series(points: list[Measurement]) -> dict:
    """{(client, mode): {(rtt_ms, callers): Measurement}}, clients in the chapter's language order."""
    out: dict = {}
    order = [c for clients in LANGUAGES.values() for c in clients]
    for m in sorted(points, key=lambda m: order.index(m.params["client"]) if m.params["client"] in order else 99):
        out.setdefault((m.params["client"], m.params["mode"]), {})[(m.params["rtt_ms"], m.params["callers"])] = m
    return out


def _us(value) -> str:
    return f"{value:,.0f} µs" if value is not None else "–"


def point_figures(m: Measurement) -> dict:
    """A point's figures: `ops` (its rate) and each of POINT_STATS and SUMMARY_STATS it has, each with
    its interval."""
    out = {"ops": rate_figure(m)}
    for stat, (_, unit, shown) in (POINT_STATS | SUMMARY_STATS).items():
        value, interval = point_stat(m, stat)
        if value is not None:
            out[stat] = quantity(value, unit, shown.format(value), interval)
            if interval:  # the bounds as precise as the figure
                out[stat]["interval_text"] = " – ".join(shown.format(bound) for bound in interval)
    return out


def auto_table(points: list[Measurement]) -> str:
    rows = []
    for (client, mode), curve in series(points).items():
        for (rtt, callers), m in sorted(curve.items()):
            figures = point_figures(m)
            rows.append(
                [
                    client if "(" in client else f"{client} ({language(client)})",
                    mode,
                    f"{rtt:g} ms",
                    callers,
                    *(with_interval(figures.get(stat)) for stat in ("ops", *POINT_STATS)),
                ]
            )
    return md_table(
        ["Client", "Mode", "RTT", "Callers", "ops/s (95% interval)", "p50", "p99", "Commands per server read",
         "Client CPU per op"],
        rows,
    )  # fmt: skip


# The comparisons the prose makes: (name, the auto-pipelined client-mode, what it is set against).
PAIRS = (
    ("ioredis", ("ioredis", "auto"), ("ioredis", "off")),
    ("rueidis", ("rueidis", "auto"), ("rueidis", "pool")),
    ("goredis", ("go-redis", "auto"), ("go-redis", "pool")),
    ("rueidis_vs_goredis", ("rueidis", "auto"), ("go-redis", "pool")),
    ("lettuce_vs_jedis", ("Lettuce", "shared connection"), ("Jedis", "pool of T connections")),
    # Go's side modes against the same client's default, measured in the same rounds.
    ("rueidis_procs", ("rueidis", f"auto, GOMAXPROCS {GO_SIDE_PROCS}"), ("rueidis", "auto")),
    ("valkey_go_procs", ("valkey-go", f"auto, GOMAXPROCS {GO_SIDE_PROCS}"), ("valkey-go", "auto")),
    ("rueidis_flush", ("rueidis", "MaxFlushDelay"), ("rueidis", "auto")),
)


def pair_figures(curves: dict, pairs=PAIRS) -> dict:
    """Per pair and RTT: `<pair>_gain_r<rtt>_c<callers>` (ops/s of the auto-pipelined one ÷ the other's,
    with its interval, paired where the example interleaved them) at every caller count, `_gain_r<rtt>`
    at the most callers, and `<pair>_p50_cost_r<rtt>` (p50 of the auto-pipelined ÷ the other's, one caller)."""
    out = {}
    for name, auto, plain in pairs:
        a, b = curves.get(auto, {}), curves.get(plain, {})
        for rtt, callers in sorted(a.keys() & b.keys()):
            fast, slow = a[(rtt, callers)], b[(rtt, callers)]
            gain = ratio_figure(slow, fast, fast.ops / slow.ops)
            out[f"{name}_gain_r{rtt:g}_c{callers}"] = gain
            if callers == max(CALLERS):
                out[f"{name}_gain_r{rtt:g}"] = gain
            p50a, p50b = point_stat(fast, "p50")[0], point_stat(slow, "p50")[0]
            if callers == min(CALLERS) and p50a and p50b:
                out[f"{name}_p50_cost_r{rtt:g}"] = quantity(p50a / p50b, "x")
    return out


def point_key(m: Measurement) -> str:
    p = m.params
    return f"{slug(p['client'])}_{slug(p['mode'])}_r{p['rtt_ms']:g}_c{p['callers']}"


def auto_summary(points: list[Measurement], pairs=PAIRS) -> dict:
    """Per point (`<client>_<mode>_r<rtt>_c<callers>`): `_ops` (with its interval), `_p50`, `_p99`,
    `_cpr` (commands per server read), `_cpu` (client CPU per operation); per client-mode and RTT,
    `_r<rtt>_gain`, ops/s at the most callers ÷ at one caller; and the pairs' figures (pair_figures)."""
    out = {
        "callers": quantity(0, "count", ", ".join(map(str, CALLERS))),
        "most_callers": quantity(max(CALLERS), "count"),
    }
    for (client, mode), curve in series(points).items():
        for m in curve.values():
            key = point_key(m)
            out |= {f"{key}_{stat}": figure for stat, figure in point_figures(m).items()}
        for rtt in {r for r, _ in curve}:
            one, most = curve.get((rtt, min(CALLERS))), curve.get((rtt, max(CALLERS)))
            if one and most:  # ops/s at the most callers over at one: one's time over most's, per operation
                out[f"{slug(client)}_{slug(mode)}_r{rtt:g}_gain"] = ratio_figure(one, most, most.ops / one.ops)
    return out | pair_figures(series(points), pairs)


def curve_axes(top, bottom, rtt: float, who: str) -> None:
    """One RTT's column of a curve: operations per second above, p99 on a log axis below (1, 2, 5 ms
    labelled), and `who` (callers, tasks) on a log axis along both."""
    top.set_title(f"+{rtt:g} ms RTT")
    top.set_ylabel("operations per second")
    bottom.set_ylabel("p99 latency, ms (log)")
    bottom.set_yscale("log")
    bottom.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    bottom.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    bottom.yaxis.set_minor_formatter(NullFormatter())  # labelled minor ticks overlap on a log axis
    bottom.set_xlabel(f"concurrent {who} on one client (log)")
    for ax in (top, bottom):
        ax.set_xscale("log", base=2)
        ax.set_xticks(CALLERS, [str(c) for c in CALLERS])


@plots.draws("ch10/auto")
def auto_plot(doc: dict) -> Figure:
    # The Go example's side modes (GOMAXPROCS 4, MaxFlushDelay) are read in the prose, not drawn.
    points = [m for m in doc["measurements"] if "callers" in m.params and not m.params.get("variant")]
    rtts = sorted({m.params["rtt_ms"] for m in points}) or [0]
    fig, axes = plt.subplots(2, len(rtts), figsize=(5.5 * len(rtts), 8), squeeze=False, sharex=True)
    curves = series(points)
    colors = plt.get_cmap("tab20").colors
    markers = {"Python": "o", "Java": "s", "Node.js": "^", "Go": "D", "Rust": "v"}  # a marker per language
    for col, rtt in enumerate(rtts):
        for i, ((client, mode), curve) in enumerate(curves.items()):
            xs = sorted(c for r, c in curve if r == rtt)
            if not xs:
                continue
            style = {
                "color": colors[i % len(colors)],
                "marker": markers.get(language(client), "o"),
                "label": f"{client}, {mode}",
            }
            axes[0][col].plot(xs, [curve[(rtt, c)].ops_per_s for c in xs], **style)
            p99 = [(c, point_stat(curve[(rtt, c)], "p99")[0]) for c in xs]
            p99 = [(c, v / 1e3) for c, v in p99 if v is not None]
            if p99:
                axes[1][col].plot(*zip(*p99), **style)
        curve_axes(axes[0][col], axes[1][col], rtt, "callers")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9)
    fig.suptitle("Auto-pipelining: throughput and p99 against concurrent callers")
    fig.tight_layout(rect=(0, 0.14, 1, 1))  # the legend's rows below the axes, clear of their labels
    return fig


AUTO_ALT = (
    "Two rows of line charts, one column per RTT: operations per second (top) and p99 latency (bottom) against "
    "1 to 256 concurrent callers on one client, one line per client and mode"
)


def hol_table(hol: dict) -> str:
    """{client: {case: {"p50": µs, "p99": µs, ...}}} (hol_from_facts): small GETs alone, behind a big reply on the same connection,
    and with the big reply on another connection."""
    rows = [
        [client if i == 0 else "", HOL_CASES.get(case, case), _us(figures.get("p50")), _us(figures.get("p99"))]
        for client, cases in hol.items()
        for i, (case, figures) in enumerate(cases.items())
    ]
    return md_table(["Client", "Small GETs", "p50", "p99"], rows)
