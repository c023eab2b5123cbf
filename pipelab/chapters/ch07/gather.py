"""Section 1: redis.asyncio's gather on pools of 1, 10 and 100 connections against one pipeline, and what
redis-py 8's default pool of 100 connections does with more callers, sync and async.

The harness only: the gathered INCRs, the pipeline, the pool and the threads past it are the notebook's
cells tagged code:gather and code:pool_cap, passed in by the notebook."""

from __future__ import annotations

import asyncio
import time

import redis
import redis.asyncio

from ... import observe
from ...measure import Measurement, measure
from ...params import Size
from ...results import md_table, quantity, rate_figure, ratio_figure
from ...server import Endpoint
from .common import PREFIX, LoopThread

GATHER_N = Size(full=1_000, quick=200)  # commands per call
GATHER_RTTS = (0, 1)  # ms injected by toxiproxy; 1 ms only where it runs
POOLS = (1, 10, 100)  # max_connections of the pool the gathered coroutines share; 100 is the default
DEFAULT_POOL_N = 1_000  # coroutines gathered on a default client: more than its pool's 100 connections
POOL_CAP_THREADS = 101  # threads on one default sync client: one more than its pool's 100 connections
POOL_HOLD_S = 0.5  # each thread's BLPOP keeps its connection this long, so all 101 want one at once


def count_pool_requests(client) -> list[int]:
    """Counts the client's calls to its pool's get_connection: were a refusal retried, the retry
    would ask the pool again."""
    pool, asked = client.connection_pool, [0]
    take = pool.get_connection

    def counted(*args, **kwargs):
        asked[0] += 1
        return take(*args, **kwargs)  # for redis.asyncio, the coroutine its caller awaits

    pool.get_connection = counted
    return asked


def threads_past_the_pool(r: redis.Redis, threads: int, hold_s: float, blpop_in_threads) -> dict:
    """The notebook's `blpop_in_threads(r, threads, hold_s)` on client `r` (closed after): how it ended,
    and how often it asked r's pool for a connection."""
    asked = count_pool_requests(r)
    failures = blpop_in_threads(r, threads, hold_s)
    opened = r.connection_pool._created_connections
    r.close()
    return pool_outcome(threads, failures, asked[0], opened, r.get_retry())


def pool_outcome(n: int, failures: list, asked: int, opened: int, retry) -> dict:
    errors = [err for err, _ in failures]
    first = errors[0] if errors else None
    return {
        "n": n,
        "failed": len(errors),
        "outcome": f"{len(errors):,} of {n:,} failed with {type(first).__name__}: {first}" if first else "completed",
        "is_connection_error": all(isinstance(e, redis.ConnectionError) for e in errors) and bool(errors),
        "pool_requests": asked,  # n when no command asked twice
        "connections": opened,
        "default_retries": retry.get_retries() if retry else 0,  # what the client's Retry would allow
        "failed_after_ms": 1000 * max((s for _, s in failures), default=0.0),
    }


def default_pool_outcome(endpoint: Endpoint, n: int) -> dict:
    """What gather does with more coroutines than the default pool's 100 connections."""

    async def attempt():
        r = endpoint.async_client()
        asked = count_pool_requests(r)

        async def timed(i):
            began = time.perf_counter()
            try:
                await r.incr(f"{PREFIX}gather:default:{i}")
            except redis.RedisError as err:
                return err, time.perf_counter() - began

        try:
            failures = [f for f in await asyncio.gather(*(timed(i) for i in range(n))) if f]
            opened = len(r.connection_pool._available_connections) + len(r.connection_pool._in_use_connections)
        finally:
            await r.aclose()
        return pool_outcome(n, failures, asked[0], opened, r.get_retry())

    with LoopThread() as loop:
        return loop.run(attempt())


