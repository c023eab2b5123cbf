"""Section 1: redis.asyncio's gather on pools of 1, 10 and 100 connections against one pipeline."""

from __future__ import annotations

import asyncio

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
    pool = redis.asyncio.BlockingConnectionPool(
        **endpoint.connection_kwargs(redis.asyncio.SSLConnection),  # host, port, login, TLS
        max_connections=connections,
        timeout=20,
    )
    return redis.asyncio.Redis(connection_pool=pool)


# --8<-- [end:gather]


def default_pool_outcome(endpoint: Endpoint, n: int) -> str:
    """What gather does with more coroutines than the default pool's 100 connections."""

    async def attempt():
        r = endpoint.async_client()
        try:
            done = await asyncio.gather(
                *(r.incr(f"{PREFIX}gather:default:{i}") for i in range(n)), return_exceptions=True
            )
        finally:
            await r.aclose()
        failed = [e for e in done if isinstance(e, BaseException)]
        return (
            f"{len(failed):,} of {n:,} failed with {type(failed[0]).__name__}: {failed[0]}" if failed else "completed"
        )

    with LoopThread() as loop:
        return loop.run(attempt())


def measure_gather(endpoint: Endpoint, rtt_ms: float, n: int, repeat: int) -> dict[str, Measurement]:
    """{mode: Measurement} of n INCRs gathered on pools of 1, 10 and 100 connections, and pipelined,
    with the connections each mode opened and the server's reads per command as params."""
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


def gather_summary(runs: dict[tuple[float, str], Measurement], default_outcome: str, n: int, default_n: int) -> dict:
    out = {
        "n": quantity(n, "count"),
        "default_n": quantity(default_n, "count"),
        "default_pool": quantity(0, "count", default_outcome),
    }
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
