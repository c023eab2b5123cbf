"""Chapter 4's parameters, declared once (the notebook passes them to the Java examples)."""

from __future__ import annotations

from ...params import Size
from ...results import md_table, quantity

LENGTHS = Size(full=[1_000, 10_000, 100_000, 1_000_000], quick=[1_000, 10_000, 100_000])
P = 100  # commands per LREM/LTRIM pipeline
REPEAT = Size(full=3, quick=1)
SLOWLOG_US = 1_000  # the slow log's threshold while the chapter runs (on a server the lab started)
N_IL = Size(full=20_000, quick=2_000)
TRIALS = Size(full=5, quick=3)
REPEAT_IL = Size(full=5, quick=2)
RCW_KEYS = {0: Size(full=5_000, quick=300), 1: Size(full=500, quick=100)}  # keys per RTT (ms)
REPEAT_RCW = Size(full=3, quick=1)
N_DROP = Size(full=20_000, quick=5_000)
CUT_MS = 100
BLPOP_TIMEOUTS = Size(full=[0.1, 0.25, 0.5], quick=[0.1, 0.2])
TIMEOUT_S = 0.05
DEFAULT_RETRIES = 10  # redis-py 8's Retry count when none is given (redis/_defaults.py)
LONG = 100_000  # elements of the list the slow pipeline's LREMs scan
N_FAST = Size(full=200_000, quick=100_000)
# Redisson times only the batch's tail (after the write); it must outlast 25 ms, and 50,000 did not.
N_JAVA_TIMEOUT = Size(full=200_000, quick=200_000)


def fact_table(title: str, facts: dict) -> str:
    return md_table([title, "value"], [[k, v] for k, v in facts.items()])


def yes_no(flag: bool) -> dict:
    return quantity(1 if flag else 0, "count", "yes" if flag else "no")
