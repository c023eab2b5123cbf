"""Chapter 7, pipelining without asking: redis.asyncio's gather against a pipeline and the event
loop it stalls, one variadic command against a pipeline of single ones (on one server and on the
cluster), and optimistic transactions (WATCH) under contention. The Java side (a multiplexed
connection, head-of-line blocking, Jedis's WATCH) comes from the ch07-mux and ch07-watch examples."""
from __future__ import annotations

import asyncio
import statistics
import threading
import time

import matplotlib.pyplot as plt
import redis
import redis.asyncio
from glide import (Batch, BatchOptions, ClusterBatch, GlideClient, GlideClientConfiguration, GlideClusterClient,
                   GlideClusterClientConfiguration, NodeAddress, ServerCredentials)
from matplotlib.figure import Figure
from redis.exceptions import WatchError

from .. import observe, plots
from ..params import Size
from ..measure import Measurement, measure
from ..results import md_table, quantity
from ..server import Endpoint
from .ch01 import PUBLISHED as CH01_PUBLISHED, delete_keys
from .claims import Claim

PREFIX = "pipelab:ch07:"
REPEAT = Size(full=3, quick=2)


def async_client(endpoint: Endpoint, **kwargs) -> redis.asyncio.Redis:
    return redis.asyncio.Redis(host=endpoint.host, port=endpoint.port, db=endpoint.db, username=endpoint.username,
                               password=endpoint.password, ssl=endpoint.tls, **kwargs)


class LoopThread:
    """An event loop on a thread of its own, for the synchronous harness to hand coroutines to.
    A notebook's kernel already runs a loop on the main thread, where run_until_complete and
    asyncio.run refuse to start another."""

    def __enter__(self) -> "LoopThread":
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="ch07-loop", daemon=True)
        self.thread.start()
        return self

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


# --- 1. redis.asyncio: gather against a pipeline ------------------------------------------------

GATHER_N = Size(full=1_000, quick=200)  # commands per call
GATHER_RTTS = (0, 1)  # ms injected by toxiproxy; 1 ms only where it runs
POOLS = (1, 10, 100)  # max_connections of the pool the gathered coroutines share; 100 is the default
DEFAULT_POOL_N = 1_000  # coroutines gathered on a default client: more than its pool's 100 connections


# --8<-- [start:gather]
async def incr_gathered(r: redis.asyncio.Redis, keys: list[str]) -> None:
    # One coroutine per command. Each takes a connection from r's pool for its own round trip:
    # redis-py does not multiplex, so the commands in flight at once are at most the pool's size.
    await asyncio.gather(*(r.incr(key) for key in keys))


async def incr_pipelined(r: redis.asyncio.Redis, keys: list[str]) -> None:
    # One connection, one write of every command, then every reply read back.
    async with r.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.incr(key)
        await pipe.execute()


def gather_client(endpoint: Endpoint, connections: int) -> redis.asyncio.Redis:
    # A caller that asks for more connections than the pool holds waits for one (for up to 20 s)
    # instead of failing, as the default ConnectionPool does past max_connections.
    pool = redis.asyncio.BlockingConnectionPool(host=endpoint.host, port=endpoint.port, db=endpoint.db,
                                                username=endpoint.username, password=endpoint.password,
                                                max_connections=connections, timeout=20)
    return redis.asyncio.Redis(connection_pool=pool)
# --8<-- [end:gather]


def default_pool_outcome(endpoint: Endpoint, n: int) -> str:
    """What gather does with more coroutines than the default pool's 100 connections."""
    async def attempt():
        r = async_client(endpoint)
        try:
            done = await asyncio.gather(*(r.incr(f"{PREFIX}gather:default:{i}") for i in range(n)),
                                        return_exceptions=True)
        finally:
            await r.aclose()
        failed = [e for e in done if isinstance(e, BaseException)]
        return f"{len(failed):,} of {n:,} failed with {type(failed[0]).__name__}: {failed[0]}" if failed else "completed"
    with LoopThread() as loop:
        return loop.run(attempt())


def measure_gather(endpoint: Endpoint, rtt_ms: float, n: int, repeat: int) -> dict[str, Measurement]:
    """{mode: Measurement} of n INCRs gathered on pools of 1, 10 and 100 connections, and pipelined,
    with the connections each mode opened and the server's reads per command as params."""
    keys = [f"{PREFIX}gather:{i % 100}" for i in range(n)]
    out = {}
    with LoopThread() as loop:
        modes = {f"gather, pool of {c}": (gather_client(endpoint, c), incr_gathered) for c in POOLS}
        modes["one pipeline"] = (async_client(endpoint), incr_pipelined)
        for mode, (client, workload) in modes.items():
            counters = observe.Counters(endpoint)
            with counters.measure() as delta:
                m = measure(f"{mode}, {n:,} INCRs, +{rtt_ms:g} ms RTT",
                            lambda: loop.run(workload(client, keys)), ops=n, repeat=repeat)
            counters.close()
            pool = client.connection_pool
            m.params.update(rtt_ms=rtt_ms, mode=mode, connections=len(pool._available_connections) +
                            len(pool._in_use_connections),
                            reads_per_cmd=delta.values["total_reads_processed"] / delta.values["total_commands_processed"])
            out[mode] = m
            loop.run(client.aclose())
    return out


def gather_table(runs: dict[tuple[float, str], Measurement]) -> str:
    rows = [[f"+{rtt:g} ms", mode, m.params["connections"], f"{m.params['reads_per_cmd']:.3f}",
             f"{m.ops_per_s:,.0f}", f"{m.per_op_us:,.1f} µs"] for (rtt, mode), m in runs.items()]
    return md_table(["RTT", "Mode", "Connections opened", "Server reads per command", "INCRs/s", "per INCR"], rows)


def gather_tag(mode: str) -> str:
    return {"one pipeline": "pipeline", "GLIDE, gather on one client": "glide"}.get(mode) or f"pool{mode.rsplit(' ', 1)[1]}"


def gather_summary(runs: dict[tuple[float, str], Measurement], default_outcome: str, n: int, default_n: int) -> dict:
    out = {"n": quantity(n, "count"), "default_n": quantity(default_n, "count"),
           "default_pool": quantity(0, "count", default_outcome)}
    for (rtt, mode), m in runs.items():
        tag = f"rtt{rtt:g}_{gather_tag(mode)}"
        out[f"{tag}_ops"] = quantity(m.ops_per_s, "ops/s")
        out[f"{tag}_reads_per_cmd"] = quantity(m.params["reads_per_cmd"], "num", f"{m.params['reads_per_cmd']:.3f}")
    for rtt in {rtt for rtt, _ in runs}:
        pipe = runs[(rtt, "one pipeline")].ops_per_s
        for mode in (mode for r, mode in runs if r == rtt and mode != "one pipeline"):
            out[f"rtt{rtt:g}_pipeline_vs_{gather_tag(mode)}"] = quantity(pipe / runs[(rtt, mode)].ops_per_s, "x")
    return out


