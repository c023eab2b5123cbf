"""Chapter 3, client internals: what each client's pipelining modes send.

The harness only: redis-py's modes are chapter 1's SADD loops (taken from its notebook) and this
chapter's notebook cell tagged code:redispy_modes (the transaction, the pure-Python parser), passed in
by the notebook; the Java clients' modes are the ch03 examples."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from .. import observe, plots, taught
from ..params import Size
from ..results import md_table, measurements_frame, median_figure, quantity, ratio_figure, summarize
from ..server import PREFIX as LAB_PREFIX
from . import ch01
from .claims import Claim, Published, derived

# --- the chapter's parameters, declared once (the notebook passes them to the Java examples) ---

# Per-SADD times are the claims, so 10,000 SADDs carry them (a one-by-one run still lasts half a
# second); over 1 ms of RTT a one-by-one run of 1,000 lasts more than a second.
N = Size(full=10_000, quick=1_000)
REPEAT = Size(full=3, quick=2)
N_RTT = Size(full=1_000, quick=300)
REPEAT_RTT = Size(full=3, quick=1)
RTT_MS = 1
# JMH: warm-up iterations, measured iterations, seconds each, and thread counts per RTT: the claims
# and the prose read 10 and 50 threads on loopback and 50 at 1 ms (each run also pays about 3 s to
# start its fork).
JMH_ITERATIONS, JMH_SECONDS = Size(full=3, quick=1), 1
# A cold second reads low, in a quick run too: without a warm-up, a quick run on a slowed host read
# 0.92 ops/ms for Lettuce at 1 ms, under the bound of one command in flight. A fork per run gives
# each model a fresh JIT and heap, at about 3 s a run; a quick run keeps all in one JVM.
JMH_WARMUPS = Size(full=1, quick=1)
JMH_FORKS = Size(full=1, quick=0)
JMH_THREADS = {0: [10, 50], RTT_MS: [50]}
JAVA_CLIENTS = {
    "Jedis": "ch03-jedis",
    "Lettuce": "ch03-lettuce",
    "Spring Data Redis": "ch03-spring",
    "Redisson": "ch03-redisson",
}
# Commands the examples use to reset and check their keys between repetitions, not the mode's own work.
HOUSEKEEPING = {
    "unlink",
    "del",
    "exists",
    "scard",
    "sismember",
    "smembers",
    "scan",
    "ping",
    "hello",
    "client|setinfo",
    "client|setname",
    "client|id",
    "select",
}
WIRE_SUMMARY = {
    ("Jedis", "transaction"),
    ("Redisson", "rbatch_in_memory_atomic"),
    ("Redisson", "rbatch_skip_result"),
    ("Redisson", "rbatch_redis_write_atomic"),
}


# --- the SADD job in every client's modes ---------------------------------------------------------


def redispy_modes(lab, link, n: int, repeat: int, sadd_transaction, pure_python_client) -> tuple[dict, dict]:
    """redis-py's modes over `link`: {("redis-py", mode): Measurement} and the commands each sent. The
    notebook passes its `sadd_transaction(r, keys)` and `pure_python_client(endpoint)`."""
    r = link.client()
    pure = pure_python_client(link.endpoint)
    loops = taught.load("01-round-trip-time")  # chapter 1's SADD loops, as its notebook runs them
    keys = loops.sadd_keys(n, prefix=LAB_PREFIX + "ch03:py:")

    def reset():
        return ch01.delete_keys(r, keys)

    modes = {
        "one_by_one": lambda: loops.sadd_one_by_one(r, keys),
        "pipeline": lambda: loops.sadd_pipelined(r, keys),
        "transaction": lambda: sadd_transaction(r, keys),
        "pipeline_pure_python_parser": lambda: loops.sadd_pipelined(pure, keys),
    }
    wire = {}
    for mode, run in modes.items():  # what one call of each sends, counted on an untimed call
        reset()
        with observe.wire(lab.endpoint) as calls:
            run()
        wire[("redis-py", mode)] = calls
    # The four take turns, round by round, so their ratios pair up (the parsers' above all).
    measured = lab.measure_interleaved(
        {f"redis-py {mode}": run for mode, run in modes.items()},
        ops=n,
        repeat=repeat,
        setup=reset,
        client="redis-py",
        rtt_ms=link.rtt_ms,
    )
    runs = {}
    for mode, m in zip(modes, measured):
        m.params["mode"] = mode
        runs[("redis-py", mode)] = m
    reset()
    r.close()
    pure.close()
    return runs, wire


def java_modes(lab, link, n: int, repeat: int) -> tuple[dict, dict]:
    """Every Java client's modes over `link`: {(client, mode): Measurement} and what each sent."""
    runs, wire = {}, {}
    for client, alias in JAVA_CLIENTS.items():
        run = lab.java(alias, n, repeat, link=link)
        for mode, m in run.measurements().items():
            m.label = f"{client} {mode}"
            m.params.update(client=client, mode=mode, rtt_ms=link.rtt_ms)
            runs[(client, mode)] = m
            wire[(client, mode)] = run.wire.get(mode, {})
    return runs, wire


