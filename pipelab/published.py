"""Figures published by the book's sources, each with where it comes from. Quoted, never measured."""
from __future__ import annotations

REDIS_IO = "redis.io, “Redis pipelining” (Ruby client, Mac OS X, loopback)"
JMH = "redis-client-benchmark: JMH, ops/ms, one command per call (setup not stated)"
VIVO = "vivo Internet Technology, Redis pipelining with Lettuce and Redisson (100,000 SADD to a remote Redis)"

PUBLISHED = {
    "ping_10k_unpipelined_s": {"value": 1.185238, "unit": "s", "source": REDIS_IO},
    "ping_10k_pipelined_s": {"value": 0.250783, "unit": "s", "source": REDIS_IO},
    "rtt_250ms_max_rps": {"value": 4.0, "unit": "ops/s", "source": "redis.io: an RTT of 250 ms allows at most 4 requests/s"},
    "vivo_jedis_one_by_one_ms": {"value": 162_655, "unit": "ms", "source": VIVO},
    "vivo_jedis_pipeline_ms": {"value": 504, "unit": "ms", "source": VIVO},
    "vivo_redisson_rbatch_ms": {"value": 1_399, "unit": "ms", "source": VIVO},
    "plateau_gain": {"value": 10.0, "unit": "x",
                     "source": "redis.io: throughput grows almost linearly with pipeline length, up to 10x the baseline"},
    "batch_time_ratio": {"value": 1.0, "unit": "x",
                         "source": "redis.io: in batches of about 10k commands the speed is nearly the same"},
    "jmh_pool8_10": {"value": 61.417, "unit": "num", "source": JMH},
    "jmh_pool8_50": {"value": 72.563, "unit": "num", "source": JMH},
    "jmh_lettuce_10": {"value": 77.678, "unit": "num", "source": JMH},
    "jmh_lettuce_50": {"value": 369.844, "unit": "num", "source": JMH},
    "jmh_spring_50": {"value": 381.857, "unit": "num", "source": JMH},
    "reads_per_unpipelined_command": {"value": 1.0, "unit": "num",
                                      "source": "redis.io: each unpipelined command costs a read() and a write()"},
    "lrem_growth_1k_to_1m": {"value": 1000.0, "unit": "x",
                             "source": "redis.io, LREM: time complexity O(N+M), N the list's length (1k to 1M elements: 1000x)"},
    "ltrim_growth_1k_to_1m": {"value": 1.0, "unit": "x",
                              "source": "redis.io, LTRIM: time complexity O(N), N the elements removed (one per command here)"},
    "multi_foreign_commands": {"value": 0, "unit": "count",
                               "source": "redis.io, Transactions: a request by another client is never served in the "
                                         "middle of a transaction's execution"},
    "cluster_slots": {"value": 16384, "unit": "count",
                      "source": "redis.io, Redis Cluster specification: the key space is split into 16384 hash slots"},
    "hash_tag_slots": {"value": 1, "unit": "count",
                       "source": "redis.io, Redis Cluster specification: keys with the same hash tag go to the same slot"},
}


def value(key: str) -> float:
    return PUBLISHED[key]["value"]


def ping_speedup() -> float:
    return value("ping_10k_unpipelined_s") / value("ping_10k_pipelined_s")


def vivo_ms_per_command() -> float:
    """vivo's one-by-one total over its 100,000 commands: the round trip each one paid."""
    return value("vivo_jedis_one_by_one_ms") / 100_000


def vivo_pipeline_speedup() -> float:
    return value("vivo_jedis_one_by_one_ms") / value("vivo_jedis_pipeline_ms")


def vivo_rbatch_over_pipeline() -> float:
    return value("vivo_redisson_rbatch_ms") / value("vivo_jedis_pipeline_ms")