# --- 1b. the event loop while a big pipeline is packed and parsed ------------------------------

STALL_SIZES = Size(full=[1_000, 10_000, 30_000, 100_000], quick=[1_000, 20_000])
STALL_REPEAT = Size(full=3, quick=2)
STALL_ONCE = 100_000  # from this size on, one run of each (100,000 SETs take redis.asyncio ~2 s)
STALL_CHUNKS = (1_000, 10_000)
TICK_S = 0.001


# --8<-- [start:stall]
async def ticker(lags: list[float], stop: asyncio.Event) -> None:
    # Asks to wake every millisecond; how late it wakes is how long the loop could not run it.
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        asked = loop.time() + TICK_S
        await asyncio.sleep(TICK_S)
        lags.append(loop.time() - asked)


async def set_in_pipelines(r: redis.asyncio.Redis, keys: list[str], chunk: int | None) -> None:
    # chunk=None: one pipeline of everything. Otherwise one execute() per chunk, and every
    # execute() awaits the network, which lets the loop run its other tasks in between.
    step = chunk or len(keys)
    for start in range(0, len(keys), step):
        async with r.pipeline(transaction=False) as pipe:
            for key in keys[start:start + step]:
                pipe.set(key, "v")
            await pipe.execute()
# --8<-- [end:stall]


async def _stall_once(r: redis.asyncio.Redis, keys: list[str], chunk: int | None) -> tuple[float, float, int]:
    lags: list[float] = []
    stop = asyncio.Event()
    tick = asyncio.create_task(ticker(lags, stop))
    await asyncio.sleep(5 * TICK_S)  # the ticker is running
    start = time.perf_counter()
    await set_in_pipelines(r, keys, chunk)
    elapsed = time.perf_counter() - start
    stop.set()
    await tick
    return elapsed, max(lags), len(lags)


def measure_stall(endpoint: Endpoint, sizes: list[int], repeat: int) -> dict[tuple[int, str], Measurement]:
    """{(n, mode): Measurement of the pipelines' time} with the ticker's worst lag of each run as params.
    One warm-up run of the smallest size serves all; the largest sizes run once per mode, chunks of
    1,000 being the only chunks measured there."""
    out = {}

    async def run_all():
        r = async_client(endpoint)
        try:
            warmup = await _stall_once(r, [f"{PREFIX}stall:{i}" for i in range(sizes[0])], None)
            for n in sizes:
                keys = [f"{PREFIX}stall:{i % 1000}" for i in range(n)]
                chunks = STALL_CHUNKS[:1] if n >= STALL_ONCE else STALL_CHUNKS
                for mode, chunk in (("one pipeline", None), *((f"chunks of {c:,}", c) for c in chunks if c < n)):
                    runs = [await _stall_once(r, keys, chunk) for _ in range(1 if n >= STALL_ONCE else repeat)]
                    out[(n, mode)] = Measurement(f"{n:,} SETs, {mode}", n, [t for t, _, _ in runs],
                                                 {"n": n, "mode": mode, "max_lag_s": [lag for _, lag, _ in runs],
                                                  "ticks": [k for _, _, k in runs]}, [warmup[0]])
        finally:
            await r.aclose()
    with LoopThread() as loop:
        loop.run(run_all())
    return out


def worst_lag(m: Measurement) -> float:
    """The median over the repetitions of each run's worst lag, in seconds."""
    return statistics.median(m.params["max_lag_s"])


def stall_table(runs: dict) -> str:
    rows = [[f"{n:,}", mode, f"{m.median * 1e3:,.1f} ms", f"{worst_lag(m) * 1e3:,.1f} ms",
             f"{min(m.params['max_lag_s']) * 1e3:,.1f}–{max(m.params['max_lag_s']) * 1e3:,.1f} ms"]
            for (n, mode), m in runs.items()]
    return md_table(["SETs", "Sent as", "Time (median)", "Worst ticker lag (median)", "… min–max"], rows)


@plots.draws("ch07/stall")
def stall_plot(doc: dict) -> Figure:
    runs = {(m.params["n"], m.params["mode"]): m for m in doc["measurements"]}
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for mode in dict.fromkeys(mode for _, mode in runs):
        points = sorted((n, worst_lag(m) * 1e3) for (n, md), m in runs.items() if md == mode)
        ax.plot(*zip(*points), "o-", label=mode)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("SETs sent (log)")
    ax.set_ylabel("worst lag of a 1 ms ticker, ms (log)")
    ax.set_title("redis.asyncio: how long the event loop cannot run anything else")
    ax.legend()
    return fig


STALL_ALT = ("Log-log line chart: the worst lag of a 1 ms ticker coroutine against the number of SETs, for one "
             "pipeline and for chunks of 10,000")


def stall_summary(runs: dict) -> dict:
    """Figures by role, so a quick run fills the same ones: `big` is the largest size, `mid` the
    largest at which every chunk size ran."""
    sizes = sorted({n for n, _ in runs})
    chunked = [f"chunks of {c:,}" for c in STALL_CHUNKS]
    big, mid = sizes[-1], max(n for n in sizes if all((n, mode) in runs for mode in chunked))
    out = {"big": quantity(big, "count"), "mid": quantity(mid, "count")}
    for role, n in (("big", big), ("mid", mid)):
        for mode in ("one pipeline", *chunked):
            if (n, mode) in runs:
                tag = "one" if mode == "one pipeline" else f"chunk{mode.rsplit(' ', 1)[1].replace(',', '')}"
                m = runs[(n, mode)]
                out[f"lag_{tag}_{role}"] = quantity(worst_lag(m) * 1e3, "num", f"{worst_lag(m) * 1e3:,.1f} ms")
                out[f"time_{tag}_{role}"] = quantity(m.median, "s")
                out[f"us_per_cmd_{tag}_{role}"] = quantity(m.per_op_us, "us")
    out["lag_one_vs_chunked"] = quantity(worst_lag(runs[(big, "one pipeline")]) / worst_lag(runs[(big, chunked[0])]), "x")
    return out


# --- 3b. GLIDE for Java (ch07-glide) ----------------------------------------------------------

GLIDE_JAVA_TIMEOUT_N = 100_000  # the book's SADD workload, sent under GLIDE's default request timeout