def every_mode(lab, link, n: int, repeat: int, sadd_transaction, pure_python_client) -> tuple[dict, dict]:
    """redis-py's modes (redispy_modes, given the notebook's two) and every Java client's, over `link`."""
    py_runs, py_wire = redispy_modes(lab, link, n, repeat, sadd_transaction, pure_python_client)
    j_runs, j_wire = java_modes(lab, link, n, repeat)
    return py_runs | j_runs, py_wire | j_wire


def wire_text(calls: dict, iterations: int) -> str:
    """The mode's own commands per iteration, e.g. 'sadd 100,000 · multi 1 · exec 1', from what
    `iterations` runs of it sent (Measurement.calls for a Java mode's, 1 for redis-py's)."""
    # Keys starting with "_" are extra readings an example adds (server reads, connections opened).
    own = {k: v for k, v in calls.items() if k not in HOUSEKEEPING and not k.startswith("_")}
    return " · ".join(f"{k} {v / iterations:,.0f}" for k, v in sorted(own.items(), key=lambda kv: -kv[1]))


def per_call(runs: dict, key) -> int:
    """How many runs a mode's wire counts cover: redis-py's one untimed call, a Java mode's every call."""
    return 1 if key[0] == "redis-py" else runs[key].calls


def sadd_table(runs: dict, wire: dict, n: int) -> str:
    """One row per client and mode of the SADD job (demonstrations with other sizes are left out)."""
    frame = measurements_frame([m for m in runs.values() if m.ops == n])
    rows = summarize(frame, by=("param_client", "param_mode"))
    return md_table(
        ["client", "mode", "median", "per SADD", "spread (min–max)", "on the wire, per run"],
        [
            [
                r.param_client,
                r.param_mode,
                f"{r.median_s * 1e3:,.1f} ms",
                f"{r.median_s / r.ops * 1e6:,.2f} µs",
                f"{r.min_s * 1e3:,.1f}–{r.max_s * 1e3:,.1f} ms",
                wire_text(wire[(r.param_client, r.param_mode)], per_call(runs, (r.param_client, r.param_mode))),
            ]
            for r in rows.itertuples()
        ],
    )


def sadd_modes(runs: dict, n: int) -> dict:
    return {key: m for key, m in runs.items() if m.ops == n}


def by_mode(measurements, rtt_ms: float | None = None) -> dict:
    """Saved measurements as {(client, mode): Measurement}, those at `rtt_ms` when it is given."""
    return {
        (m.params["client"], m.params["mode"]): m
        for m in measurements
        if rtt_ms is None or m.params["rtt_ms"] == rtt_ms
    }


@plots.draws("ch03/sadd")
def sadd_plot(doc: dict) -> Figure:
    """One horizontal bar chart per RTT that ran (loopback, RTT_MS): µs per SADD for every client and mode."""
    p = doc["params"]
    panels = [
        (title, by_mode(doc["measurements"], rtt), n)
        for rtt, title, n in ((0, "loopback", p["n"]), (RTT_MS, f"{RTT_MS} ms RTT", p["n_rtt"]))
    ]
    panels = [panel for panel in panels if panel[1]]
    fig, axes = plt.subplots(1, len(panels), figsize=(13, 7), sharey=True, squeeze=False)
    for ax, (title, runs, n) in zip(axes[0], panels):
        sel = sadd_modes(runs, n)
        colors = [plots.COLORS["one by one"] if "one_by_one" in m else plots.COLORS["pipelined"] for _, m in sel]
        plots.per_op_bars(
            ax,
            [f"{c}: {m}" for c, m in sel],
            [m.per_op_us for m in sel.values()],
            colors,
            xlabel="µs per SADD (median, log)",
            title=f"{title}: {n:,} SADD per run",
        )
    fig.tight_layout()
    return fig


