"""What the sources published for chapter 4, and the claims that answer them."""

from __future__ import annotations

from ..claims import Claim, Published

PUBLISHED = {
    "lrem_growth_1k_to_1m": Published(
        1000.0, "x", "redis.io, LREM: time complexity O(N+M), N the list's length (1k to 1M elements: 1000x)"
    ),
    "ltrim_growth_1k_to_1m": Published(
        1.0, "x", "redis.io, LTRIM: time complexity O(N), N the elements removed (one per command here)"
    ),
    "multi_foreign_commands": Published(
        0,
        "count",
        "redis.io, Transactions: a request by another client is never "
        "served in the middle of a transaction's execution",
    ),
}
CLAIMS = [
    Claim(
        "LREM server time per call, largest list ÷ 1,000 elements",
        "ch04/lrem",
        "lrem_growth",
        "x",
        PUBLISHED["lrem_growth_1k_to_1m"],
    ),
    Claim(
        "LTRIM server time per call, largest list ÷ 1,000 elements",
        "ch04/lrem",
        "ltrim_growth",
        "x",
        PUBLISHED["ltrim_growth_1k_to_1m"],
    ),
    Claim(
        "Another client's entries inside a MULTI/EXEC block (most in any trial)",
        "ch04/interleave",
        "multi_inside_max",
        "count",
        PUBLISHED["multi_foreign_commands"],
    ),
]
