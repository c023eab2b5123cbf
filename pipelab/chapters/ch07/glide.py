"""Section 3: Valkey GLIDE (Python): gather on one multiplexed client and its cap on requests in flight, Batch,
raise_on_error, the default timeout, ClusterBatch.

The harness only: what runs on the clients (the gather, the batches, the requests in flight, the
ClusterBatch) is the notebook's cells tagged code:glide_gather, code:glide, code:inflight and
code:glide_cluster, passed in by the notebook."""

from __future__ import annotations

import time
from importlib.metadata import version
from pathlib import Path

import redis
import redis.asyncio
from glide import (
    AdvancedGlideClientConfiguration,
    AdvancedGlideClusterClientConfiguration,
    GlideClient,
    GlideClientConfiguration,
    GlideClusterClient,
    GlideClusterClientConfiguration,
    Logger,
    LogLevel,
    NodeAddress,
    ServerCredentials,
    TlsAdvancedConfiguration,
)

from ... import observe
from ...measure import Measurement, measure
from ...params import Size
from ...results import md_table, median_figure, quantity, rate_figure
from ...server import Endpoint
from ..ch01 import delete_keys
from .common import PREFIX, LoopThread

GLIDE_SADD_N = Size(full=100_000, quick=10_000)
GLIDE_TIMEOUT_N = (100_000, 400_000)  # batches sent under the default 250 ms request timeout
GLIDE_CLUSTER_SETS = 300  # small enough that each master reads its share in one read
GLIDE_CLUSTER_CALLS = Size(full=20, quick=5)
GLIDE_INFLIGHT_N = (1_001, 10_000)  # requests gathered on one client: just past, and far past, the core's 1,000
GLIDE_HOLD_S = 2.0  # the BLPOP that keeps every request behind it in flight: longer than gathering 10,000 takes, with room for a busy machine


def glide_connection(endpoint: Endpoint, advanced=AdvancedGlideClientConfiguration) -> dict:
    """Credentials, TLS and its CA as the URL names them, in GLIDE's configuration words."""
    config: dict = {
        "credentials": ServerCredentials(endpoint.password, endpoint.username) if endpoint.password else None
    }
    if endpoint.tls:
        config["use_tls"] = True
        if endpoint.ca_file:
            pem = Path(endpoint.ca_file).read_bytes()
            config["advanced_config"] = advanced(tls_config=TlsAdvancedConfiguration(root_pem_cacerts=pem))
    return config


async def glide_client(endpoint: Endpoint, **config):
    return await GlideClient.create(
        GlideClientConfiguration(
            [NodeAddress(endpoint.host, endpoint.port)], database_id=endpoint.db, **glide_connection(endpoint), **config
        )
    )


def glide_connections(r: redis.Redis) -> int:
    return sum(1 for c in r.client_list() if str(c.get("lib-name", "")).startswith("Glide"))


def measure_glide_gather(endpoint: Endpoint, rtt_ms: float, n: int, repeat: int, glide_incr_gathered) -> Measurement:
    """The notebook's `glide_incr_gathered(client, keys)` of n INCRs on one GLIDE client."""
    keys = [f"{PREFIX}gather:{i % 100}" for i in range(n)]
    with LoopThread() as loop:
        client = loop.run(glide_client(endpoint))
        counters = observe.Counters(endpoint)
        with counters.measure() as delta:
            m = measure(
                f"GLIDE, gather on its one client, {n:,} INCRs, +{rtt_ms:g} ms RTT",
                lambda: loop.run(glide_incr_gathered(client, keys)),
                ops=n,
                repeat=repeat,
            )
        counters.close()
        with endpoint.client() as r:
            connections = glide_connections(r)
        m.params.update(
            rtt_ms=rtt_ms,
            mode="GLIDE, gather on one client",
            connections=connections,
            reads_per_cmd=delta.values["total_reads_processed"] / delta.values["total_commands_processed"],
        )
        loop.run(client.close())
    return m


def measure_glide(lab, n: int, repeat: int, glide_sadd_batch, glide_batch_with_error, glide_gather_outcome) -> dict:
    """GLIDE's Batch on one server, through the notebook's functions: n SADDs non-atomic and atomic (with
    the MULTI/EXEC the server saw), what the default request timeout does to the batch, and one WRONGTYPE
    inside a batch; then the core's cap on requests in flight, and the version of the package that ran."""
    with LoopThread() as loop:
        keys = [f"{PREFIX}glide:sadd:{i}" for i in range(n)]
        out = glide_batches(lab, loop, keys, repeat, glide_sadd_batch, glide_batch_with_error)
        out["inflight"] = glide_inflight(lab, loop, GLIDE_INFLIGHT_N, GLIDE_HOLD_S, glide_gather_outcome)
    out["glide_version"] = version("valkey-glide")
    return out


