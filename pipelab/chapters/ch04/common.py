"""Chapter 4's shared parts: its key prefix, a client that never retries, and building a long list."""

from __future__ import annotations

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ...server import PREFIX as LAB_PREFIX
from ...server import Endpoint

PREFIX = LAB_PREFIX + "ch04:"


def no_retry_client(endpoint: Endpoint, **kwargs) -> redis.Redis:
    """redis-py 8 retries connection errors and timeouts 10 times by default; this client does not."""
    return endpoint.client(retry=Retry(NoBackoff(), 0), **kwargs)


def restore_oldest(r: redis.Redis, key: str, length: int, count: int) -> None:
    """Put back the `count` oldest items the last drop removed (untimed set-up between repetitions)."""
    if r.llen(key) == length - count:
        r.rpush(key, *(f"item:{i}" for i in range(length - count, length)))
    assert r.llen(key) == length and r.lindex(key, -1) == f"item:{length - 1}".encode()
