"""What the sources published for chapter 10, and the claims that answer them."""

from __future__ import annotations

from ..claims import Claim, Published

PUBLISHED = {
    "ioredis_auto_gain": Published(
        1.35,
        "x",
        "ioredis 6.0.0 README, Autopipelining: in its benchmarks enableAutoPipelining improved throughput "
        "by 35% to 50% (the lower bound shown)",
    ),
    "ioredis_pipeline_gain": Published(
        1.5,
        "x",
        "ioredis 6.0.0 README, Pipelining: a batch of commands sent as a pipeline performs 50% to 300% "
        "better (the lower bound shown)",
    ),
    "rueidis_vs_goredis": Published(
        14.0,
        "x",
        "rueidis README, Benchmark Comparison with go-redis v9: about 14x go-redis's throughput at "
        "parallelism 64, 16-byte keys, 64-byte values, on a MacBook Pro M1 Pro (SETs there, GETs here)",
    ),
}
CLAIMS = [
    Claim(
        "ioredis, enableAutoPipelining on ÷ off: GETs/s at 256 callers, loopback",
        "ch10/auto",
        "ioredis_gain_r0",
        "x",
        PUBLISHED["ioredis_auto_gain"],
    ),
    Claim(
        "ioredis, pipeline().exec() ÷ one by one: PINGs/s",
        "ch10/explicit",
        "ioredis_ping_speedup",
        "x",
        PUBLISHED["ioredis_pipeline_gain"],
    ),
    Claim(
        "rueidis (auto-pipelining) ÷ go-redis (pool): GETs/s at 64 callers, loopback",
        "ch10/auto",
        "rueidis_vs_goredis_gain_r0_c64",
        "x",
        PUBLISHED["rueidis_vs_goredis"],
    ),
]
