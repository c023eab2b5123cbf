"""Chapter 6's shared parts: its key prefix and parameters used by more than one section."""

from __future__ import annotations

import shutil

from ... import host
from ...params import Size
from ...server import PREFIX as LAB_PREFIX
from ..ch02 import PUBLISHED as CH02_PUBLISHED

PLATEAU = CH02_PUBLISHED["plateau_gain"]

PREFIX = LAB_PREFIX + "ch06:"
KEY = PREFIX + "key"
COMPARED = ("redis6", "redis7", "redis", "valkey")  # oldest first
try:
    JEMALLOC, JEMALLOC_SKIPPED = host.jemalloc(), None  # Debian's libjemalloc2
except host.Unavailable as err:
    JEMALLOC, JEMALLOC_SKIPPED = None, str(err)
LABELS = {
    "redis6": "Redis 6.2",
    "redis7": "Redis 7.0",
    "redis": "Redis 8.2",
    "valkey": "Valkey 9.1",
    "valkey-jemalloc": "Valkey 9.1, jemalloc preloaded",
}
REPEAT = Size(full=3, quick=2)


def benchmark_missing() -> str | None:
    """Why the redis-benchmark parts cannot run here, or None."""
    return (
        None
        if shutil.which("redis-benchmark")
        else "redis-benchmark is not installed (Debian: apt-get install redis-tools); parts 1-3 are skipped."
    )