def glide_inflight(lab, loop: LoopThread, sizes: tuple[int, ...], hold_s: float, glide_gather_outcome) -> dict:
    """Gathers of each size on a default client, as they come and behind a BLPOP of hold_s; the
    largest again behind the BLPOP with inflight_requests_limit raised to its size."""
    # The requests behind the BLPOP wait for it: a request timeout longer than hold_s keeps them.
    waiting = {"request_timeout": int(hold_s * 1000) + 10_000}
    cases = [(f"free_{n}", n, 0, {}) for n in sizes] + [(f"held_{n}", n, hold_s, waiting) for n in sizes]
    cases.append((f"raised_{sizes[-1]}", sizes[-1], hold_s, {**waiting, "inflight_requests_limit": sizes[-1]}))
    out = {}
    Logger.set_logger_config(LogLevel.ERROR)  # the core warns of each refusal; the results count them
    try:
        for tag, n, hold, config in cases:
            client = loop.run(glide_client(lab.endpoint, **config))
            try:
                out[tag] = loop.run(glide_gather_outcome(client, n, hold))
            finally:
                loop.run(client.close())
    finally:
        Logger.set_logger_config(LogLevel.WARN)
    with lab.client() as r:
        r.delete(*{f"{PREFIX}glide:inflight:{i % 100}" for i in range(max(sizes))})
    return out