SADD_ALT = (
    "Horizontal bar charts, log scale: microseconds per SADD for every client and mode, on loopback "
    "and at 1 ms RTT; one-by-one modes in red, pipelined modes in blue"
)


def fastest(runs: dict, n: int, client: str):
    sel = {m: r for (c, m), r in sadd_modes(runs, n).items() if c == client and "one_by_one" not in m}
    return min(sel.values(), key=lambda r: r.median) if sel else None


def one_by_one(runs: dict, client: str):
    return next((m for (c, mode), m in runs.items() if c == client and "one_by_one" in mode), None)


def sadd_summary(loop: tuple, rtt: tuple) -> dict:
    """loop and rtt: (runs, wire, n) on loopback and at RTT_MS."""
    (loop_runs, loop_wire, n), (rtt_runs, _, n_rtt) = loop, rtt
    summary = {"n": quantity(n, "count"), "n_rtt": quantity(n_rtt, "count")}
    for client in ["redis-py", *JAVA_CLIENTS]:
        slug = client.lower().replace(" ", "_").replace("-", "")
        base, best = one_by_one(loop_runs, client), fastest(loop_runs, n, client)
        if base and best:
            summary[f"{slug}_one_by_one_us"] = median_figure(base, "us", per_op=True)
            summary[f"{slug}_best_us"] = median_figure(best, "us", per_op=True)
            summary[f"{slug}_best_mode"] = quantity(1, "count", text=best.params["mode"])
            summary[f"{slug}_speedup"] = ratio_figure(base, best)
        base_rtt, best_rtt = one_by_one(rtt_runs, client), fastest(rtt_runs, n_rtt, client)
        if base_rtt and best_rtt:
            summary[f"{slug}_speedup_rtt"] = ratio_figure(base_rtt, best_rtt)

    def py(mode):
        return loop_runs[("redis-py", mode)]

    rbatch, jpipe = loop_runs.get(("Redisson", "rbatch_in_memory")), loop_runs.get(("Jedis", "pipeline"))
    summary |= {
        "redisson_vs_jedis": ratio_figure(rbatch, jpipe) if rbatch and jpipe else quantity(None, "x"),
        "redispy_transaction_vs_pipeline": ratio_figure(py("transaction"), py("pipeline")),
        "redispy_pure_parser_vs_hiredis": ratio_figure(py("pipeline_pure_python_parser"), py("pipeline")),
        "redispy_transaction_wire": quantity(1, "count", text=wire_text(loop_wire[("redis-py", "transaction")], 1)),
    }
    for (client, mode), calls in loop_wire.items():
        if (client, mode) in WIRE_SUMMARY:
            text = wire_text(calls, per_call(loop_runs, (client, mode)))
            summary[f"wire_{client.lower()}_{mode}"] = quantity(1, "count", text=text or "–")
    return summary


# --- flush policies ----------------------------------------------------------------------------


def flush_modes(runs: dict) -> dict:
    """Lettuce's async flush modes and Spring Data Redis's flush policies, from the loopback runs."""
    return {
        (c, m): r
        for (c, m), r in runs.items()
        if (c == "Lettuce" and m.startswith("async"))
        or (c == "Spring Data Redis" and m.startswith(("flush", "buffered")))
    }


@plots.draws("ch03/flush")
def flush_plot(doc: dict) -> Figure:
    sel, n = by_mode(doc["measurements"]), doc["measurements"][0].ops  # every mode ran the same n SADD
    fig, ax = plt.subplots()
    plots.bars_with_spread(ax, list(sel.values()), unit=1e3, ylabel=f"ms for {n:,} SADD")
    ax.set_xticks(range(len(sel)))
    ax.set_xticklabels([f"{c.split()[0]}\n{m}" for c, m in sel], rotation=30, ha="right", fontsize=9)
    ax.set_title("Flush policies: same commands, different writes")
    return fig


FLUSH_ALT = (
    "Bar chart: time for the chapter's SADD job with Lettuce's auto-flush, manual flush and flush every 1,000, "
    "and Spring Data Redis's flush policies"
)


