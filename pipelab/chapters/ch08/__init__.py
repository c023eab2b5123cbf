"""Chapter 8, the traps that client defaults and connection state set: redis-py's default timeout
with its default retries, and its HELLO 3 against a server without HELLO, measured here; Lettuce's
unbounded queue, replay and shared-connection state, Jedis's pooled and cluster pipelines,
Redisson's batch retries and WAIT, and Spring's escaping callback come from the ch08-lettuce,
ch08-jedis, ch08-redisson and ch08-spring examples.

The harness only: the redis-py code each section teaches (the pipelines that meet the retries, the
first command against a server without HELLO, the shared pipeline and its fixes) is the notebook's
cells tagged code:… (taught.py), passed in by the notebook."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import redis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff

from ... import taught
from ...errors import LabError
from ...jbang import fact
from ...params import Size
from ...proxy import PROXY_NAME
from ...results import md_table, median_figure, quantity
from ...server import PREFIX as LAB_PREFIX
from ...server import EmbeddedRedis, Endpoint, free_port
from ..ch04 import DEFAULT_RETRIES, no_retry_client
from ..ch04 import PREFIX as CH04_PREFIX
from ..ch07 import LoopThread
from .hangs import HANG_BOUND_S, LETTUCE_HANG_N, SKIP_RESULT_N, hangs_summary, hangs_table, measure_hangs
from .shared import (
    SHARED_ROUNDS,
    SHARED_THREADS,
    SHARED_TRIALS,
    java_cases,
    measure_jedis_shared,
    measure_shared,
    shared_summary,
    shared_table,
)

PREFIX = LAB_PREFIX + "ch08:"

# --- 1. redis-py: a default timeout with default retries -------------------------------------------

DEFAULT_TIMEOUT_S = 5  # redis-py 8's socket_timeout when none is given (redis/_defaults.py)
SILENCE_S = 5.5  # a network stall a little longer than the default timeout
RETRY_N = 100  # INCRs per pipeline: the counter divided by RETRY_N is the number of runs
SHORT_TIMEOUT_S = 0.5  # the scaled-down case: every attempt times out, so every retry is spent
BLOCK_S = 1  # a BLPOP in the pipeline that waits this long, longer than SHORT_TIMEOUT_S


def _runs(r: redis.Redis, key: str, per_run: int) -> float:
    return int(r.get(key) or 0) / per_run


def _attempt(job) -> tuple[str, float]:
    start = time.perf_counter()
    try:
        job()
        outcome = "returned"
    except Exception as err:  # the exception is the finding
        outcome = type(err).__name__
    return outcome, time.perf_counter() - start


def measure_stalled(lab, n: int, add_once) -> dict[str, dict]:
    """A network stall of SILENCE_S (toxiproxy holds every reply) under redis-py's defaults and
    its fixes: per case, the times the server ran the job, the outcome and the wait. `add_once(r, key,
    amount, before_exec)` is the notebook's read-modify-write under Redis.transaction()."""
    r = lab.client()
    key = PREFIX + "stall:runs"
    marker_ids = []
    ch04 = taught.load("04-pitfalls")  # chapter 4's INCR jobs, as its notebook runs them
    incr_pipeline, incr_exactly_once = ch04.incr_pipeline, ch04.incr_exactly_once

    def marked(c):
        marker_ids.append(f"ch08-{time.time_ns()}")
        return incr_exactly_once(c, key, n, marker_ids[-1])

    cases = {  # name: (client, job(client, stall)); the job calls stall() where the stall begins
        "defaults": (lambda e: e.client(), lambda c, stall: stall() or incr_pipeline(c, key, n)),
        "retries off": (no_retry_client, lambda c, stall: stall() or incr_pipeline(c, key, n)),
        "retries off, marker in MULTI/EXEC": (no_retry_client, lambda c, stall: stall() or marked(c)),
        "WATCH, Redis.transaction()": (lambda e: e.client(), lambda c, stall: add_once(c, key, n, stall)),
    }
    out = {}
    for name, (make, job) in cases.items():
        r.unlink(key)
        with lab.faults() as faults:
            c = make(faults.link.endpoint)
            c.ping()  # connected before the stall: it hits the job, not the handshake
            timers = []

            def stall():
                if not timers:  # once: a later attempt meets the same stall, not a new one
                    faults.add(("stall", "timeout", "downstream", {"timeout": 0}))  # 0: hold, never close
                    timers.append(faults.clear_after(SILENCE_S))

            outcome, elapsed = _attempt(lambda: job(c, stall))
            for timer in timers:
                timer.join()
        time.sleep(0.2)  # the last attempt's commands reach the server
        out[name] = {"runs": _runs(r, key, n), "outcome": outcome, "elapsed_s": elapsed}
        c.close()
    r.unlink(key, *(f"{CH04_PREFIX}request:{m}" for m in marker_ids))
    r.close()
    return out


