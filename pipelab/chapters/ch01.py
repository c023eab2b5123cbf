"""Chapter 1, round-trip time: what a round trip costs, and what pipelining saves of it.
The workloads the site shows beside their Java twins (PingBench, SaddBench)."""
from __future__ import annotations

import socket

import redis

from ..resp import encode, read_replies
from .claims import Claim, Published, derived


# --8<-- [start:ping]
def ping_one_by_one(r: redis.Redis, n: int) -> None:
    # Each call writes one PING and blocks until its PONG is back: n round trips.
    for _ in range(n):
        r.ping()


def ping_pipelined(r: redis.Redis, n: int) -> None:
    # transaction=False: a plain pipeline; the default would wrap it in MULTI/EXEC.
    pipe = r.pipeline(transaction=False)
    for _ in range(n):
        pipe.ping()
    replies = pipe.execute()  # one write of n commands, then n replies read back
    assert len(replies) == n and all(replies)
# --8<-- [end:ping]


# --8<-- [start:sadd]
def sadd_keys(n: int, prefix: str = "pipelab:ch01:sadd:") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def sadd_one_by_one(r: redis.Redis, keys: list[str], member: str = "py") -> None:
    for key in keys:
        r.sadd(key, member)


def sadd_pipelined(r: redis.Redis, keys: list[str], member: str = "py") -> None:
    pipe = r.pipeline(transaction=False)
    for key in keys:
        pipe.sadd(key, member)
    added = pipe.execute()
    assert sum(added) == len(keys), "every SADD should add its member to an empty key"
# --8<-- [end:sadd]


def delete_keys(r: redis.Redis, keys: list[str], batch: int = 10_000) -> None:
    """Remove exactly these keys (the benchmark's own), in pipelined batches."""
    for start in range(0, len(keys), batch):
        r.unlink(*keys[start:start + batch])


# --8<-- [start:three_pings]
def three_pings(host: str, port: int) -> tuple[bytes, list[bytes]]:
    request = encode("PING") * 3  # three commands, one buffer
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(request)  # one write: the server finds all three in one read
        replies = read_replies(sock, 3)  # three +PONG, in order
    return request, replies
# --8<-- [end:three_pings]


def inline_ping(host: str, port: int) -> bytes:
    """The inline form `PING\\r\\n` that `printf | nc` sends works too."""
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(b"PING\r\n")
        return read_replies(sock, 1)[0]


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


def vivo_ms_per_command() -> float:
    """vivo's one-by-one total over its 100,000 commands: the round trip each one paid."""
    return PUBLISHED["vivo_jedis_one_by_one_ms"].value / 100_000


def vivo_pipeline_speedup() -> float:
    return PUBLISHED["vivo_jedis_one_by_one_ms"].value / PUBLISHED["vivo_jedis_pipeline_ms"].value


PING_SPEEDUP = derived(ping_speedup(), "x", "redis.io's 1.185 s / 0.251 s")
CLAIMS = [
    Claim("10,000 PINGs one by one (redis-py)", "ch01/ping-10k", "python_unpipelined_s", "s",
          PUBLISHED["ping_10k_unpipelined_s"]),
    Claim("10,000 PINGs pipelined (redis-py)", "ch01/ping-10k", "python_pipelined_s", "s",
          PUBLISHED["ping_10k_pipelined_s"]),
    Claim("Pipelining speed-up, 10,000 PINGs (redis-py)", "ch01/ping-10k", "python_speedup", "x", PING_SPEEDUP),
    Claim("Pipelining speed-up, 10,000 PINGs (Jedis)", "ch01/ping-10k", "jedis_speedup", "x", PING_SPEEDUP),
    Claim("100,000 SADD one by one (Jedis)", "ch01/sadd-100k", "jedis_one_by_one_ms", "ms",
          PUBLISHED["vivo_jedis_one_by_one_ms"]),
    Claim("100,000 SADD, Jedis Pipeline", "ch01/sadd-100k", "jedis_pipeline_ms", "ms",
          PUBLISHED["vivo_jedis_pipeline_ms"]),
    Claim("100,000 SADD, Redisson RBatch", "ch01/sadd-100k", "redisson_rbatch_ms", "ms",
          PUBLISHED["vivo_redisson_rbatch_ms"]),
    Claim("Pipelining speed-up, 100,000 SADD (Jedis)", "ch01/sadd-100k", "jedis_speedup", "x",
          derived(vivo_pipeline_speedup(), "x", "vivo's 162,655 ms / 504 ms")),
    Claim("Time per SADD one by one (Jedis)", "ch01/sadd-100k", "per_command_us", "us",
          derived(vivo_ms_per_command() * 1000, "us", "vivo's 162,655 ms / 100,000")),
    Claim("Single requests/s at 250 ms RTT", "ch01/rtt-sweep", "single_ops_at_250ms", "ops/s",
          PUBLISHED["rtt_250ms_max_rps"]),
]