def glide_batches(
    lab, loop: LoopThread, keys: list[str], repeat: int, glide_sadd_batch, glide_batch_with_error
) -> dict:
    n, out, run = len(keys), {}, loop.run
    client = run(glide_client(lab.endpoint))
    try:
        with lab.client() as r:
            for atomic in (False, True):
                before = observe.command_calls(r)
                m = measure(
                    f"GLIDE Batch({'atomic' if atomic else 'non-atomic'}), {n:,} SADDs",
                    lambda atomic=atomic: run(glide_sadd_batch(client, keys, atomic, timeout_ms=60_000)),
                    ops=n,
                    repeat=repeat,
                    setup=lambda: delete_keys(r, keys),
                )
                calls = observe.command_calls(r)
                m.params.update({c: (calls.get(c, 0) - before.get(c, 0)) // m.calls for c in ("sadd", "multi", "exec")})
                out["atomic" if atomic else "pipeline"] = m
            delete_keys(r, keys)
            for big in GLIDE_TIMEOUT_N:
                big_keys = [f"{PREFIX}glide:big:{i}" for i in range(big)]
                start = time.perf_counter()
                outcome = run(_outcome(glide_sadd_batch(client, big_keys, False)))
                out[f"default_timeout_{big}"] = {
                    "outcome": outcome,
                    "seconds": time.perf_counter() - start,
                    "ran": settled_count(r, big_keys),
                }
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
        return (
            "completed: " + ", ".join(type(x).__name__ if isinstance(x, Exception) else repr(x) for x in result)
            if isinstance(result, list) and len(result) <= 10
            else f"completed, {len(result):,} results"
        )
    except Exception as err:  # GLIDE's own RequestError, TimeoutError, … are what the table shows
        return f"{type(err).__name__}: {err}"


def settled_count(r: redis.Redis, keys: list[str]) -> int:
    """How many of the keys exist once the server has stopped adding them (it runs what it was
    sent, whatever the client decided meanwhile)."""
    count = -1
    while True:
        now = sum(r.exists(*keys[i : i + 10_000]) for i in range(0, len(keys), 10_000))
        if now == count:
            return now
        count = now
        time.sleep(0.2)


async def glide_cluster_client(cluster, **config):
    return await GlideClusterClient.create(
        GlideClusterClientConfiguration(
            [NodeAddress(n.host, n.port) for n in cluster.nodes],
            **glide_connection(cluster.nodes[0], AdvancedGlideClusterClientConfiguration),
            **config,
        )
    )


def node_counters(cluster) -> list[dict]:
    out = []
    for node in cluster.nodes:
        with node.client() as c:
            stats = c.info("stats")
            out.append({"reads": int(stats["total_reads_processed"]), "set": observe.command_calls(c).get("set", 0)})
    return out


def measure_glide_cluster(cluster, sets: int, calls: int, glide_cluster_batch) -> dict:
    """The notebook's `glide_cluster_batch`: a non-atomic ClusterBatch of `sets` SETs across slots, `calls`
    times: SETs and reads per master per call; and an atomic one across slots."""
    keys = [f"{PREFIX}glide:c:{i}" for i in range(sets)]
    with LoopThread() as loop:
        return {"sets": sets, "calls": calls, **cluster_batches(cluster, loop, keys, calls, glide_cluster_batch)}


def cluster_batches(cluster, loop: LoopThread, keys: list[str], calls: int, glide_cluster_batch) -> dict:
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
        rows.append(
            [
                m.label,
                f"{m.ops_per_s:,.0f} SADDs/s ({m.ops / m.max:,.0f}–{m.ops / m.min:,.0f})",
                f"{m.params['sadd']:,} SADD, {m.params['multi']} MULTI, {m.params['exec']} EXEC",
            ]
        )
    for big in GLIDE_TIMEOUT_N:
        row = glide[f"default_timeout_{big}"]
        rows.append(
            [
                f"GLIDE Batch(non-atomic), {big:,} SADDs, default request timeout (250 ms)",
                f"{row['outcome']} after {row['seconds']:.1f} s",
                f"{row['ran']:,} SADDs ran",
            ]
        )
    for flag in (True, False):
        row = glide[f"raise_on_error_{flag}"]
        rows.append(
            [
                f"SET, LPUSH (WRONGTYPE), INCR, GET; raise_on_error={flag}",
                row["outcome"],
                f"the INCR after the error ran {row['counter']} time(s)",
            ]
        )
    per_master = " / ".join(f"{m['set']:.0f} SETs in {m['reads']:.1f} reads" for m in cluster["per_master"])
    rows.append([f"ClusterBatch(non-atomic), {cluster['sets']} SETs across slots, per call", "completed", per_master])
    rows.append([f"ClusterBatch(atomic), the same {cluster['sets']} SETs", cluster["atomic_across_slots"], "–"])
    for tag, row in glide["inflight"].items():
        how = {"free": "as they come", "held": f"behind a {GLIDE_HOLD_S:g} s BLPOP", "raised": "the same, limit raised"}
        rows.append(
            [
                f"{row['n']:,} requests gathered on one client, {how[tag.split('_')[0]]}",
                f"{row['failed']:,} refused" + (f": {row['error']}" if row["error"] else ""),
                "–",
            ]
        )
    return md_table(["GLIDE", "Outcome", "What the server saw"], rows)


def glide_summary(glide: dict, cluster: dict) -> dict:
    pipe, atomic = glide["pipeline"], glide["atomic"]
    reads = [m["reads"] for m in cluster["per_master"]]
    return {
        "n": quantity(pipe.ops, "count"),
        "pipeline_ops": rate_figure(pipe),
        "atomic_ops": rate_figure(atomic),
        "pipeline_ms": median_figure(pipe, "ms"),
        "atomic_ms": median_figure(atomic, "ms"),
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
        "glide_version": quantity(0, "count", glide["glide_version"]),
        **inflight_summary(glide["inflight"]),
        **{
            f"timeout_{big}{suffix}": quantity(*value)
            for big in GLIDE_TIMEOUT_N
            for suffix, value in (
                ("", (0, "count", glide[f"default_timeout_{big}"]["outcome"])),
                ("_ran", (glide[f"default_timeout_{big}"]["ran"], "count")),
                ("_s", (glide[f"default_timeout_{big}"]["seconds"], "s")),
            )
        },
    }


def inflight_summary(inflight: dict) -> dict:
    """Per gather, the requests refused; the error of the largest held one; what the cap admitted."""
    top = max(row["n"] for row in inflight.values())
    held = inflight[f"held_{top}"]
    out = {f"inflight_{tag}_failed": quantity(row["failed"], "count") for tag, row in inflight.items()}
    out["inflight_error"] = quantity(0, "count", held["error"] or "none")
    out["inflight_admitted"] = quantity(top - held["failed"], "count")
    out["inflight_hold_s"] = quantity(GLIDE_HOLD_S, "s", f"{GLIDE_HOLD_S:g} s")
    return out
