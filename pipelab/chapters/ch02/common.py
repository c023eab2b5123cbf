"""Chapter 2's workload: SETs sent a batch at a time (sections 1 and 2 measure it)."""

from __future__ import annotations

import redis

from .parameters import SET_KEY


# --8<-- [start:depth]
def set_in_batches(r: redis.Redis, n: int, depth: int, key: str = SET_KEY) -> None:
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
