"""The Python side of each benchmark: the code the site shows beside its Java twin."""
from __future__ import annotations

import time

import redis


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


# --8<-- [start:redispy_modes]
def sadd_transaction(r: redis.Redis, keys: list[str], member: str = "py") -> None:
    # pipeline()'s default: the queued commands go out wrapped in MULTI ... EXEC.
    pipe = r.pipeline()
    for key in keys:
        pipe.sadd(key, member)
    added = pipe.execute()
    assert sum(added) == len(keys)


def pure_python_client(host: str, port: int) -> redis.Redis:
    # The same client with redis-py's own parser instead of hiredis. redis-py 8 speaks RESP3
    # (HELLO 3) by default, so its pure-Python parser for that protocol is _RESP3Parser.
    from redis._parsers import _RESP3Parser

    pool = redis.ConnectionPool(host=host, port=port, parser_class=_RESP3Parser)
    return redis.Redis(connection_pool=pool)
# --8<-- [end:redispy_modes]
