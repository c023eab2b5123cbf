"""The Python side of each benchmark: the code the site shows beside its Java twin."""
from __future__ import annotations

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
