"""The course kit's checks: one module per exercise (notebooks/exercises/), each run against the lab's
real Redis (exercise 5: the lab's Redis Cluster), and their shared helpers in common.

A check prints what it measured, ends with "Exercise N solved: <figure>" and returns its figures as a
dict. When the reader's function is wrong it raises NotSolved: one sentence on what is wrong and
where to look, shown by Jupyter without a traceback. Every key lives under pipelab:exNN:, and a check
deletes those keys, and only those, before and after it runs.
"""

from __future__ import annotations

from .common import EXERCISES, MIN_SPEEDUP, REPEAT, NotSolved
from .ex01 import check_ex01
from .ex02 import DEPTHS, check_ex02
from .ex03 import check_ex03
from .ex04 import check_ex04
from .ex05 import FIELDS, SHARE_BOUNDS, SLOT_RANGES, USERS, check_ex05
from .ex06 import EX06_BUDGET, EX06_LIMIT, EX06_SIZES, check_ex06
from .ex07 import (
    EX07_ACCOUNTS,
    EX07_AMOUNTS,
    EX07_BALANCE,
    EX07_DEPOSIT,
    EX07_DEPOSIT_EVERY,
    EX07_WRITERS,
    EX07_WRITES,
    check_ex07,
)
from .ex08 import EX08_AMOUNTS, EX08_BOUND_S, EX08_HOLD_S, EX08_SCRIPTS, EX08_WRITES, check_ex08
from .ex09 import EX09_BOUND_MS, EX09_DOOMED, EX09_KEPT, EX09_KEYS_PER_TRIP, check_ex09