def measure_blocked(lab, n: int, incr_then_wait, incr_then_wait_async) -> dict[str, dict]:
    """The pipeline's own BLPOP outlasts a SHORT_TIMEOUT_S socket timeout on every attempt: the
    retries that redis-py spends, sync and asyncio, and the same with retries off. The pipelines are
    the notebook's `incr_then_wait(r, key, queue, n, block_s)` and its asyncio twin."""
    r = lab.client()
    key, queue = PREFIX + "block:runs", PREFIX + "block:empty"
    e = lab.endpoint
    cases = {
        "default retries": lambda: incr_then_wait(e.client(socket_timeout=SHORT_TIMEOUT_S), key, queue, n, BLOCK_S),
        "retries off": lambda: incr_then_wait(
            no_retry_client(e, socket_timeout=SHORT_TIMEOUT_S), key, queue, n, BLOCK_S
        ),
        "redis.asyncio, default retries": lambda: _in_loop(
            lambda: incr_then_wait_async(e.async_client(socket_timeout=SHORT_TIMEOUT_S), key, queue, n, BLOCK_S)
        ),
        "redis.asyncio, retries off": lambda: _in_loop(
            lambda: incr_then_wait_async(
                e.async_client(socket_timeout=SHORT_TIMEOUT_S, retry=AsyncRetry(NoBackoff(), 0)),
                key,
                queue,
                n,
                BLOCK_S,
            )
        ),
    }
    out = {}
    for name, job in cases.items():
        r.unlink(key)
        outcome, elapsed = _attempt(job)
        time.sleep(BLOCK_S + 0.2)  # the last attempt's BLPOP gives up on the server
        out[name] = {"runs": _runs(r, key, n), "outcome": outcome, "elapsed_s": elapsed}
    r.unlink(key)
    r.close()
    return out


def measure_retries(lab, n: int, incr_then_wait, incr_then_wait_async, add_once) -> tuple[dict, dict]:
    """measure_stalled (without toxiproxy: {}) and measure_blocked at once: each mostly waits, one on
    the proxy's stall and one on BLPOP, and each counts its runs on a key of its own."""
    with ThreadPoolExecutor(1) as pool:
        blocked = pool.submit(measure_blocked, lab, n, incr_then_wait, incr_then_wait_async)
        stalled = measure_stalled(lab, n, add_once) if lab.rtt_available else {}
        return stalled, blocked.result()


def _in_loop(make_coro):
    with LoopThread() as loop:
        return loop.run(make_coro())


RETRY_SLUGS = {
    "defaults": "defaults",
    "retries off": "off",
    "retries off, marker in MULTI/EXEC": "marker",
    "WATCH, Redis.transaction()": "watch",
    "default retries": "defaults",
    "redis.asyncio, default retries": "async",
    "redis.asyncio, retries off": "async_off",
}


def retries_table(stalled: dict, blocked: dict, n: int) -> str:
    rows = [
        [
            f"network stall of {SILENCE_S:g} s, socket_timeout {DEFAULT_TIMEOUT_S} s (default)",
            name,
            f"{c['runs']:g}",
            c["outcome"],
            f"{c['elapsed_s']:.1f}",
        ]
        for name, c in stalled.items()
    ]
    rows += [
        [
            f"BLPOP of {BLOCK_S:g} s in the pipeline, socket_timeout {SHORT_TIMEOUT_S:g} s",
            name,
            f"{c['runs']:g}",
            c["outcome"],
            f"{c['elapsed_s']:.1f}",
        ]
        for name, c in blocked.items()
    ]
    return md_table(["Replies held by", "Client", f"Times the server ran the {n} INCRs", "Caller saw", "Wait, s"], rows)


def _s(value: float, digits: int = 1) -> dict:
    return quantity(value, "s", f"{value:.{digits}f} s")


def retries_summary(stalled: dict, blocked: dict, n: int) -> dict:
    worst = (DEFAULT_RETRIES + 1) * DEFAULT_TIMEOUT_S  # every attempt waits out the timeout
    out = {
        "n": quantity(n, "count"),
        "default_worst_s": _s(worst, 0),
        "default_timeout_s": _s(DEFAULT_TIMEOUT_S, 0),
        "default_retries": quantity(DEFAULT_RETRIES, "count"),
        "silence_s": _s(SILENCE_S),
        "short_timeout_s": _s(SHORT_TIMEOUT_S),
        "block_s": _s(BLOCK_S, 0),
    }
    for group, cases in (("stall", stalled), ("block", blocked)):
        for name, c in cases.items():
            slug = f"{group}_{RETRY_SLUGS[name]}"
            out[f"{slug}_runs"] = quantity(c["runs"], "count", f"{c['runs']:g}")
            out[f"{slug}_outcome"] = quantity(0, "count", c["outcome"])
            out[f"{slug}_s"] = _s(c["elapsed_s"])
    return out