def measure_glide_java(lab, cluster, repeat: int):
    node = cluster.nodes[0]
    return lab.java("ch07-glide", lab.size(GLIDE_SADD_N), repeat, 1, ",".join(map(str, MUX_THREADS)),
                    f"{node.host}:{node.port}", lab.size(MUX_N), GLIDE_JAVA_TIMEOUT_N, GLIDE_CLUSTER_SETS,
                    lab.size(GLIDE_CLUSTER_CALLS))


def java_clients_table(mux, glide) -> str:
    """Jedis, Lettuce, Redisson and GLIDE, the same INCRs from the same thread counts."""
    rows = []
    for run, mode, label in ((mux, "jedis_pool", "Jedis, a pool of T connections"),
                             (mux, "lettuce", "Lettuce, one shared connection"),
                             (mux, "redisson", "Redisson, sync RAtomicLong"), (glide, "glide", "GLIDE, one client")):
        f, ms = run.facts, run.measurements()
        for t in MUX_THREADS:
            m = ms[f"{mode}_t{t}"]
            rows.append([label if t == MUX_THREADS[0] else "", t, f"{m.ops_per_s:,.0f} ({m.ops / m.max:,.0f}–{m.ops / m.min:,.0f})",
                         f[f"{mode}_t{t}_connections"], f"{f[f'{mode}_t{t}_cmds_per_read']:.2f}"])
    return md_table(["Client (Java)", "Threads", "INCRs/s (min–max)", "Connections", "Commands per server read"], rows)


def glide_java_summary(run) -> dict:
    f, ms = run.facts, run.measurements()
    out = {"batch_ms": quantity(ms["glide_batch"].median * 1e3, "ms"),
           "atomic_ms": quantity(ms["glide_atomic"].median * 1e3, "ms"),
           "n": quantity(ms["glide_batch"].ops, "count"),
           "timeout_n": quantity(f["timeout_batch"], "count"),
           "timeout_outcome": quantity(0, "count", f["timeout_outcome"]),
           "timeout_s": quantity(f["timeout_seconds"], "s"),
           "timeout_ran": quantity(f["timeout_ran"], "count"),
           "default_timeout_ms": quantity(f["default_request_timeout_ms"], "ms"),
           "raise_true": quantity(0, "count", f["raise_true_outcome"]),
           "raise_true_counter": quantity(f["raise_true_counter"], "count"),
           "cluster_reads_max": quantity(max(f[f"cluster_master{i}_reads"] for i in range(f["cluster_masters"])), "num"),
           "cluster_connections": quantity(f["cluster_connections"], "count"),
           "cluster_atomic": quantity(0, "count", f["cluster_atomic_outcome"])}
    for t in MUX_THREADS:
        out[f"t{t}_ops"] = quantity(ms[f"glide_t{t}"].ops_per_s, "ops/s")
        out[f"t{t}_cmds_per_read"] = quantity(f[f"glide_t{t}_cmds_per_read"], "num", f"{f[f'glide_t{t}_cmds_per_read']:.2f}")
        out[f"t{t}_connections"] = quantity(f[f"glide_t{t}_connections"], "count")
    return out


# --- 4. one command instead of many -----------------------------------------------------------

VARIADIC_SIZES = Size(full=[10, 100, 1_000, 10_000, 30_000], quick=[10, 1_000, 10_000])
VARIADIC_REPEAT = Size(full=3, quick=2)
VALUE = "v" * 100


# --8<-- [start:variadic]
def get_pipelined(r: redis.Redis, keys: list[str]) -> list:
    pipe = r.pipeline(transaction=False)
    for key in keys:
        pipe.get(key)
    return pipe.execute()  # n commands: n lookups, n replies, n command dispatches on the server


def get_one_command(r: redis.Redis, keys: list[str]) -> list:
    return r.mget(keys)  # one command: one dispatch, one reply array


def set_pipelined(r: redis.Redis, keys: list[str]) -> None:
    pipe = r.pipeline(transaction=False)
    for key in keys:
        pipe.set(key, VALUE)
    pipe.execute()


def set_one_command(r: redis.Redis, keys: list[str]) -> None:
    r.mset(dict.fromkeys(keys, VALUE))


def sadd_pipelined(r: redis.Redis, key: str, members: list[str]) -> None:
    pipe = r.pipeline(transaction=False)
    for member in members:
        pipe.sadd(key, member)
    pipe.execute()


def sadd_one_command(r: redis.Redis, key: str, members: list[str]) -> None:
    r.sadd(key, *members)  # SADD is variadic: every member in one command


def hset_pipelined(r: redis.Redis, key: str, fields: list[str]) -> None:
    pipe = r.pipeline(transaction=False)
    for field in fields:
        pipe.hset(key, field, VALUE)
    pipe.execute()


def hset_one_command(r: redis.Redis, key: str, fields: list[str]) -> None:
    r.hset(key, mapping=dict.fromkeys(fields, VALUE))
# --8<-- [end:variadic]


# One table per shape, each workload to its function (a flat table lets the tests' tracer see the calls).
PIPELINED = {"GET": get_pipelined, "SET": set_pipelined, "SADD": sadd_pipelined, "HSET": hset_pipelined}
ONE_COMMAND = {"GET": get_one_command, "SET": set_one_command, "SADD": sadd_one_command, "HSET": hset_one_command}
COUNTED = {"GET": ("get", "mget"), "SET": ("set", "mset"), "SADD": ("sadd",), "HSET": ("hset",)}  # commandstats
VARIADIC = list(COUNTED)


def measure_variadic(endpoint: Endpoint, sizes: list[int], repeat: int) -> dict[tuple[str, str, int], Measurement]:
    """{(workload, "pipeline" | "one command", n): Measurement}, with the server's µs per key (INFO
    commandstats: the commands' own execution) and the server's CPU per key (everything: reading,
    parsing, dispatching, replying) as params. SADD and HSET start from an empty key each time."""
    out = {}
    counters, r = observe.Counters(endpoint), endpoint.client()
    for n in sizes:
        keys = [f"{PREFIX}var:{i}" for i in range(n)]
        for start in range(0, n, 10_000):
            set_one_command(r, keys[start:start + 10_000])  # GET reads these
        members = [f"m{i}" for i in range(n)]
        for workload in VARIADIC:
            counted = COUNTED[workload]
            for shape, fn in (("pipeline", PIPELINED[workload]), ("one command", ONE_COMMAND[workload])):
                if workload in ("SADD", "HSET"):
                    key = f"{PREFIX}var:{workload.lower()}"
                    call, reset = (lambda fn=fn, key=key: fn(r, key, members)), (lambda key=key: r.unlink(key))
                else:
                    call, reset = (lambda fn=fn: fn(r, keys)), None
                before = observe.command_stats(r)
                with counters.measure() as delta:
                    m = measure(f"{workload}, {shape}, {n:,} keys", call, ops=n, repeat=repeat, setup=reset)
                after = observe.command_stats(r)
                usec = sum(after.get(c, (0, 0))[1] - before.get(c, (0, 0))[1] for c in counted)
                calls = n * (repeat + 1)  # the warm-up ran too
                m.params.update(workload=workload, shape=shape, n=n, server_us_per_key=usec / calls,
                                server_cpu_us_per_key=delta.server_cpu_s * 1e6 / calls)
                out[(workload, shape, n)] = m
        r.unlink(*[f"{PREFIX}var:sadd", f"{PREFIX}var:hset"])
        delete_keys(r, keys)
    counters.close()
    r.close()
    return out


