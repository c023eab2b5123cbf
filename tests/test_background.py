"""The session's background work: the notebooks wait for what a clock decides; the rest runs lowered."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from pipelab import host
from tests.background import LOWERED_FIXTURES, LOWEST, Background, BeforeTheNotebooks

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads threads from /proc (Linux)")

# A job with a thread of its own and a child in a process group of its own, as a lab's server is.
TREE = """
import subprocess, sys, threading, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], process_group=0)
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print(child.pid, flush=True)
time.sleep(60)
"""


def job(tmp_path: Path, name: str, code: str, needed_by: str) -> Background:
    return Background([sys.executable, "-c", code], lambda: dict(os.environ), tmp_path / f"{name}.log", needed_by)


def started_tree(background: Background) -> list[int]:
    """The job's threads once its child is up: itself, its sleeping thread, the child."""
    deadline = time.monotonic() + 30
    while not background.log.read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.05)
    tids = host.threads_under(background.proc.pid)
    assert int(background.log.read_text()) in tids and len(tids) >= 3, tids
    return tids


def end(background: Background) -> None:
    """The job and the child it printed (in a process group of its own, it outlives the job)."""
    printed = background.log.read_text().strip()
    if printed:
        os.kill(int(printed), 9)
    background.stop()


def test_a_lowered_job_runs_its_whole_tree_at_the_lowest_priority(tmp_path):
    running = job(tmp_path, "tree", TREE, "portable_book")
    running.start()
    try:
        tids = started_tree(running)
        assert {os.getpriority(os.PRIO_PROCESS, t) for t in tids} == {os.getpriority(os.PRIO_PROCESS, 0)}
        running.lower()
        assert {os.getpriority(os.PRIO_PROCESS, t) for t in tids} == {LOWEST}, "every thread, the child's too"
    finally:
        end(running)
    later = job(tmp_path, "later", "import os; print(os.getpriority(os.PRIO_PROCESS, 0))", "portable_book")
    later.lower()
    assert later.wait()[0] == 0 and int(later.log.read_text()) == LOWEST, "a job started after is lowered too"


def test_the_notebooks_wait_for_timed_work_but_not_for_the_lowered_jobs(tmp_path):
    timed = job(
        tmp_path, "timed", "import os, time; print(os.getpriority(os.PRIO_PROCESS, 0)); time.sleep(1)", "course_run"
    )
    untimed = job(tmp_path, "untimed", TREE, sorted(LOWERED_FIXTURES)[0])
    queues = BeforeTheNotebooks([[timed], [untimed]])
    try:
        untimed.start()  # its queue has started it or is about to: the same process either way
        from_the_start = {os.getpriority(os.PRIO_PROCESS, t) for t in started_tree(untimed)}
        started = time.monotonic()
        queues.done()
        assert time.monotonic() - started < 30 and timed.proc.poll() == 0, "the timed job ended first"
        assert int(timed.log.read_text()) == os.getpriority(os.PRIO_PROCESS, 0), "timed work keeps its priority"
        assert untimed.proc.poll() is None, "the notebooks did not wait for the lowered job"
        assert from_the_start == {LOWEST}, "lowered before the notebooks too, from its start"
    finally:
        end(untimed)


def test_a_job_started_from_two_threads_at_once_runs_once(tmp_path):
    """Its queue's thread and a test that waits for it can both start a job: one process, not two."""
    count = tmp_path / "runs"
    once = job(tmp_path, "once", f"open({str(count)!r}, 'a').write('run\\n')", "portable_book")
    gate = threading.Barrier(8)
    starters = [threading.Thread(target=lambda: (gate.wait(), once.start())) for _ in range(8)]
    for starter in starters:
        starter.start()
    for starter in starters:
        starter.join()
    assert once.wait()[0] == 0 and count.read_text() == "run\n"
