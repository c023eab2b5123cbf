"""Chapter 3, client internals: what each client's pipelining modes send."""
from __future__ import annotations

import redis
from . import ch01
from .claims import Claim, Published, derived


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


# --- what the sources published, and the figures that answer them ---------------------------

JMH = "redis-client-benchmark: JMH, ops/ms, one command per call (setup not stated)"
PUBLISHED = {
    "jmh_pool8_10": Published(61.417, "num", JMH),
    "jmh_pool8_50": Published(72.563, "num", JMH),
    "jmh_lettuce_10": Published(77.678, "num", JMH),
    "jmh_lettuce_50": Published(369.844, "num", JMH),
    "jmh_spring_50": Published(381.857, "num", JMH),
}


def vivo_rbatch_over_pipeline() -> float:
    return ch01.PUBLISHED["vivo_redisson_rbatch_ms"].value / ch01.PUBLISHED["vivo_jedis_pipeline_ms"].value


CLAIMS = [
    Claim("Redisson RBatch time ÷ Jedis Pipeline time, 100,000 SADD", "ch03/sadd", "redisson_vs_jedis", "x",
          derived(vivo_rbatch_over_pipeline(), "x", "vivo's 1,399 ms / 504 ms")),
    Claim("JedisPool(8), 10 threads, ops/ms", "ch03/jmh", "pool8_10_loopback", "num", PUBLISHED["jmh_pool8_10"]),
    Claim("JedisPool(8), 50 threads, ops/ms", "ch03/jmh", "pool8_50_loopback", "num", PUBLISHED["jmh_pool8_50"]),
    Claim("One shared Lettuce connection, 10 threads, ops/ms", "ch03/jmh", "lettuce_10_loopback", "num",
          PUBLISHED["jmh_lettuce_10"]),
    Claim("One shared Lettuce connection, 50 threads, ops/ms", "ch03/jmh", "lettuce_50_loopback", "num",
          PUBLISHED["jmh_lettuce_50"]),
    Claim("Spring Data Redis on Lettuce, 50 threads, ops/ms", "ch03/jmh", "spring_50_loopback", "num",
          PUBLISHED["jmh_spring_50"]),
]