def measure_gather(
    endpoint: Endpoint, rtt_ms: float, n: int, repeat: int, incr_gathered, incr_pipelined, gather_client
) -> dict[str, Measurement]:
    """{mode: Measurement} of n INCRs, the notebook's `incr_gathered` on its `gather_client(endpoint, c)`
    for pools of 1, 10 and 100 connections, and its `incr_pipelined`, with the connections each mode
    opened and the server's reads per command as params."""
    keys = [f"{PREFIX}gather:{i % 100}" for i in range(n)]
    out = {}
    with LoopThread() as loop:
        modes = {f"gather, pool of {c}": (gather_client(endpoint, c), incr_gathered) for c in POOLS}
        modes["one pipeline"] = (endpoint.async_client(), incr_pipelined)
        for mode, (client, workload) in modes.items():
            counters = observe.Counters(endpoint)
            with counters.measure() as delta:
                m = measure(
                    f"{mode}, {n:,} INCRs, +{rtt_ms:g} ms RTT",
                    lambda: loop.run(workload(client, keys)),
                    ops=n,
                    repeat=repeat,
                )
            counters.close()
            pool = client.connection_pool
            m.params.update(
                rtt_ms=rtt_ms,
                mode=mode,
                connections=len(pool._available_connections) + len(pool._in_use_connections),
                reads_per_cmd=delta.values["total_reads_processed"] / delta.values["total_commands_processed"],
            )
            out[mode] = m
            loop.run(client.aclose())
    return out


def gather_table(runs: dict[tuple[float, str], Measurement]) -> str:
    rows = [
        [
            f"+{rtt:g} ms",
            mode,
            m.params["connections"],
            f"{m.params['reads_per_cmd']:.3f}",
            f"{m.ops_per_s:,.0f}",
            f"{m.per_op_us:,.1f} µs",
        ]
        for (rtt, mode), m in runs.items()
    ]
    return md_table(["RTT", "Mode", "Connections opened", "Server reads per command", "INCRs/s", "per INCR"], rows)


def gather_tag(mode: str) -> str:
    return {"one pipeline": "pipeline", "GLIDE, gather on one client": "glide"}.get(
        mode
    ) or f"pool{mode.rsplit(' ', 1)[1]}"


def gather_summary(runs: dict[tuple[float, str], Measurement], pools: dict, n: int, default_n: int) -> dict:
    """pools: {"default": default_pool_outcome(...), "sync": threads_past_the_pool(...)}."""
    out = {"n": quantity(n, "count"), "default_n": quantity(default_n, "count")}
    for prefix, row in pools.items():
        out[f"{prefix}_pool"] = quantity(0, "count", row["outcome"])
        out[f"{prefix}_pool_failed"] = quantity(row["failed"], "count")
        out[f"{prefix}_pool_requests_per_cmd"] = quantity(
            row["pool_requests"] / row["n"], "num", f"{row['pool_requests'] / row['n']:.2f}"
        )
        out[f"{prefix}_pool_failed_ms"] = quantity(row["failed_after_ms"], "ms")
        out[f"{prefix}_pool_retries"] = quantity(row["default_retries"], "count")
        out[f"{prefix}_pool_connections"] = quantity(row["connections"], "count")
    out["sync_threads"] = quantity(pools["sync"]["n"], "count")
    for (rtt, mode), m in runs.items():
        tag = f"rtt{rtt:g}_{gather_tag(mode)}"
        out[f"{tag}_ops"] = rate_figure(m)
        out[f"{tag}_reads_per_cmd"] = quantity(m.params["reads_per_cmd"], "num", f"{m.params['reads_per_cmd']:.3f}")
    for rtt in {rtt for rtt, _ in runs}:
        pipe = runs[(rtt, "one pipeline")]
        for mode in (mode for r, mode in runs if r == rtt and mode != "one pipeline"):
            other = runs[(rtt, mode)]
            out[f"rtt{rtt:g}_pipeline_vs_{gather_tag(mode)}"] = ratio_figure(other, pipe, pipe.ops / other.ops)
    return out