REPLY_KEYS = 100_000  # quick runs too: a smaller MGET is built and sent between two samples of CLIENT LIST
REPLY_CLIENT = "pipelab-ch07-replies"


def measure_reply_memory(endpoint: Endpoint, n: int) -> dict[str, int]:
    """Peak CLIENT LIST tot-mem of n GETs of 100-byte values, as one MGET and as one pipeline."""
    keys = [f"{PREFIX}reply:{i}" for i in range(n)]
    peaks = {}
    with endpoint.client() as r:
        for start in range(0, n, 10_000):
            set_one_command(r, keys[start:start + 10_000])
        r.client_setname(REPLY_CLIENT)
        for shape, fn in (("pipeline", get_pipelined), ("one command", get_one_command)):
            best = 0
            for _ in range(3):  # each sampled peak is a lower bound of the true one
                with observe.reply_buffer_peak(endpoint, REPLY_CLIENT) as peak:
                    fn(r, keys)
                best = max(best, peak["tot_mem"])
            peaks[shape] = best
        delete_keys(r, keys)
    return peaks


def variadic_table(runs: dict, n: int) -> str:
    rows = []
    for workload in VARIADIC:
        piped, single = runs[(workload, "pipeline", n)], runs[(workload, "one command", n)]
        one = {"GET": "MGET", "SET": "MSET", "SADD": "SADD key m1 m2 …", "HSET": "HSET key f1 v1 …"}[workload]
        rows.append([workload, one, f"{piped.per_op_us:.2f} µs", f"{single.per_op_us:.2f} µs",
                     f"{piped.median / single.median:.1f}x",
                     f"{piped.params['server_us_per_key']:.2f} / {single.params['server_us_per_key']:.2f} µs",
                     f"{piped.params['server_cpu_us_per_key']:.2f} / {single.params['server_cpu_us_per_key']:.2f} µs"])
    return md_table(["Workload", "One command", "Pipeline, per key", "One command, per key", "Pipeline ÷ one command",
                     "commandstats per key, pipeline / one", "Server CPU per key, pipeline / one"], rows)


