"""Another process keeping every CPU busy: one plain loop per CPU, pinned to it, at normal priority,
as a slower or shared machine would be (tests/test_slow_machine.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager

LOOP = """import os, sys
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {int(sys.argv[1])})
while True:
    pass
"""


def cpus() -> list[int]:
    """Every CPU of the machine (not this process's affinity: the lab may have pinned it to one)."""
    return list(range(os.cpu_count() or 1))


@contextmanager
def every_cpu():
    """The loops run while the block does; the CPUs they keep busy."""
    loops = [subprocess.Popen([sys.executable, "-c", LOOP, str(cpu)]) for cpu in cpus()]
    try:
        yield cpus()
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