# --- redis-py 8 opens every connection with HELLO 3 ------------------------------------------------


class _Resp2Endpoint(Endpoint):
    """The lab's clients for a server without HELLO ask for RESP2, which needs no HELLO: the server's
    start-up check connects through this."""

    def client_kwargs(self) -> dict:
        return super().client_kwargs() | {"protocol": 2}


class HelloRefused(EmbeddedRedis):
    """A server the lab starts with HELLO renamed away, so it answers HELLO as a server older than 6.0,
    or a proxy that does not know the command, does: "unknown command"."""

    def __init__(self):
        super().__init__(port=free_port(), args=["--rename-command", "HELLO", ""])

    @property
    def endpoint(self) -> Endpoint:
        return _Resp2Endpoint("127.0.0.1", self.port)


HELLO_CASES = {  # slug: what the reader would write, the options it passes, and whether it is asyncio
    "defaults": ("redis.Redis(host, port)", {}, False),
    "resp2": ("redis.Redis(host, port, protocol=2)", {"protocol": 2}, False),
    "async_defaults": ("redis.asyncio.Redis(host, port)", {}, True),
}


def measure_hello(first_command, first_command_async) -> dict[str, dict]:
    """Each of HELLO_CASES against a server the lab starts without HELLO, through the notebook's
    `first_command(host, port, **options)` or its asyncio twin: what the first command returned or
    raised, and the server's name and version."""
    with HelloRefused() as server:
        e = server.endpoint
        with e.client() as control:
            info = control.info("server")
        version = f"Valkey {info['valkey_version']}" if "valkey_version" in info else f"Redis {info['redis_version']}"

        out = {}
        for slug, (call, options, asynchronous) in HELLO_CASES.items():
            try:
                if asynchronous:
                    outcome = _in_loop(lambda: first_command_async(e.host, e.port, **options))
                else:
                    outcome = first_command(e.host, e.port, **options)
                connected = True
            except redis.RedisError as err:  # the error is the finding
                outcome, connected = f"{type(err).__name__}: {str(err).strip()}", False
            out[slug] = {"call": call, "outcome": outcome, "connected": connected, "server_version": version}
    return out


def hello_table(cases: dict) -> str:
    return md_table(
        ["Client", "First command against a server without HELLO"], [[c["call"], c["outcome"]] for c in cases.values()]
    )


def hello_summary(cases: dict) -> dict:
    out = {
        "default_protocol": quantity(redis.utils.DEFAULT_RESP_VERSION, "count"),
        "server_version": quantity(0, "count", next(iter(cases.values()))["server_version"]),
    }
    for slug, c in cases.items():
        out[f"{slug}_outcome"] = quantity(0, "count", c["outcome"])
        out[f"{slug}_connected"] = quantity(int(c["connected"]), "count", "yes" if c["connected"] else "no")
    return out


# --- the Java clients ----------------------------------------------------------------------------


@contextmanager
def replicated_master(timeout_s: float = 10.0):
    """A master and one replica, both with appendonly on (WAITAOF counts a replica once it has fsynced
    its own AOF), both started here on loopback for WAIT and
    WAITAOF, and stopped when the block ends; yields the master's Endpoint."""
    with (
        EmbeddedRedis(port=free_port(), args=["--appendonly", "yes", "--repl-diskless-sync-delay", "0"]) as master,
        EmbeddedRedis(port=free_port(), args=["--replicaof", "127.0.0.1", str(master.port), "--appendonly", "yes"]),
    ):
        with master.endpoint.client() as c:
            deadline = time.monotonic() + timeout_s
            while c.info("replication").get("slave0", {}).get("state") != "online":  # synced, acking
                if time.monotonic() > deadline:
                    raise LabError(f"The replica did not attach to 127.0.0.1:{master.port} within {timeout_s:g} s.")
                time.sleep(0.05)
        yield master.endpoint


