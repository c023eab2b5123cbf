"""6. What the sources published, and the figures that answer them."""

from __future__ import annotations

from ..claims import Claim, Published

PUBLISHED = {
    "plateau_gain": Published(
        10.0, "x", "redis.io: throughput grows almost linearly with pipeline length, up to 10x the baseline"
    ),
    "batch_time_ratio": Published(1.0, "x", "redis.io: in batches of about 10k commands the speed is nearly the same"),
    "reads_per_unpipelined_command": Published(
        1.0, "num", "redis.io: each unpipelined command costs a read() and a write()"
    ),
}
CLAIMS = [
    Claim(
        "Server read() calls per command, depth 1",
        "ch02/syscalls",
        "reads_per_cmd_depth1",
        "num",
        PUBLISHED["reads_per_unpipelined_command"],
    ),
    Claim(
        "Throughput at the plateau ÷ depth 1 (redis-py)", "ch02/depth", "redispy_gain", "x", PUBLISHED["plateau_gain"]
    ),
    Claim("Throughput at the plateau ÷ depth 1 (Jedis)", "ch02/depth", "jedis_gain", "x", PUBLISHED["plateau_gain"]),
    Claim(
        "Throughput at the plateau ÷ depth 1 (redis-benchmark)",
        "ch02/depth",
        "benchmark_gain",
        "x",
        PUBLISHED["plateau_gain"],
    ),
    Claim(
        "Time of one pipeline ÷ time in 10k batches (largest job)",
        "ch02/batches",
        "time_ratio",
        "x",
        PUBLISHED["batch_time_ratio"],
    ),
]
