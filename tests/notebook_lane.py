"""The chapters' notebooks, executed in quick mode by a process of their own for the test session
(tests/conftest.py NotebookLane), on a lab of their own: the section tracing and the Java runs log go
to the session's isolated build ($PIPELAB_BUILD). Writes the executed notebooks' paths to OUT.

    python -m tests.notebook_lane OUT [CHAPTER ...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

# Chapter 8 mostly waits out stalls and timeouts, and its tests count rather than time: it runs last,
# and the tests that measure on the session's own lab run beside it (tests/conftest.py).
LAST = "08"


def beside_last(out: Path) -> Path:
    """The file the lane writes when it starts chapter LAST."""
    return out.with_suffix(".last")


def yield_cpu() -> bool:
    """This thread, and every process or thread it starts from now on, runs only on CPU time that
    the notebooks' lane leaves idle (Linux's SCHED_IDLE: a waking lane process takes the CPU at once).
    False where the system has no such class."""
    if not hasattr(os, "SCHED_IDLE"):
        return False
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except OSError:
        return False
    return True


def take_cpu_back() -> None:
    """The ordinary class again, for the tests that measure after the lane. Only root may leave
    SCHED_IDLE; anyone else stays there, which costs nothing once the lane is done."""
    if hasattr(os, "SCHED_OTHER"):
        try:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        except OSError:
            pass


class NotebookLane:
    """The quick notebooks, executed by tests/notebook_lane.py in a process started at the session's
    start, at the ordinary priority. Meanwhile the tests that neither measure nor read its results,
    and the background work, run at idle priority beside it (yield_cpu): they take only what CPU
    it leaves idle, so it measures nearly as it would alone. Where there is no idle priority, the lane
    runs alone and everything else after it. `env`: the lane's environment (its own cluster port)."""

    def __init__(self, build: Path, chapters: list[str], env: dict):
        self.build, self.chapters, self.env = build, chapters, env
        self.out, self.log = build / "notebooks.json", build / "notebooks.log"
        self.proc: subprocess.Popen | None = None
        self.paths: list[Path] | None = None

    def start(self) -> None:
        if self.proc is None:
            with open(self.log, "w") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "tests.notebook_lane", str(self.out), *self.chapters],
                    cwd=Path(__file__).parent.parent,
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )

    def wait(self) -> list[Path]:
        """The executed notebooks' paths, once the lane is done; the lane's own last words if it failed."""
        if self.paths is None:
            self.start()
            code = self.proc.wait(timeout=3600)
            assert code == 0, f"the notebooks' lane exited {code}:\n{self.log.read_text()[-3000:]}"
            self.paths = [Path(p) for p in json.loads(self.out.read_text())]
            take_cpu_back()
        return self.paths

    def wait_for_last(self) -> None:
        """Until the lane starts its last chapter (notebook_lane.LAST), or ends."""
        self.start()
        while not beside_last(self.out).exists() and self.proc.poll() is None:
            time.sleep(0.5)
        take_cpu_back()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)


def main(out: Path, chapters: list[str]) -> None:
    """The lane itself, in its own process."""
    from pipelab import jbang
    from pipelab.book import build as book
    from pipelab.lab import Session
    from pipelab.server import free_port
    from tests.conftest import java_runs_log, kernels_attached, section_tracing

    build = Path(os.environ["PIPELAB_BUILD"])
    session = Session(port=free_port()).start()
    try:
        with kernels_attached(session, **section_tracing(build), **{jbang.RUNS_LOG_VAR: str(java_runs_log(build))}):
            chapters = chapters or [p.name[:2] for p in book.notebooks()]
            first = [c for c in chapters if c != LAST]
            done = book.run_notebooks(session.env(), quick=True, only=first) if first else []  # none: all
            beside_last(out).touch()
            if LAST in chapters:
                done += book.run_notebooks(session.env(), quick=True, only=[LAST])
    finally:
        session.stop()
    out.write_text(json.dumps([str(p) for p in done]))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