def _unit(name: str, value) -> str:
    """The unit of a Java fact, read from its name's suffix."""
    for suffix, unit in (
        ("_kb_s", "count"),  # a rate, not seconds
        ("_ms", "ms"),
        ("_us", "us"),
        ("_s", "s"),
        ("_bytes", "bytes"),
        ("_mb", "num"),
        ("_per_call", "num"),
        ("_per_pipeline", "num"),
        ("_over_connection_time", "x"),
        ("_ratio", "x"),
    ):
        if name.endswith(suffix):
            return unit
    return "count" if isinstance(value, int) else "num"


def facts_summary(run) -> dict:
    """Every fact of a Java example as a figure for the prose: texts as they are, yes/no for a
    boolean, numbers with the unit their name ends in."""
    out = {}
    for name, value in run.facts.items():
        if isinstance(value, bool):
            out[name] = quantity(0, "count", "yes" if value else "no")
        elif isinstance(value, (int, float)):
            unit = _unit(name, value)
            if unit == "num":
                out[name] = quantity(value, "num", f"{value:,.2f}".rstrip("0").rstrip("."))
            elif unit in ("ms", "s") and isinstance(value, int):  # a setting or a whole count: no decimals
                out[name] = quantity(value, unit, f"{value:,} {unit}")
            elif unit == "bytes":  # exact: the prose compares them with Jedis's 8,192-byte buffer
                out[name] = quantity(value, unit, f"{value:,} bytes")
            else:
                out[name] = fact(run, name, unit)
        else:
            out[name] = fact(run, name)
    return out


JEDIS_N = Size(full=1_000, quick=1_000)  # SETs a borrower leaves unsynced; more than Jedis's 8 KB buffer holds
JEDIS_REPEAT = Size(full=5, quick=2)


def measure_jedis(lab, cluster, n: int, repeat: int):
    """ch08-jedis on the lab's server and chapter 5's cluster (its first master as the seed)."""
    seed = cluster.nodes[0]
    return lab.java("ch08-jedis", n, repeat, 1, f"{seed.host}:{seed.port}", cluster=seed)


def jedis_table(run) -> str:
    f, ms = run.facts, run.measurements()
    rows = [
        [
            mode.replace("_", " "),
            f"{f.get(f'threads_per_pipeline_{mode}', 0):g}",
            f"{m.per_op_us:,.0f} ({m.min / m.ops * 1e6:,.0f}–{m.max / m.ops * 1e6:,.0f})",
        ]
        for mode, m in ms.items()
    ]
    return md_table(
        ["Cluster pipeline (one SET per master)", "Threads started per pipeline", "µs per pipeline, median (min–max)"],
        rows,
    )


SPRING_N = Size(full=5_000, quick=2_000)
SPRING_REPEAT = Size(full=3, quick=2)


def measure_spring(lab, n: int, repeat: int):
    return lab.java("ch08-spring", n, repeat, 1)


# Per case of an abandoned pipeline: the fact that counts borrower 1's SETs the server had run
# before the connection was used again.
JEDIS_LEFT_BEHIND = {"leak": "leak_b1_applied_while_lost", "poison": "poison_b1_applied_before_b2"}


def jedis_summary(run) -> dict:
    f, n = run.facts, run.data["size"]
    out = facts_summary(run) | {"n": quantity(n, "count")}
    for case, applied in JEDIS_LEFT_BEHIND.items():
        if applied in f and f"{case}_set_bytes" in f:
            # The SETs not yet run are the pipeline's last ones, all of one size: what was still in
            # the output buffer, plus at most one cut where the buffer was last written out.
            unrun = n - f[applied]
            unrun_bytes = unrun * f[f"{case}_set_bytes"]
            out[f"{case}_b1_unrun"] = quantity(unrun, "count")
            out[f"{case}_b1_unrun_bytes"] = quantity(unrun_bytes, "bytes", f"{unrun_bytes:,} bytes")
    if "us_per_pipeline_shared_pool" in f:
        out["shared_pool_vs_sync_then_close"] = quantity(
            f["us_per_pipeline_shared_pool"] / f["us_per_pipeline_sync_then_close"], "x"
        )
    return out


SPRING_MODES = {
    "one_by_one": "one by one, no pipeline",
    "escape": "RedisCallback calling the template",
    "connection": "RedisCallback using its connection",
    "session": "SessionCallback using operations",
    "session_outer": "SessionCallback calling the outer template",
}


def spring_table(run) -> str:
    f, ms = run.facts, run.measurements()
    rows = [
        [
            label,
            f.get(f"{mode}_results", "–"),
            f"{f[f'{mode}_sets_per_call']:,.0f}",
            f"{f[f'{mode}_reads_per_call']:,.0f}",
            f"{ms[mode].median * 1e3:,.1f} ({ms[mode].min * 1e3:,.1f}–{ms[mode].max * 1e3:,.1f})",
        ]
        for mode, label in SPRING_MODES.items()
    ]
    return md_table(["executePipelined with", "results", "SETs run", "server reads", "ms, median (min–max)"], rows)