def flush_summary(runs: dict, sel: dict) -> dict:
    def ms(key):
        return median_figure(runs[key], "ms") if key in runs else quantity(None, "ms")

    summary = {
        "lettuce_autoflush_ms": ms(("Lettuce", "async_autoflush")),
        "lettuce_manual_flush_ms": ms(("Lettuce", "async_manual_flush")),
        "shared_connection_wait_ms": ms(("Lettuce", "shared_conn_wait")),
    }
    for c, m in sel:
        summary[f"{c.split()[0].lower()}_{m}_ms"] = ms((c, m))
    return summary


def server_reads(sel: dict, wire: dict) -> dict:
    return {f"{c}|{m}": wire[(c, m)].get("_reads") for c, m in sel if wire[(c, m)].get("_reads")}


# --- connection models under JMH -----------------------------------------------------------------

POOL_SIZES = {"jedis_pool_8": 8, "jedis_pool_100": 100}


def measure_jmh(lab, rtts: list) -> tuple[dict, str]:
    """{(rtt, model, threads): JMH row} for each RTT, and JMH's settings as the example printed them."""
    jmh, settings = {}, ""
    for rtt in rtts:
        threads = ",".join(map(str, JMH_THREADS[rtt]))
        with lab.rtt(rtt) as link:
            run = lab.java(
                "ch03-jmh",
                lab.size(JMH_WARMUPS),
                lab.size(JMH_ITERATIONS),
                JMH_SECONDS,
                threads,
                lab.size(JMH_FORKS),
                link=link,
            )
        jmh |= {(rtt, row["model"], row["threads"]): row for row in run.data["jmh"]}
        settings = str(run.data.get("settings", ""))
    return jmh, settings


def in_flight(model: str, threads: int) -> int:
    """Commands that can be in flight at once: a pool caps them at its size, a shared connection does not."""
    cap = POOL_SIZES.get(model)
    return min(threads, cap) if cap else threads


def jmh_score(row: dict) -> str:
    """JMH's score and the range of its measured iterations (absent from a single iteration)."""
    spread = f" ({row['min']:,.1f}–{row['max']:,.1f})" if row.get("min") is not None and row.get("error") else ""
    return f"{row['ops_per_ms']:,.1f}{spread}"


def jmh_table(jmh: dict) -> str:
    rows = []
    for (rtt, model, threads), row in sorted(jmh.items(), key=lambda kv: (kv[0][1], kv[0][2])):
        if rtt:
            continue
        slow = jmh.get((RTT_MS, model, threads))
        rows.append(
            [
                model,
                threads,
                PUBLISHED_JMH.get((model, threads), "–"),
                jmh_score(row),
                jmh_score(slow) if slow else "–",
                f"{in_flight(model, threads):,}",
            ]
        )
    return (
        "All figures in operations per millisecond, JMH's mean over its iterations with the slowest and "
        "fastest in brackets; the last column is Little's bound at 1 ms.\n\n"
        + md_table(
            ["model", "threads", "published", "yours, loopback", f"yours, {RTT_MS} ms RTT", f"in flight ÷ {RTT_MS} ms"],
            rows,
        )
    )


@plots.draws("ch03/jmh")
def jmh_plot(doc: dict) -> Figure:
    jmh = {(row["rtt_ms"], row["model"], row["threads"]): row for row in doc["params"]["rows"]}
    rtts = sorted({r for r, _, _ in jmh})
    models = sorted({m for _, m, _ in jmh})
    fig, axes = plt.subplots(1, len(rtts), figsize=(12, 4.5), squeeze=False)
    for ax, rtt in zip(axes[0], rtts):
        for model in models:
            pts = sorted((t, row["ops_per_ms"]) for (r, m, t), row in jmh.items() if r == rtt and m == model)
            ax.plot([t for t, _ in pts], [v for _, v in pts], "o-", label=model)
        if rtt:
            threads = sorted({t for _, _, t in jmh})
            ax.plot(
                threads,
                [min(t, 8) / rtt for t in threads],
                ":",
                color=plots.COLORS["bound"],
                label="Little: 8 in flight / RTT",
            )
            ax.plot(
                threads,
                [t / rtt for t in threads],
                "--",
                color=plots.COLORS["bound"],
                label="Little: threads in flight / RTT",
            )
        ax.set_xlabel("client threads")
        ax.set_ylabel("operations per ms")
        ax.set_title("loopback" if rtt == 0 else f"{rtt} ms injected RTT")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


