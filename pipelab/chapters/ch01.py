"""Chapter 1, round-trip time: what a round trip costs, and what pipelining saves of it.

The harness only: the workloads (the PING loops, the SADD job, the handshake) are the notebook's
cells tagged code:… (taught.py), passed in by the notebook; their Java twins are PingBench and SaddBench."""

from __future__ import annotations

import hiredis
import matplotlib.pyplot as plt
import redis
from matplotlib.figure import Figure

from .. import plots
from ..params import Size
from ..resp import connect, read_replies
from ..results import median_figure, quantity, ratio_figure
from ..server import Endpoint
from .claims import Claim, Published, derived


def delete_keys(r: redis.Redis, keys: list[str], batch: int = 10_000) -> None:
    """Remove exactly these keys (the benchmark's own), in pipelined batches."""
    for start in range(0, len(keys), batch):
        r.unlink(*keys[start : start + batch])


def inline_ping(endpoint: Endpoint) -> bytes:
    """The inline form `PING\\r\\n` that `printf | nc` sends works too."""
    with connect(endpoint, timeout=5) as sock:
        sock.sendall(b"PING\r\n")
        return read_replies(sock, 1)[0]


HANDSHAKE_PINGS = 3


def reply_text(reply) -> str:
    """One reply as the chapter prints it: an error's message, a map's size and protocol, or the text."""
    if isinstance(reply, hiredis.ReplyError):
        return f"-{reply}"
    if isinstance(reply, dict):
        fields = {k.decode(): v.decode() if isinstance(v, bytes) else v for k, v in reply.items()}
        return f"a map of {len(fields)} fields (proto {fields.get('proto')}, version {fields.get('version')})"
    return f"+{reply.decode()}" if isinstance(reply, bytes) else str(reply)


def measure_handshakes(server, password: str, handshake_pipelined) -> dict:
    """Every handshake the chapter shows, sent by the notebook's `handshake_pipelined(host, port, handshake,
    pings)` to a password-protected `server`: {name: replies}."""
    host, port = server.endpoint.host, server.endpoint.port
    plans = {
        "auth": ["AUTH", password],
        "wrong_auth": ["AUTH", "wrong-" + password],
        "hello": ["HELLO", "3", "AUTH", "default", password],
        "wrong_hello": ["HELLO", "3", "AUTH", "default", "wrong-" + password],
    }
    return {
        name: [reply_text(r) for r in handshake_pipelined(host, port, plan, HANDSHAKE_PINGS)]
        for name, plan in plans.items()
    }


def handshake_summary(replies: dict) -> dict:
    """The handshake's reply and what the PINGs behind it got, per handshake."""
    out = {}
    for name, (first, *pings) in replies.items():
        distinct = sorted(set(pings))
        out[f"{name}_reply"] = quantity(0, "count", first)
        out[f"{name}_pings"] = quantity(0, "count", "; ".join(f"{pings.count(d)} × {d}" for d in distinct))
        out[f"{name}_pongs"] = quantity(pings.count("+PONG"), "count")
    return out


# --- the chapter's parameters, declared once (the notebook passes them to the Java examples) ---

N_PING = Size(full=10_000, quick=500)
N_SADD = Size(full=20_000, quick=1_000)  # per-SADD figures: a one-by-one run still lasts seconds
REPEAT = Size(full=5, quick=3)
SADD_REPEAT = Size(full=3, quick=2)
RTTS_MS = Size(full=[0, 0.5, 1, 2, 5], quick=[0, 1, 5])
SLOW_RTT_MS = 250  # redis.io's slow link
SLOW_PINGS = Size(full=4, quick=2)  # each single PING takes a quarter of a second
SWEEP_DEPTH = 1_000
SWEEP_SAMPLE_S = 0.3  # how long one sample of single PINGs should last
SWEEP_BATCHES = 3


def relabel(java: dict, labels: dict) -> list:
    """A Java run's measurements by mode, under the labels the chapter prints, in that order."""
    out = []
    for mode, label in labels.items():
        java[mode].label = label
        out.append(java[mode])
    return out


# --- 10,000 PINGs ----------------------------------------------------------------------------


def measure_pings(lab, n: int, repeat: int, ping_one_by_one, ping_pipelined) -> list:
    """The notebook's two PING loops, interleaved on one connection, then Jedis's twins (PingBench)."""
    r = lab.client()
    runs = lab.measure_interleaved(
        {"redis-py one by one": lambda: ping_one_by_one(r, n), "redis-py pipelined": lambda: ping_pipelined(r, n)},
        ops=n,
        repeat=repeat,
    )
    r.close()
    java = lab.java("ch01-ping", n, repeat).measurements()
    return runs + relabel(java, {"jedis_one_by_one": "Jedis one by one", "jedis_pipelined": "Jedis pipelined"})


