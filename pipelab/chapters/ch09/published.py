"""What the sources published for chapter 9, and the claims that answer them."""

from __future__ import annotations

from ..claims import Claim, Published
from .parameters import BAD_COMMANDS

PUBLISHED = {
    "pipelined_insert_rate": Published(
        250_000.0,
        "ops/s",
        "StackExchange.Redis issue #432, a maintainer on mass insertion: about 250,000 ops/s from one "
        "pipelining client and thread, under load at Stack Overflow",
    ),
    "cli_errors": Published(
        float(BAD_COMMANDS),
        "count",
        "redis.io, Bulk loading: redis-cli --pipe ends with 'errors: N, replies: M', N the error replies "
        f"(here {BAD_COMMANDS} commands the server refuses were injected)",
    ),
}
CLAIMS = [
    Claim(
        "redis-py pipeline, 10k per batch: keys loaded per second",
        "ch09/load",
        "pipeline_10k_per_batch_rate",
        "ops/s",
        PUBLISHED["pipelined_insert_rate"],
    ),
    Claim(
        "redis-cli --pipe: errors counted in its summary line",
        "ch09/load",
        "cli_errors",
        "count",
        PUBLISHED["cli_errors"],
    ),
]