def spring_summary(run) -> dict:
    return (
        facts_summary(run)
        | {"n": quantity(run.data["size"], "count")}
        | {f"{mode}_ms": median_figure(m, "ms") for mode, m in run.measurements().items()}
    )


# Quick 25,000: every firehose SET must be answered within 10 s of write(); beside the tests, 50,000 were not.
LETTUCE_QUEUE = Size(full=100_000, quick=25_000)  # commands queued with auto-flush off, at most
LETTUCE_REPEAT = Size(full=3, quick=2)
REPLAY_SCENARIOS = {
    "default": "defaults (autoReconnect on)",
    "replay_filter": "replayFilter(cmd -> true)",
    "no_reconnect": "autoReconnect(false)",
    "reject": "DisconnectedBehavior.REJECT_COMMANDS",
}


def measure_lettuce(lab, queued: int, repeat: int):
    """ch08-lettuce on the lab's server; its replay and firehose parts drive the lab's toxiproxy."""
    if not lab.rtt_available:
        return lab.java("ch08-lettuce", queued, repeat, 1)
    with lab.faults() as faults:  # whatever toxics the example leaves are lifted when it ends
        proxy = faults.link.endpoint
        return lab.java(
            "ch08-lettuce", queued, repeat, 1, f"{proxy.host}:{proxy.port}", lab.toxiproxy.api_url, PROXY_NAME
        )


def replay_table(run) -> str:
    f = run.facts
    if "replay_skipped" in f:
        return f"In-flight replay skipped: {f['replay_skipped']}"
    rows = [
        [
            label,
            f"{f[f'replay_{s}_futures_ok']:,} / {f[f'replay_{s}_futures_failed']:,}",
            f"{f[f'replay_{s}_applied_first']:,}",
            f"{f[f'replay_{s}_duplicates']:,}",
            f"{f[f'replay_{s}_counter']:,}",
        ]
        for s, label in REPLAY_SCENARIOS.items()
    ]
    return md_table(
        [
            f"Lettuce, {f['replay_incrs']:,} INCRs in flight at the drop",
            "futures ok / failed",
            "applied before the drop",
            "applied twice",
            "counter",
        ],
        rows,
    )


def lettuce_summary(run) -> dict:
    out = facts_summary(run) | {"queued": quantity(run.data["size"], "count")}
    queued = sorted(int(m.group(1)) for name in run.facts if (m := re.fullmatch(r"queued_(\d+)_heap_mb", name)))
    for i, k in enumerate(queued, 1):  # the sizes follow `size`: the prose names them by rank
        out[f"queue{i}_n"] = quantity(k, "count")
        out[f"queue{i}_mb"] = quantity(
            run.facts[f"queued_{k}_heap_mb"], "num", f"{run.facts[f'queued_{k}_heap_mb']:.1f}"
        )
    return out


REDISSON_N = Size(full=50_000, quick=20_000)  # INCRs of the batch that outlasts a 25 ms response timeout
REDISSON_REPEAT = Size(full=3, quick=2)


def measure_redisson(lab, n: int, repeat: int):
    """ch08-redisson on servers started here: one to pause (CLIENT PAUSE holds every client's writes,
    so never a server the lab was pointed at) and watch with MONITOR, and a replicated pair for WAIT
    and WAITAOF."""
    with EmbeddedRedis(port=free_port()) as alone, replicated_master() as replicated:
        return lab.java(
            "ch08-redisson", n, repeat, 1, f"replicated={replicated.host}:{replicated.port}", target=alone.endpoint
        )


REDISSON_MODES = {
    "in_memory": "IN_MEMORY",
    "in_memory_atomic": "IN_MEMORY_ATOMIC",
    "redis_write_atomic": "REDIS_WRITE_ATOMIC",
}


def redisson_table(run) -> str:
    f = run.facts
    rows = []
    for case in ("big", "stall"):
        for mode, label in REDISSON_MODES.items():
            p = f"{case}_{mode}_"
            rows.append(
                [
                    case,
                    label,
                    f.get(p + "outcome", "–"),
                    f"{f.get(p + 'incr_calls', 0):,}",
                    f"{f.get(p + 'counter_total', 0):,}",
                ]
            )
    return md_table(
        ["Timed out by", "Execution mode", "The caller saw", "INCRs the server ran", "Counters' total"], rows
    )


def redisson_summary(run) -> dict:
    return facts_summary(run) | {"n": quantity(run.data["size"], "count")}
