"""What the sources published for chapter 7, and the claims that answer them."""

from __future__ import annotations

from ..ch01 import PUBLISHED as CH01_PUBLISHED
from ..claims import Claim

PUBLISHED = {k: CH01_PUBLISHED[k] for k in ("vivo_jedis_pipeline_ms", "vivo_redisson_rbatch_ms")}
CLAIMS = [
    Claim(
        "100,000 SADD, GLIDE Batch, non-atomic (Python), against Jedis Pipeline",
        "ch07/glide",
        "pipeline_ms",
        "ms",
        PUBLISHED["vivo_jedis_pipeline_ms"],
    ),
    Claim(
        "100,000 SADD, GLIDE Batch, non-atomic (Python), against Redisson RBatch",
        "ch07/glide",
        "pipeline_ms",
        "ms",
        PUBLISHED["vivo_redisson_rbatch_ms"],
    ),
    Claim(
        "100,000 SADD, GLIDE Batch, non-atomic (Java), against Jedis Pipeline",
        "ch07/glide-java",
        "batch_ms",
        "ms",
        PUBLISHED["vivo_jedis_pipeline_ms"],
    ),
]