def ping_summary(runs: list) -> dict:
    py_one, py_pipe, jedis_one, jedis_pipe = runs
    return {
        "python_unpipelined_s": median_figure(py_one),
        "python_pipelined_s": median_figure(py_pipe),
        "python_speedup": ratio_figure(py_one, py_pipe),
        "jedis_unpipelined_s": median_figure(jedis_one),
        "jedis_pipelined_s": median_figure(jedis_pipe),
        "jedis_speedup": ratio_figure(jedis_one, jedis_pipe),
    }


def loopback_bars(doc: dict, what: str, colors: list):
    """The whole job's median time per client and mode, whiskers min-max: chapter 1's two bar charts."""
    runs, n = doc["measurements"], doc["params"]["n"]
    fig, ax = plt.subplots()
    plots.bars_with_spread(ax, runs, unit=1e3, ylabel=f"milliseconds for all {what}", colors=colors)
    ax.set_title(f"{n:,} {what} on loopback: median, whiskers min-max of {len(runs[0].samples)} runs")
    return fig, ax


@plots.draws("ch01/ping-10k")
def ping_plot(doc: dict) -> Figure:
    return loopback_bars(doc, "PINGs", [plots.COLORS["one by one"], plots.COLORS["pipelined"]] * 2)[0]


def ping_alt(n: int) -> str:
    return f"Bar chart: time for {n:,} PINGs one by one and pipelined, redis-py and Jedis"


# --- vivo's SADD job ----------------------------------------------------------------------------


def measure_sadd(lab, n: int, repeat: int, sadd_keys, sadd_one_by_one, sadd_pipelined) -> list:
    """The notebook's SADD job both ways on `sadd_keys(n)`, then Jedis's and Redisson's (SaddBench)."""
    r = lab.client()
    keys = sadd_keys(n)

    # each repetition starts from empty sets
    def reset():
        return delete_keys(r, keys)

    py_one, py_pipe = lab.measure_interleaved(
        {"redis-py one by one": lambda: sadd_one_by_one(r, keys), "redis-py pipeline": lambda: sadd_pipelined(r, keys)},
        ops=n,
        repeat=repeat,
        setup=reset,
    )
    reset()
    r.close()
    java = lab.java("ch01-sadd", n, repeat).measurements()
    return relabel(
        java,
        {
            "jedis_one_by_one": "Jedis one by one",
            "jedis_pipeline": "Jedis Pipeline",
            "redisson_rbatch": "Redisson RBatch",
        },
    ) + [py_one, py_pipe]


def sadd_summary(runs: list) -> dict:
    """Per SADD, so that a run of any size compares with vivo's 100,000."""
    j_one, j_pipe, rbatch, py_one, py_pipe = runs
    return {
        "n": quantity(j_one.ops, "count"),
        "jedis_one_by_one_us": median_figure(j_one, "us", per_op=True),
        "jedis_pipeline_us": median_figure(j_pipe, "us", per_op=True),
        "redisson_rbatch_us": median_figure(rbatch, "us", per_op=True),
        "redispy_one_by_one_us": median_figure(py_one, "us", per_op=True),
        "redispy_pipeline_us": median_figure(py_pipe, "us", per_op=True),
        "jedis_speedup": ratio_figure(j_one, j_pipe),
    }


@plots.draws("ch01/sadd")
def sadd_plot(doc: dict) -> Figure:
    one, piped, other = plots.COLORS["one by one"], plots.COLORS["pipelined"], plots.COLORS["other"]
    fig, ax = loopback_bars(doc, "SADDs", [one, piped, other, one, piped])
    ax.tick_params(axis="x", labelrotation=15)
    return fig


def sadd_alt(n: int) -> str:
    return f"Bar chart: time for {n:,} SADD with Jedis one by one, Jedis Pipeline, Redisson RBatch and redis-py"


# --- throughput against round-trip time ------------------------------------------------------


def sweep_point(lab, link, repeat: int, ping_one_by_one, ping_pipelined) -> tuple:
    """Single PINGs and pipelines of SWEEP_DEPTH over one link; each single sample lasts about SWEEP_SAMPLE_S."""
    c = link.client()
    per_op = 1e-4 + link.rtt_ms / 1e3  # a guess at one round trip, to size the sample
    n_single = max(3, min(2_000, int(SWEEP_SAMPLE_S / per_op)))
    tags = {"rtt_ms": link.rtt_ms, "via_proxy": link.via_proxy}
    single = lab.measure(
        f"single @ {link.rtt_ms} ms",
        lambda: ping_one_by_one(c, n_single),
        ops=n_single,
        repeat=repeat,
        mode="single",
        **tags,
    )
    piped = lab.measure(
        f"pipelined @ {link.rtt_ms} ms",
        lambda: [ping_pipelined(c, SWEEP_DEPTH) for _ in range(SWEEP_BATCHES)],
        ops=SWEEP_DEPTH * SWEEP_BATCHES,
        repeat=repeat,
        mode="pipelined",
        depth=SWEEP_DEPTH,
        **tags,
    )
    c.close()
    return single, piped