JMH_ALT = (
    "Charts: operations per millisecond against client threads for JedisPool(8), JedisPool(100), "
    "one shared Lettuce connection and Spring Data Redis, on loopback (10 and 50 threads) and at 1 ms RTT "
    "(50 threads) against Little's bounds"
)


def jmh_summary(jmh: dict, settings: str) -> dict:
    # if (rtt, model, threads) in jmh else None, "num"
    def ops(rtt, model, threads):
        return quantity(jmh[(rtt, model, threads)]["ops_per_ms"] if (rtt, model, threads) in jmh else None, "num")

    return {
        "pool8_10_loopback": ops(0, "jedis_pool_8", 10),
        "lettuce_10_loopback": ops(0, "lettuce_shared", 10),
        "pool8_50_loopback": ops(0, "jedis_pool_8", 50),
        "lettuce_50_loopback": ops(0, "lettuce_shared", 50),
        "spring_50_loopback": ops(0, "spring_lettuce", 50),
        "pool8_50_rtt": ops(RTT_MS, "jedis_pool_8", 50),
        "pool100_50_rtt": ops(RTT_MS, "jedis_pool_100", 50),
        "lettuce_50_rtt": ops(RTT_MS, "lettuce_shared", 50),
        "spring_50_rtt": ops(RTT_MS, "spring_lettuce", 50),
        "jmh_settings": quantity(1, "count", text=settings),
    }


def jmh_params(jmh: dict) -> dict:
    return {
        "rows": [dict(row, rtt_ms=r) for (r, _, _), row in jmh.items()],
        "published": {f"{m}|{t}": v for (m, t), v in PUBLISHED_JMH.items()},
    }


# --- what the sources published, and the figures that answer them ---------------------------

JMH = "redis-client-benchmark: JMH, ops/ms, one command per call (setup not stated)"
# The published table, ops/ms by (connection model, client threads).
PUBLISHED_JMH = {
    ("jedis_pool_8", 10): 61.417,
    ("jedis_pool_8", 50): 72.563,
    ("jedis_pool_8", 100): 89.274,
    ("jedis_pool_100", 10): 71.888,
    ("jedis_pool_100", 50): 356.273,
    ("jedis_pool_100", 100): 626.489,
    ("lettuce_shared", 10): 77.678,
    ("lettuce_shared", 50): 369.844,
    ("lettuce_shared", 100): 726.404,
    ("spring_lettuce", 10): 78.123,
    ("spring_lettuce", 50): 381.857,
    ("spring_lettuce", 100): 724.646,
}
PUBLISHED = {
    f"jmh_{model}_{threads}": Published(value, "num", JMH) for (model, threads), value in PUBLISHED_JMH.items()
}


def vivo_rbatch_over_pipeline() -> float:
    return ch01.PUBLISHED["vivo_redisson_rbatch_ms"].value / ch01.PUBLISHED["vivo_jedis_pipeline_ms"].value


CLAIMS = [
    Claim(
        "Redisson RBatch time ÷ Jedis Pipeline time, one SADD job",
        "ch03/sadd",
        "redisson_vs_jedis",
        "x",
        derived(vivo_rbatch_over_pipeline(), "x", "vivo's 1,399 ms / 504 ms"),
    ),
    Claim("JedisPool(8), 10 threads, ops/ms", "ch03/jmh", "pool8_10_loopback", "num", PUBLISHED["jmh_jedis_pool_8_10"]),
    Claim("JedisPool(8), 50 threads, ops/ms", "ch03/jmh", "pool8_50_loopback", "num", PUBLISHED["jmh_jedis_pool_8_50"]),
    Claim(
        "One shared Lettuce connection, 10 threads, ops/ms",
        "ch03/jmh",
        "lettuce_10_loopback",
        "num",
        PUBLISHED["jmh_lettuce_shared_10"],
    ),
    Claim(
        "One shared Lettuce connection, 50 threads, ops/ms",
        "ch03/jmh",
        "lettuce_50_loopback",
        "num",
        PUBLISHED["jmh_lettuce_shared_50"],
    ),
    Claim(
        "Spring Data Redis on Lettuce, 50 threads, ops/ms",
        "ch03/jmh",
        "spring_50_loopback",
        "num",
        PUBLISHED["jmh_spring_lettuce_50"],
    ),
]
