"""What the sources published for chapter 6, and the claims that answer them."""

from __future__ import annotations

from ..claims import Claim
from .common import COMPARED, LABELS, PLATEAU

PUBLISHED = {"plateau_gain": PLATEAU}  # redis.io's "up to 10x", as chapter 2 quotes it
CLAIMS = [
    Claim(
        f"{LABELS[name]}: -P 256 ÷ -P 1, one client (redis-benchmark)", "ch06/ceiling", f"{name}_gain_c1", "x", PLATEAU
    )
    for name in COMPARED
]
