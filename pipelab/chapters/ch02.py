"""Chapter 2, system calls: what the server and the client do per command, and per batch."""
from __future__ import annotations

import socket
import time

import redis

from ..resp import encode, read_bytes
from .ch01 import ping_pipelined
from .claims import Claim, Published


# --8<-- [start:depth]
def set_in_batches(r: redis.Redis, n: int, depth: int, key: str = "pipelab:ch02:set") -> None:
    # n SETs sent `depth` at a time: one write and one wait per batch (depth 1 = a round trip each).
    pipe = r.pipeline(transaction=False)
    sent = 0
    while sent < n:
        batch = min(depth, n - sent)
        for _ in range(batch):
            pipe.set(key, "xxx")
        replies = pipe.execute()
        assert len(replies) == batch
        sent += batch
# --8<-- [end:depth]


# --8<-- [start:batches]
def get_in_batches(r: redis.Redis, n: int, batch: int, key: str) -> None:
    # n GETs of one value; the server must hold every reply of a batch until the client reads it.
    pipe = r.pipeline(transaction=False)
    done = 0
    while done < n:
        size = min(batch, n - done)
        for _ in range(size):
            pipe.get(key)
        pipe.execute()
        done += size
# --8<-- [end:batches]


def ping_latencies(r: redis.Redis, n: int) -> list[float]:
    """Seconds per PING, each timed on its own (one round trip each)."""
    out = []
    for _ in range(n):
        start = time.perf_counter()
        r.ping()
        out.append(time.perf_counter() - start)
    return out


def pipelined_latencies(r: redis.Redis, n: int, depth: int) -> list[float]:
    """Seconds per PING amortised over batches of `depth`: what each command costs when pipelined."""
    out = []
    for _ in range(n // depth):
        start = time.perf_counter()
        ping_pipelined(r, depth)
        out.append((time.perf_counter() - start) / depth)
    return out


# --8<-- [start:raw]
def pings_one_write(sock: socket.socket, n: int) -> None:
    sock.sendall(encode("PING") * n)  # every command in one buffer, one write
    read_bytes(sock, len(b"+PONG\r\n") * n)


def pings_many_writes(sock: socket.socket, n: int) -> None:
    one = encode("PING")
    for _ in range(n):
        sock.sendall(one)  # still no waiting, but one write per command
    read_bytes(sock, len(b"+PONG\r\n") * n)


def pings_round_trips(sock: socket.socket, n: int) -> None:
    one = encode("PING")
    for _ in range(n):
        sock.sendall(one)
        read_bytes(sock, len(b"+PONG\r\n"))  # wait for each reply: no pipelining
# --8<-- [end:raw]


# --- what the sources published, and the figures that answer them ---------------------------

PUBLISHED = {
    "plateau_gain": Published(10.0, "x", "redis.io: throughput grows almost linearly with pipeline length, "
                                         "up to 10x the baseline"),
    "batch_time_ratio": Published(1.0, "x", "redis.io: in batches of about 10k commands the speed is nearly the same"),
    "reads_per_unpipelined_command": Published(1.0, "num", "redis.io: each unpipelined command costs a read() "
                                                           "and a write()"),
}
CLAIMS = [
    Claim("Server read() calls per command, depth 1", "ch02/syscalls", "reads_per_cmd_depth1", "num",
          PUBLISHED["reads_per_unpipelined_command"]),
    Claim("Throughput at the plateau ÷ depth 1 (redis-py)", "ch02/depth", "redispy_gain", "x",
          PUBLISHED["plateau_gain"]),
    Claim("Throughput at the plateau ÷ depth 1 (Jedis)", "ch02/depth", "jedis_gain", "x", PUBLISHED["plateau_gain"]),
    Claim("Throughput at the plateau ÷ depth 1 (redis-benchmark)", "ch02/depth", "benchmark_gain", "x",
          PUBLISHED["plateau_gain"]),
    Claim("Time of one pipeline ÷ time in 10k batches (largest job)", "ch02/batches", "time_ratio", "x",
          PUBLISHED["batch_time_ratio"]),
]