def measure_sweep(lab, rtts: list, repeat: int, ping_one_by_one, ping_pipelined) -> tuple[dict, object]:
    """{rtt: (single, pipelined)} for each RTT toxiproxy can inject, and the bare proxy hop's single PINGs."""
    points = {}
    for rtt in rtts:
        if rtt and not lab.rtt_available:
            print(f"No RTT injection, measuring loopback only: {lab.proxy_note}")
            break
        with lab.rtt(rtt) as link:
            points[rtt] = sweep_point(lab, link, repeat, ping_one_by_one, ping_pipelined)
    through_proxy = None
    if lab.rtt_available:
        with lab.proxied() as link:
            through_proxy, _ = sweep_point(lab, link, repeat, ping_one_by_one, ping_pipelined)
    return points, through_proxy


def measure_slow_link(lab, n: int, ping_one_by_one, ping_pipelined):
    """Single PINGs and one pipeline at SLOW_RTT_MS; the untimed warm-up also pays for the handshake."""
    if not lab.rtt_available:
        return None
    with lab.rtt(SLOW_RTT_MS) as link:
        c = link.client()
        single = lab.measure(
            f"single @ {SLOW_RTT_MS} ms",
            lambda: ping_one_by_one(c, n),
            ops=n,
            repeat=2,
            rtt_ms=SLOW_RTT_MS,
            mode="single",
        )
        piped = lab.measure(
            f"pipelined @ {SLOW_RTT_MS} ms",
            lambda: ping_pipelined(c, SWEEP_DEPTH),
            ops=SWEEP_DEPTH,
            repeat=2,
            rtt_ms=SLOW_RTT_MS,
            mode="pipelined",
            depth=SWEEP_DEPTH,
        )
        c.close()
    return single, piped


def sweep_points(doc: dict) -> dict:
    """{rtt: (single, pipelined)} of a saved sweep, as measure_sweep returned them: neither the 250 ms
    link nor the bare proxy hop (at 0 ms through the proxy)."""

    def at(rtt, mode):
        return next(
            m
            for m in doc["measurements"]
            if m.params.get("mode") == mode and m.params.get("rtt_ms") == rtt and m.params.get("via_proxy") == (rtt > 0)
        )

    return {rtt: (at(rtt, "single"), at(rtt, "pipelined")) for rtt in doc["params"]["rtts_ms"]}


@plots.draws("ch01/rtt-sweep")
def sweep_plot(doc: dict) -> Figure:
    points = sweep_points(doc)
    rtts = sorted(points)
    fig, ax = plt.subplots()
    ax.plot(
        rtts,
        [points[t][0].ops_per_s for t in rtts],
        "o-",
        color=plots.COLORS["one by one"],
        label="single commands (one RTT each)",
    )
    ax.plot(
        rtts,
        [points[t][1].ops_per_s for t in rtts],
        "s-",
        color=plots.COLORS["pipelined"],
        label=f"pipelines of {doc['params']['depth']:,}",
    )
    bound_x = [t for t in rtts if t > 0]
    if bound_x:
        ax.plot(bound_x, [1e3 / t for t in bound_x], "--", color=plots.COLORS["bound"], label="1/RTT bound")
    ax.set_xscale("symlog", linthresh=0.5)
    ax.set_yscale("log")
    ax.set_xticks(rtts)
    ax.set_xticklabels([f"{t:g}" for t in rtts])
    ax.set_xlabel("injected RTT, ms (0 = loopback, no proxy)")
    ax.set_ylabel("PINGs per second (log)")
    ax.set_title("Throughput against round-trip time")
    ax.legend()
    return fig


SWEEP_ALT = (
    "Line chart, log scale: PINGs per second against injected RTT, single commands following the 1/RTT "
    "bound, pipelines of 1,000 far above"
)


def sweep_summary(points: dict, through_proxy, slow) -> dict:
    rtts = sorted(points)
    measured_rtt_ms = [points[t][0].per_op_us / 1e3 for t in rtts]
    at_1ms = points[1][0].ops_per_s if 1 in points else None
    return {
        "loopback_rtt_us": median_figure(points[0][0], "us", per_op=True),
        "proxy_overhead_us": quantity(
            through_proxy.per_op_us - points[0][0].per_op_us if through_proxy else None, "us"
        ),
        "single_ops_at_1ms": quantity(at_1ms, "ops/s"),
        "bound_at_1ms": quantity(1e3 if 1 in points else None, "ops/s"),
        "single_ops_at_250ms": quantity(slow[0].ops_per_s if slow else None, "ops/s"),
        "pipelined_ops_at_250ms": quantity(slow[1].ops_per_s if slow else None, "ops/s"),
        "rtts": quantity(
            measured_rtt_ms, "list", text=", ".join(f"{m:.2f} ms (set {t:g})" for t, m in zip(rtts, measured_rtt_ms))
        ),
    }


