"""Chapter 4's shared parts: its key prefix, a client that never retries, and building a long list."""
from __future__ import annotations

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ...server import Endpoint
from ...server import PREFIX as LAB_PREFIX


PREFIX = LAB_PREFIX + "ch04:"


def no_retry_client(endpoint: Endpoint, **kwargs) -> redis.Redis:
    """redis-py 8 retries connection errors and timeouts 10 times by default; this client does not."""
    return endpoint.client(retry=Retry(NoBackoff(), 0), **kwargs)


# --8<-- [start:lrem]
def build_list(r: redis.Redis, key: str, length: int, chunk: int = 10_000) -> None:
    # item:0 is the newest (head), item:<length-1> the oldest (tail), as with LPUSH-ed events.
    r.unlink(key)
    for start in range(0, length, chunk):
        r.rpush(key, *(f"item:{i}" for i in range(start, min(start + chunk, length))))


def drop_oldest_lrem(r: redis.Redis, key: str, length: int, count: int) -> None:
    # Remove the `count` oldest items by value. LREM with count 0 removes every occurrence,
    # so it reads the whole list for each command: O(N) however few items go.
    pipe = r.pipeline(transaction=False)
    for i in range(count):
        pipe.lrem(key, 0, f"item:{length - 1 - i}")
    assert pipe.execute() == [1] * count


def drop_oldest_ltrim(r: redis.Redis, key: str, count: int) -> None:
    # The same job by position: keep everything but the last element. LTRIM costs what it
    # removes (one element here), whatever the list's length.
    pipe = r.pipeline(transaction=False)
    for _ in range(count):
        pipe.ltrim(key, 0, -2)
    pipe.execute()
# --8<-- [end:lrem]


def restore_oldest(r: redis.Redis, key: str, length: int, count: int) -> None:
    """Put back the `count` oldest items the last drop removed (untimed set-up between repetitions)."""
    if r.llen(key) == length - count:
        r.rpush(key, *(f"item:{i}" for i in range(length - count, length)))
    assert r.llen(key) == length and r.lindex(key, -1) == f"item:{length - 1}".encode()
