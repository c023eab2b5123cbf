"""Chapter 9's shared parts: its key prefix and the two kinds of keys its jobs meet."""

from __future__ import annotations

from ...server import PREFIX as LAB_PREFIX
from ...server import check_ownership, foreign_keys, foreign_keys_allowed

PREFIX = LAB_PREFIX + "ch09:"
DOOMED = PREFIX + "doomed:"  # the keys a pattern job deletes or expires
KEPT = PREFIX + "kept:"  # keys beside them that no job may touch
PATTERN = DOOMED + "*"


def foreign_keys_now(lab) -> list[str]:
    """Keys outside the lab's prefix (a few at most), as the chapter finds them before and after it."""
    with lab.client() as r:
        return foreign_keys(r)


def check_safe(lab) -> list[str]:
    """Before writing: the database holds no key outside `pipelab:` (unless the reader allowed it, and
    then the chapter still deletes none of them); the foreign keys seen, to compare with after."""
    with lab.client() as r:
        check_ownership(r, lab.endpoint.shown, foreign_keys_allowed())
    return foreign_keys_now(lab)