def sweep_runs(points: dict, through_proxy, slow) -> list:
    """Every measurement of the sweep, in the order the results file keeps them."""
    return (
        [m for pair in points.values() for m in pair]
        + (list(slow) if slow else [])
        + ([through_proxy] if through_proxy else [])
    )


# --- what the sources published, and the figures that answer them ---------------------------

REDIS_IO = "redis.io, “Redis pipelining” (Ruby client, Mac OS X, loopback)"
VIVO = "vivo Internet Technology, Redis pipelining with Lettuce and Redisson (100,000 SADD to a remote Redis)"
PUBLISHED = {
    "ping_10k_unpipelined_s": Published(1.185238, "s", REDIS_IO),
    "ping_10k_pipelined_s": Published(0.250783, "s", REDIS_IO),
    "rtt_250ms_max_rps": Published(4.0, "ops/s", "redis.io: an RTT of 250 ms allows at most 4 requests/s"),
    "vivo_jedis_one_by_one_ms": Published(162_655, "ms", VIVO),
    "vivo_jedis_pipeline_ms": Published(504, "ms", VIVO),
    "vivo_redisson_rbatch_ms": Published(1_399, "ms", VIVO),
}


def ping_speedup() -> float:
    return PUBLISHED["ping_10k_unpipelined_s"].value / PUBLISHED["ping_10k_pipelined_s"].value


VIVO_N = 100_000  # vivo's SADD commands


def vivo_ms_per_command() -> float:
    """vivo's one-by-one total over its 100,000 commands: the round trip each one paid."""
    return PUBLISHED["vivo_jedis_one_by_one_ms"].value / VIVO_N


def vivo_us_per_sadd(key: str) -> Published:
    """One of vivo's totals divided by its 100,000 SADDs, in µs."""
    total = PUBLISHED[key]
    return derived(total.value * 1e3 / VIVO_N, "us", f"vivo's {total.value:,.0f} ms / 100,000")


def vivo_pipeline_speedup() -> float:
    return PUBLISHED["vivo_jedis_one_by_one_ms"].value / PUBLISHED["vivo_jedis_pipeline_ms"].value


PING_SPEEDUP = derived(ping_speedup(), "x", "redis.io's 1.185 s / 0.251 s")
CLAIMS = [
    Claim(
        "10,000 PINGs one by one (redis-py)",
        "ch01/ping-10k",
        "python_unpipelined_s",
        "s",
        PUBLISHED["ping_10k_unpipelined_s"],
    ),
    Claim(
        "10,000 PINGs pipelined (redis-py)",
        "ch01/ping-10k",
        "python_pipelined_s",
        "s",
        PUBLISHED["ping_10k_pipelined_s"],
    ),
    Claim("Pipelining speed-up, 10,000 PINGs (redis-py)", "ch01/ping-10k", "python_speedup", "x", PING_SPEEDUP),
    Claim("Pipelining speed-up, 10,000 PINGs (Jedis)", "ch01/ping-10k", "jedis_speedup", "x", PING_SPEEDUP),
    Claim(
        "Time per SADD one by one (Jedis)",
        "ch01/sadd",
        "jedis_one_by_one_us",
        "us",
        vivo_us_per_sadd("vivo_jedis_one_by_one_ms"),
    ),
    Claim(
        "Time per SADD, Jedis Pipeline",
        "ch01/sadd",
        "jedis_pipeline_us",
        "us",
        vivo_us_per_sadd("vivo_jedis_pipeline_ms"),
    ),
    Claim(
        "Time per SADD, Redisson RBatch",
        "ch01/sadd",
        "redisson_rbatch_us",
        "us",
        vivo_us_per_sadd("vivo_redisson_rbatch_ms"),
    ),
    Claim(
        "Pipelining speed-up, SADD (Jedis)",
        "ch01/sadd",
        "jedis_speedup",
        "x",
        derived(vivo_pipeline_speedup(), "x", "vivo's 162,655 ms / 504 ms"),
    ),
    Claim(
        "Single requests/s at 250 ms RTT",
        "ch01/rtt-sweep",
        "single_ops_at_250ms",
        "ops/s",
        PUBLISHED["rtt_250ms_max_rps"],
    ),
]
