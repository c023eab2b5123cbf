"""Chapter 2's parameters, declared once (the notebook passes them to the Java example)."""

from __future__ import annotations

from ...params import Size
from ...server import PREFIX as LAB_PREFIX

REPEAT = Size(full=5, quick=2)
SET_KEY, VALUE_KEY = LAB_PREFIX + "ch02:set", LAB_PREFIX + "ch02:value"
SYS_DEPTHS = Size(full=[1, 2, 4, 10, 100, 1_000, 10_000], quick=[1, 10, 100, 1_000])
N_SYS = Size(full=20_000, quick=2_000)
N_STRACE = Size(full=5_000, quick=1_000)
STRACE_DEPTHS = (1, 1_000)
DEPTHS = Size(full=[2**i for i in range(14)], quick=[1, 4, 16, 64, 256])  # 1 ... 8,192
BENCH_DEPTH = 1_000  # where Jedis is held against redis-benchmark ...
# ... and the share of its rate Jedis should reach: below the runs' noise (fresh runs read 60-112%),
# so that a miss says the Java harness is broken, not that the machine had a slow moment
JEDIS_BAR_PCT = 50
N_PY = Size(full=20_000, quick=3_000)  # SETs per redis-py sample ...
PY_ROUND_TRIPS = 2_000  # ... but at most this many batches, so depth 1 stays short
N_JAVA = Size(full=50_000, quick=2_000)
N_BENCH = Size(full=100_000, quick=20_000)  # the probe run at each depth ...
BENCH_ROUND_TRIPS = 5_000  # ... at most this many round trips (depth 1 stays short)
# Each timed redis-benchmark run is sized from the probe's rate to last this long, at every depth:
# count-bound, a run at depth 1,000 lasted 30 ms, too short to be the server's ceiling.
BENCH_SECONDS = Size(full=0.3, quick=0.1)
SIZES = Size(full=[1_000, 10_000, 100_000, 300_000], quick=[1_000, 10_000, 100_000])
BATCH = 10_000
VALUE_BYTES = 100
BATCH_REPEAT = Size(full=3, quick=2)
N_LAT = Size(full=10_000, quick=1_000)
DEPTH_LAT = 100
N_RAW = Size(full=10_000, quick=1_000)
CLIENT_NAME = "pipelab-ch02-batches"  # so the sampler finds the connection in CLIENT LIST
# Where the two processes run (section 4):
N_PLACE = Size(full=5_000, quick=500)  # PINGs one by one per sample
PLACE_REPEAT = Size(full=9, quick=3)
# What TLS costs a pipeline (section 6): the same server's plain port against its TLS port.
TLS_DEPTHS = Size(full=[1, 10, 100, 1_000], quick=[1, 10, 100, 1_000])  # every depth the prose names
N_TLS = Size(full=10_000, quick=2_000)  # SETs per sample ...
TLS_ROUND_TRIPS = 1_000  # ... at most this many batches, so depth 1 stays short


def java_depths(depths: list[int]) -> list[int]:
    """The depths the Jedis example runs: the chapter's, and the one compared with redis-benchmark."""
    return sorted(set(depths) | {BENCH_DEPTH})