@plots.draws("ch07/variadic")
def variadic_plot(doc: dict) -> Figure:
    runs = {(m.params["workload"], m.params["shape"], m.params["n"]): m for m in doc["measurements"]}
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for workload in VARIADIC:
        sizes = sorted({n for w, _, n in runs if w == workload})
        ratios = [runs[(workload, "pipeline", n)].median / runs[(workload, "one command", n)].median for n in sizes]
        ax.plot(sizes, ratios, "o-", label=workload)
    ax.axhline(1, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("keys (log)")
    ax.set_ylabel("pipeline time ÷ one-command time")
    ax.set_title("A pipeline of single commands against one variadic command (redis-py)")
    ax.legend()
    return fig


VARIADIC_ALT = ("Line chart: for GET, SET, SADD and HSET, the time of a pipeline of single commands divided by the "
                "time of one variadic command, against the number of keys; above 1 the single command is faster")


def variadic_summary(runs: dict, reply: dict[str, int], reply_keys: int) -> dict:
    sizes = sorted({n for _, _, n in runs})
    n = 10_000 if 10_000 in sizes else sizes[-1]
    out = {"n": quantity(n, "count"), "biggest": quantity(sizes[-1], "count")}
    for workload in VARIADIC:
        piped, single = runs[(workload, "pipeline", n)], runs[(workload, "one command", n)]
        tag = workload.lower()
        out[f"{tag}_ratio"] = quantity(piped.median / single.median, "x")
        out[f"{tag}_server_ratio"] = quantity(piped.params["server_us_per_key"] / single.params["server_us_per_key"], "x")
        out[f"{tag}_cpu_ratio"] = quantity(piped.params["server_cpu_us_per_key"] / single.params["server_cpu_us_per_key"], "x")
        for shape, m in (("pipeline", piped), ("single", single)):
            for stat, param in (("cpu", "server_cpu_us_per_key"), ("stat", "server_us_per_key")):
                out[f"{tag}_{shape}_{stat}_us"] = quantity(m.params[param], "us", f"{m.params[param]:.2f} µs")
        out[f"{tag}_pipeline_us"] = quantity(piped.per_op_us, "us")
        out[f"{tag}_single_us"] = quantity(single.per_op_us, "us")
        out[f"{tag}_ratio_10"] = quantity(runs[(workload, "pipeline", sizes[0])].median
                                          / runs[(workload, "one command", sizes[0])].median, "x")
    out["reply_pipeline"] = quantity(reply["pipeline"], "bytes")
    out["reply_mget"] = quantity(reply["one command"], "bytes")
    out["reply_keys"] = quantity(reply_keys, "count")
    out["reply_mget_vs_pipeline"] = quantity(reply["one command"] / max(reply["pipeline"], 1), "x")
    return out


# --- 4b. many keys on the cluster ---------------------------------------------------------------

CLUSTER_KEYS = Size(full=10_000, quick=2_000)


# --8<-- [start:cluster_mget]
def cluster_get_pipelined(rc: redis.RedisCluster, keys: list[str]) -> list:
    pipe = rc.pipeline()  # split per node by the client, one pipeline to each master
    for key in keys:
        pipe.get(key)
    return pipe.execute()


def cluster_mget_nonatomic(rc: redis.RedisCluster, keys: list[str]) -> list:
    return rc.mget_nonatomic(keys)  # one MGET per slot, all in one cluster pipeline


def cluster_mget_tagged(rc: redis.RedisCluster, keys: list[str]) -> list:
    return rc.mget(keys)  # one command: only works when every key hashes to one slot
# --8<-- [end:cluster_mget]


def measure_cluster(cluster, n: int, repeat: int) -> dict:
    """{mode: Measurement} of reading n keys from the cluster, with the GETs and MGETs each master
    ran per call; "crossslot" holds what a plain MGET across slots got."""
    plain = [f"{PREFIX}c:{i}" for i in range(n)]
    tagged = [f"{PREFIX}{{user}}:c:{i}" for i in range(n)]  # one hash tag: one slot
    rc = cluster.client()
    out = {}
    try:
        for keys in (plain, tagged):
            rc.mset_nonatomic(dict.fromkeys(keys, VALUE))
        try:
            rc.mget(plain[:2] + plain[-2:])
            out["crossslot"] = "no error"
        except (redis.RedisError, redis.exceptions.RedisClusterException) as err:  # redis-py refuses before sending
            out["crossslot"] = f"{type(err).__name__}: {err}"
        modes = {"pipeline of GETs": (cluster_get_pipelined, plain),
                 "mget_nonatomic": (cluster_mget_nonatomic, plain),
                 "MGET, one hash tag": (cluster_mget_tagged, tagged),
                 "pipeline of GETs, one hash tag": (cluster_get_pipelined, tagged)}
        for mode, (fn, keys) in modes.items():
            before = [master_calls(node) for node in cluster.nodes]
            m = measure(f"cluster, {mode}, {n:,} keys", lambda fn=fn, keys=keys: fn(rc, keys), ops=n, repeat=repeat)
            calls = [{c: (after.get(c, 0) - was.get(c, 0)) // (repeat + 1) for c in ("get", "mget")}
                     for was, after in zip(before, (master_calls(node) for node in cluster.nodes))]
            m.params.update(mode=mode, n=n, per_master=calls)
            out[mode] = m
        cluster.delete_lab_keys()
    finally:
        rc.close()
    return out


def _calls(m: Measurement) -> str:
    """GETs and MGETs per master, e.g. '3,337 GET / 3,301 GET / 3,362 GET'."""
    parts = [" + ".join(f"{n:,} {c.upper()}" for c, n in calls.items() if n) or "0" for calls in m.params["per_master"]]
    return " / ".join(parts)


def cluster_table(runs: dict[str, Measurement]) -> str:
    rows = [[mode, f"{m.median * 1e3:,.1f} ms", f"{m.per_op_us:.2f} µs", _calls(m)] for mode, m in runs.items()]
    return md_table(["Mode", "Time (median)", "Per key", "Commands per master, one call"], rows)


def cluster_summary(runs: dict[str, Measurement], crossslot: str) -> dict:
    tags = {"pipeline of GETs": "pipeline", "mget_nonatomic": "nonatomic", "MGET, one hash tag": "tagged_mget",
            "pipeline of GETs, one hash tag": "tagged_pipeline"}
    out = {"crossslot": quantity(0, "count", crossslot), "n": quantity(next(iter(runs.values())).ops, "count")}
    for mode, m in runs.items():
        out[f"{tags[mode]}_ms"] = quantity(m.median * 1e3, "num", f"{m.median * 1e3:,.1f} ms")
        out[f"{tags[mode]}_commands"] = quantity(sum(sum(c.values()) for c in m.params["per_master"]), "count")
    base = runs["pipeline of GETs"].median
    for mode, m in runs.items():
        out[f"{tags[mode]}_vs_pipeline"] = quantity(base / m.median, "x")
    return out


def master_calls(node: Endpoint) -> dict[str, int]:
    with node.client() as c:
        return observe.command_calls(c)


# --- 5. WATCH: optimistic transactions under contention --------------------------------------

WRITERS = [1, 2, 4, 8]
INCREMENTS = Size(full=100, quick=50)  # per writer


# --8<-- [start:watch]
def watched_increment(r: redis.Redis, key: str, tries: list[int]) -> None:
    # transaction() WATCHes the key, runs step, and sends MULTI … EXEC; when another client
    # changed the key in between, EXEC returns nothing, redis-py raises WatchError and
    # transaction() runs step again from the top: read again, compute again.
    def step(pipe: redis.client.Pipeline) -> None:
        tries[0] += 1
        value = int(pipe.get(key) or 0)  # after WATCH the pipeline runs commands at once
        pipe.multi()  # from here on it queues them, for EXEC
        pipe.set(key, value + 1)

    r.transaction(step, key)


def blind_increment(r: redis.Redis, key: str, tries: list[int]) -> None:
    # The same read-modify-write with no WATCH: two writers that read the same value both
    # write value + 1, and one increment is lost.
    tries[0] += 1
    value = int(r.get(key) or 0)
    r.set(key, value + 1)


def stale_retry_increment(r: redis.Redis, key: str, tries: list[int]) -> None:
    # A "retry" that sends the aborted transaction again as it was: the WATCH is gone after
    # EXEC, so the second MULTI … EXEC goes through, with the value from the stale read.
    with r.pipeline() as pipe:
        pipe.watch(key)
        value = int(pipe.get(key) or 0)
        pipe.multi()
        pipe.set(key, value + 1)
        tries[0] += 1
        try:
            pipe.execute()
            return
        except WatchError:
            pass
    tries[0] += 1
    with r.pipeline() as pipe:
        pipe.set(key, value + 1)
        pipe.execute()
# --8<-- [end:watch]


INCREMENTERS = {"WATCH, transaction()": watched_increment, "no WATCH": blind_increment,
                "WATCH, aborted EXEC sent again": stale_retry_increment}


def contend(endpoint: Endpoint, increment, writers: int, increments: int) -> dict:
    """`writers` threads, each with its own connection, each adding 1 to one counter `increments`
    times; what the counter ends at, how many tries it took, how long."""
    key = f"{PREFIX}watch:counter"
    with endpoint.client() as admin:
        admin.delete(key)
    tries = [[0] for _ in range(writers)]
    barrier = threading.Barrier(writers + 1)

    def writer(i):
        with endpoint.client() as r:
            r.ping()
            barrier.wait()
            for _ in range(increments):
                increment(r, key, tries[i])

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    with endpoint.client() as admin:
        final = int(admin.get(key) or 0)
        admin.delete(key)
    done = writers * increments
    return {"writers": writers, "increments": done, "final": final, "lost": done - final,
            "tries": sum(t[0] for t in tries), "seconds": elapsed}


def measure_watch(endpoint: Endpoint, writers: list[int], increments: int, repeat: int) -> dict:
    """{(mode, writers): Measurement} of the increments' time, each repetition's contend() row in params."""
    out = {}
    for mode, increment in INCREMENTERS.items():
        for w in writers:
            rows = [contend(endpoint, increment, w, increments) for _ in range(repeat + 1)]
            out[(mode, w)] = Measurement(f"{mode}, {w} writer{'s' if w > 1 else ''}", w * increments,
                                         [row["seconds"] for row in rows[1:]],
                                         {"mode": mode, "writers": w, "rows": rows[1:]}, [rows[0]["seconds"]])
    return out


def retries_per_increment(m: Measurement) -> float:
    return statistics.median((row["tries"] - row["increments"]) / row["increments"] for row in m.params["rows"])


def lost(m: Measurement) -> int:
    return int(statistics.median(row["lost"] for row in m.params["rows"]))


def watch_table(runs: dict) -> str:
    rows = [[mode, w, f"{m.ops_per_s:,.0f}", f"{retries_per_increment(m):.2f}", f"{lost(m):,} of {m.ops:,}"]
            for (mode, w), m in runs.items()]
    return md_table(["redis-py", "Writers", "Increments/s", "Extra tries per increment", "Increments lost"], rows)


def watch_summary(runs: dict, increments: int) -> dict:
    out = {"increments": quantity(increments, "count")}
    for (mode, w), m in runs.items():
        tag = {"WATCH, transaction()": "watch", "no WATCH": "blind", "WATCH, aborted EXEC sent again": "stale"}[mode]
        out[f"{tag}_w{w}_ops"] = quantity(m.ops_per_s, "ops/s")
        out[f"{tag}_w{w}_retries"] = quantity(retries_per_increment(m), "num", f"{retries_per_increment(m):.2f}")
        out[f"{tag}_w{w}_lost"] = quantity(lost(m), "count", f"{lost(m):,} of {m.ops:,}")
    return out


# --- 2. multiplexed connections (Java: ch07-mux) ---------------------------------------------

MUX_THREADS = [1, 8, 64]
MUX_N = Size(full=5_000, quick=2_000)  # INCRs per client and thread count
MUX_REPEAT = Size(full=3, quick=2)
HOL_LIST = 200_000  # elements in the list the slow LRANGE reads whole (about 3.4 MB of reply)
HOL_READERS = 8
HOL_MS = Size(full=1_500, quick=1_000)  # how long the readers GET in each case
MUX_CLIENTS = {"jedis_pool": "Jedis, a pool of T connections", "lettuce": "Lettuce, one shared connection",
               "redisson": "Redisson, sync RAtomicLong"}
HOL_CASES = {"alone": "readers alone", "shared": "LRANGE on the readers' connection",
             "separate": "LRANGE on another connection"}


def measure_mux(lab):
    return lab.java("ch07-mux", lab.size(MUX_N), lab.size(MUX_REPEAT), 1, ",".join(map(str, MUX_THREADS)), HOL_LIST,
                    HOL_READERS, lab.size(HOL_MS))


def mux_table(run) -> str:
    f, ms = run.facts, run.measurements()
    rows = [[label, t, f"{ms[f'{mode}_t{t}'].ops_per_s:,.0f}", f[f"{mode}_t{t}_connections"],
             f"{f[f'{mode}_t{t}_cmds_per_read']:.2f}"] for mode, label in MUX_CLIENTS.items() for t in MUX_THREADS]
    return md_table(["Client", "Threads", "INCRs/s", "Connections", "Commands per server read"], rows)


def hol_table(run) -> str:
    f = run.facts
    rows = [[label, f"{f[f'hol_{case}_p50_us']:,.0f} µs", f"{f[f'hol_{case}_p99_us']:,.0f} µs",
             f"{f[f'hol_{case}_max_us']:,.0f} µs", f"{f[f'hol_{case}_gets']:,}", f[f"hol_{case}_slow_commands"]]
            for case, label in HOL_CASES.items()]
    return md_table(["Readers' GETs (Lettuce, shared connection)", "p50", "p99", "max", "GETs", "LRANGEs"], rows)


def mux_summary(run) -> dict:
    f, ms = run.facts, run.measurements()
    out = {"threads": quantity(0, "count", ", ".join(map(str, MUX_THREADS))), "n": quantity(ms["lettuce_t1"].ops, "count")}
    for mode in MUX_CLIENTS:
        for t in MUX_THREADS:
            out[f"{mode}_t{t}_ops"] = quantity(ms[f"{mode}_t{t}"].ops_per_s, "ops/s")
            out[f"{mode}_t{t}_cmds_per_read"] = quantity(f[f"{mode}_t{t}_cmds_per_read"], "num",
                                                         f"{f[f'{mode}_t{t}_cmds_per_read']:.2f}")
            out[f"{mode}_t{t}_connections"] = quantity(f[f"{mode}_t{t}_connections"], "count")
    for case in HOL_CASES:
        for stat in ("p50", "p99", "max"):
            out[f"hol_{case}_{stat}"] = quantity(f[f"hol_{case}_{stat}_us"], "us")
        out[f"hol_{case}_gets"] = quantity(f[f"hol_{case}_gets"], "count")
    out["hol_reply_mb"] = quantity(f["lrange_reply_bytes"] / 1e6, "num", f"{f['lrange_reply_bytes'] / 1e6:.1f} MB")
    out["hol_lrange_server_ms"] = quantity(f["hol_separate_lrange_server_us"] / 1e3, "num",
                                           f"{f['hol_separate_lrange_server_us'] / 1e3:.1f} ms")
    out["hol_shared_vs_separate_p99"] = quantity(f["hol_shared_p99_us"] / f["hol_separate_p99_us"], "x")
    out["hol_shared_vs_alone_p99"] = quantity(f["hol_shared_p99_us"] / f["hol_alone_p99_us"], "x")
    return out


# --- 2. Valkey GLIDE: one multiplexed connection, and Batch ----------------------------------

GLIDE_SADD_N = Size(full=100_000, quick=10_000)
GLIDE_TIMEOUT_N = (100_000, 400_000)  # batches sent under the default 250 ms request timeout
GLIDE_CLUSTER_SETS = 300  # small enough that each master reads its share in one read
GLIDE_CLUSTER_CALLS = Size(full=20, quick=5)


async def glide_client(endpoint: Endpoint, **config):
    credentials = ServerCredentials(endpoint.password, endpoint.username) if endpoint.password else None
    return await GlideClient.create(GlideClientConfiguration(
        [NodeAddress(endpoint.host, endpoint.port)], database_id=endpoint.db, credentials=credentials, **config))


# --8<-- [start:glide]
async def glide_incr_gathered(client, keys: list[str]) -> None:
    # Every coroutine on the one client: GLIDE's core writes whatever is queued when the socket
    # is free, so commands issued at once leave together: pipelining nobody asked for.
    await asyncio.gather(*(client.incr(key) for key in keys))


async def glide_sadd_batch(client, keys: list[str], atomic: bool, timeout_ms: int | None = None) -> list:
    batch = Batch(is_atomic=atomic)  # atomic: MULTI … EXEC around the commands; not: a pipeline
    for key in keys:
        batch.sadd(key, ["glide"])
    # The client's request timeout (250 ms by default) covers the whole batch unless the batch has its own.
    options = BatchOptions(timeout=timeout_ms) if timeout_ms else None
    return await client.exec(batch, raise_on_error=True, options=options)


async def glide_batch_with_error(client, key: str, counter: str, raise_on_error: bool):
    batch = Batch(is_atomic=False)
    batch.set(key, "a string")
    batch.lpush(key, ["x"])  # WRONGTYPE: the key holds a string
    batch.incr(counter)  # runs whatever happened before it
    batch.get(key)
    return await client.exec(batch, raise_on_error=raise_on_error)
# --8<-- [end:glide]


def glide_connections(r: redis.Redis) -> int:
    return sum(1 for c in r.client_list() if str(c.get("lib-name", "")).startswith("Glide"))


def measure_glide_gather(endpoint: Endpoint, rtt_ms: float, n: int, repeat: int) -> Measurement:
    keys = [f"{PREFIX}gather:{i % 100}" for i in range(n)]
    with LoopThread() as loop:
        client = loop.run(glide_client(endpoint))
        counters = observe.Counters(endpoint)
        with counters.measure() as delta:
            m = measure(f"GLIDE, gather on its one client, {n:,} INCRs, +{rtt_ms:g} ms RTT",
                        lambda: loop.run(glide_incr_gathered(client, keys)), ops=n, repeat=repeat)
        counters.close()
        with endpoint.client() as r:
            connections = glide_connections(r)
        m.params.update(rtt_ms=rtt_ms, mode="GLIDE, gather on one client", connections=connections,
                        reads_per_cmd=delta.values["total_reads_processed"] / delta.values["total_commands_processed"])
        loop.run(client.close())
    return m


def measure_glide(lab, n: int, repeat: int) -> dict:
    """GLIDE's Batch on one server: n SADDs non-atomic and atomic (with the MULTI/EXEC the server
    saw), what the default request timeout does to the batch, and one WRONGTYPE inside a batch."""
    with LoopThread() as loop:
        return glide_batches(lab, loop, [f"{PREFIX}glide:sadd:{i}" for i in range(n)], repeat)


def glide_batches(lab, loop: LoopThread, keys: list[str], repeat: int) -> dict:
    n, out, run = len(keys), {}, loop.run
    client = run(glide_client(lab.endpoint))
    try:
        with lab.client() as r:
            for atomic in (False, True):
                before = observe.command_calls(r)
                m = measure(f"GLIDE Batch({'atomic' if atomic else 'non-atomic'}), {n:,} SADDs",
                            lambda atomic=atomic: run(glide_sadd_batch(client, keys, atomic, timeout_ms=60_000)),
                            ops=n, repeat=repeat, setup=lambda: delete_keys(r, keys))
                calls = observe.command_calls(r)
                m.params.update({c: (calls.get(c, 0) - before.get(c, 0)) // (repeat + 1) for c in ("sadd", "multi", "exec")})
                out["atomic" if atomic else "pipeline"] = m
            delete_keys(r, keys)
            for big in GLIDE_TIMEOUT_N:
                big_keys = [f"{PREFIX}glide:big:{i}" for i in range(big)]
                start = time.perf_counter()
                outcome = run(_outcome(glide_sadd_batch(client, big_keys, False)))
                out[f"default_timeout_{big}"] = {"outcome": outcome, "seconds": time.perf_counter() - start,
                                                 "ran": settled_count(r, big_keys)}
                delete_keys(r, big_keys)
            key, counter = f"{PREFIX}glide:wrongtype", f"{PREFIX}glide:ran"
            for raise_on_error in (True, False):
                r.delete(key, counter)
                result = run(_outcome(glide_batch_with_error(client, key, counter, raise_on_error)))
                out[f"raise_on_error_{raise_on_error}"] = {"outcome": result, "counter": int(r.get(counter) or 0)}
            r.delete(key, counter)
    finally:
        run(client.close())
    return out


async def _outcome(awaitable) -> str:
    try:
        result = await awaitable
        return "completed: " + ", ".join(type(x).__name__ if isinstance(x, Exception) else repr(x) for x in result) \
            if isinstance(result, list) and len(result) <= 10 else f"completed, {len(result):,} results"
    except Exception as err:  # GLIDE's own RequestError, TimeoutError, … are what the table shows
        return f"{type(err).__name__}: {err}"


def settled_count(r: redis.Redis, keys: list[str]) -> int:
    """How many of the keys exist once the server has stopped adding them (it runs what it was
    sent, whatever the client decided meanwhile)."""
    count = -1
    while True:
        now = sum(r.exists(*keys[i:i + 10_000]) for i in range(0, len(keys), 10_000))
        if now == count:
            return now
        count = now
        time.sleep(0.2)




async def glide_cluster_client(cluster, **config):
    credentials = ServerCredentials(cluster.password, cluster.username) if cluster.password else None
    return await GlideClusterClient.create(GlideClusterClientConfiguration(
        [NodeAddress(n.host, n.port) for n in cluster.nodes], credentials=credentials, **config))


# --8<-- [start:glide_cluster]
async def glide_cluster_batch(client, keys: list[str], atomic: bool) -> list:
    batch = ClusterBatch(is_atomic=atomic)  # non-atomic: split by slot owner, one sub-batch per master
    for key in keys:
        batch.set(key, "v")
    return await client.exec(batch, raise_on_error=True)
# --8<-- [end:glide_cluster]


def node_counters(cluster) -> list[dict]:
    out = []
    for node in cluster.nodes:
        with node.client() as c:
            stats = c.info("stats")
            out.append({"reads": int(stats["total_reads_processed"]), "set": observe.command_calls(c).get("set", 0)})
    return out


def measure_glide_cluster(cluster, sets: int, calls: int) -> dict:
    """A non-atomic ClusterBatch of `sets` SETs across slots, `calls` times: SETs and reads per master
    per call; and an atomic one across slots."""
    keys = [f"{PREFIX}glide:c:{i}" for i in range(sets)]
    with LoopThread() as loop:
        return {"sets": sets, "calls": calls, **cluster_batches(cluster, loop, keys, calls)}


def cluster_batches(cluster, loop: LoopThread, keys: list[str], calls: int) -> dict:
    run = loop.run
    client = run(glide_cluster_client(cluster))
    try:
        run(glide_cluster_batch(client, keys, False))  # warm-up: GLIDE has its slot map and connections
        idle = node_counters(cluster)  # reading the counters costs reads too: measured, then subtracted
        before = node_counters(cluster)
        for _ in range(calls):
            run(glide_cluster_batch(client, keys, False))
        after = node_counters(cluster)
        per_master = [{k: (a[k] - b[k] - (b[k] - i[k])) / calls for k in a} for i, b, a in zip(idle, before, after)]
        atomic = run(_outcome(glide_cluster_batch(client, keys, True)))
    finally:
        run(client.close())
        cluster.delete_lab_keys()
    return {"per_master": per_master, "atomic_across_slots": atomic}


def glide_table(glide: dict, cluster: dict) -> str:
    rows = []
    for tag in ("pipeline", "atomic"):
        m = glide[tag]
        rows.append([m.label, f"{m.ops_per_s:,.0f} SADDs/s ({m.ops / m.max:,.0f}–{m.ops / m.min:,.0f})",
                     f"{m.params['sadd']:,} SADD, {m.params['multi']} MULTI, {m.params['exec']} EXEC"])
    for big in GLIDE_TIMEOUT_N:
        row = glide[f"default_timeout_{big}"]
        rows.append([f"GLIDE Batch(non-atomic), {big:,} SADDs, default request timeout (250 ms)",
                     f"{row['outcome']} after {row['seconds']:.1f} s", f"{row['ran']:,} SADDs ran"])
    for flag in (True, False):
        row = glide[f"raise_on_error_{flag}"]
        rows.append([f"SET, LPUSH (WRONGTYPE), INCR, GET; raise_on_error={flag}", row["outcome"],
                     f"the INCR after the error ran {row['counter']} time(s)"])
    per_master = " / ".join(f"{m['set']:.0f} SETs in {m['reads']:.1f} reads" for m in cluster["per_master"])
    rows.append([f"ClusterBatch(non-atomic), {cluster['sets']} SETs across slots, per call", "completed", per_master])
    rows.append([f"ClusterBatch(atomic), the same {cluster['sets']} SETs", cluster["atomic_across_slots"], "–"])
    return md_table(["GLIDE", "Outcome", "What the server saw"], rows)


def glide_summary(glide: dict, cluster: dict) -> dict:
    pipe, atomic = glide["pipeline"], glide["atomic"]
    reads = [m["reads"] for m in cluster["per_master"]]
    return {"n": quantity(pipe.ops, "count"),
            "pipeline_ops": quantity(pipe.ops_per_s, "ops/s"), "atomic_ops": quantity(atomic.ops_per_s, "ops/s"),
            "pipeline_ms": quantity(pipe.median * 1e3, "ms"), "atomic_ms": quantity(atomic.median * 1e3, "ms"),
            "atomic_multi": quantity(atomic.params["multi"], "count"),
            "pipeline_multi": quantity(pipe.params["multi"], "count"),
            "raise_true": quantity(0, "count", glide["raise_on_error_True"]["outcome"]),
            "raise_true_counter": quantity(glide["raise_on_error_True"]["counter"], "count"),
            "raise_false": quantity(0, "count", glide["raise_on_error_False"]["outcome"]),
            "raise_false_counter": quantity(glide["raise_on_error_False"]["counter"], "count"),
            "cluster_sets": quantity(cluster["sets"], "count"),
            "cluster_reads_max": quantity(max(reads), "num", f"{max(reads):.1f}"),
            "cluster_sets_per_master": quantity(0, "count", " / ".join(f"{m['set']:.0f}" for m in cluster["per_master"])),
            "cluster_atomic": quantity(0, "count", cluster["atomic_across_slots"]),
            **{f"timeout_{big}{suffix}": quantity(*value) for big in GLIDE_TIMEOUT_N for suffix, value in (
                ("", (0, "count", glide[f"default_timeout_{big}"]["outcome"])),
                ("_ran", (glide[f"default_timeout_{big}"]["ran"], "count")),
                ("_s", (glide[f"default_timeout_{big}"]["seconds"], "s")))}}


def measure_watch_java(lab, increments: int, repeat: int):
    return lab.java("ch07-watch", increments, repeat, 1, ",".join(map(str, WRITERS)))


def watch_java_table(run) -> str:
    f, ms = run.facts, run.measurements()
    rows = [[w, f"{ms[f'watch_w{w}'].ops_per_s:,.0f}", f"{f[f'jedis_w{w}_aborts_per_increment']:.2f}",
             f"{f[f'blind_w{w}_lost']:,} of {ms[f'watch_w{w}'].ops:,}"] for w in WRITERS]
    return md_table(["Writers (Jedis)", "WATCH loop, increments/s", "Aborted EXECs per increment",
                     "no WATCH: increments lost"], rows)


def watch_java_summary(run) -> dict:
    f, ms = run.facts, run.measurements()
    out = {"exec_on_abort": quantity(0, "count", str(f["jedis_exec_on_abort"])),
           "reads_per_attempt": quantity(f[f"jedis_w{WRITERS[-1]}_reads_per_attempt"], "num",
                                         f"{f[f'jedis_w{WRITERS[-1]}_reads_per_attempt']:.1f}")}
    for w in WRITERS:
        out[f"w{w}_ops"] = quantity(ms[f"watch_w{w}"].ops_per_s, "ops/s")
        out[f"w{w}_aborts"] = quantity(f[f"jedis_w{w}_aborts_per_increment"], "num",
                                       f"{f[f'jedis_w{w}_aborts_per_increment']:.2f}")
        out[f"w{w}_lost"] = quantity(f[f"blind_w{w}_lost"], "count")
    return out


# --- what the sources published, and the figures that answer them ---------------------------

PUBLISHED = {k: CH01_PUBLISHED[k] for k in ("vivo_jedis_pipeline_ms", "vivo_redisson_rbatch_ms")}
CLAIMS = [
    Claim("100,000 SADD, GLIDE Batch, non-atomic (Python), against Jedis Pipeline", "ch07/glide", "pipeline_ms", "ms",
          PUBLISHED["vivo_jedis_pipeline_ms"]),
    Claim("100,000 SADD, GLIDE Batch, non-atomic (Python), against Redisson RBatch", "ch07/glide", "pipeline_ms",
          "ms", PUBLISHED["vivo_redisson_rbatch_ms"]),
    Claim("100,000 SADD, GLIDE Batch, non-atomic (Java), against Jedis Pipeline", "ch07/glide-java", "batch_ms", "ms",
          PUBLISHED["vivo_jedis_pipeline_ms"]),
]
