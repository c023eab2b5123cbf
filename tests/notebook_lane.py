"""The chapters' notebooks, executed in quick mode by a process of their own for the test session
(tests/conftest.py NotebookLane), on a lab of their own: the section tracing and the Java runs log go
to the session's isolated build ($PIPELAB_BUILD). Writes the executed notebooks' paths to OUT.

    python -m tests.notebook_lane OUT CHAPTER ...
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

# Chapter 8 mostly waits out stalls and timeouts, and its tests count rather than time: it runs last,
# with the course (whose checks time the solutions) beside it, as before the lane (tests/conftest.py).
LAST = "08"


def beside_last(out: Path) -> Path:
    """The file the lane writes when it starts chapter LAST."""
    return out.with_suffix(".last")


def can_yield() -> bool:
    """Whether this system has Linux's idle scheduling class (macOS has not)."""
    return hasattr(os, "SCHED_IDLE")


def when(condition, then) -> None:
    """`then()` once `condition()` is true, from a thread started now: one started before yield_cpu
    keeps the ordinary priority, and so do the processes it starts."""

    def watch():
        while not condition():
            time.sleep(0.5)
        then()

    threading.Thread(target=watch, name="beside-the-lane", daemon=True).start()


def yield_cpu() -> None:
    """This thread, and every process or thread it starts from now on, runs only on CPU time that
    the notebooks' lane leaves idle (SCHED_IDLE: a waking lane process takes the CPU at once)."""
    if can_yield():
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            pass  # not allowed: the work runs beside the lane at the ordinary priority


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
    and the background work that measures nothing, run at idle priority beside it (yield_cpu): they
    take only the CPU it leaves idle, yet its chapters still ran 35-65% longer on the 2-core VM
    (caches, most likely). Where there is no idle priority, the lane runs alone and everything else
    after it. `env`: the lane's environment (its own cluster port)."""

    def __init__(self, build: Path, chapters: list[str], env: dict):
        self.chapters, self.env = chapters, env
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

    def at_last(self) -> bool:
        """Whether the lane has started its last chapter (LAST), or ended."""
        return beside_last(self.out).exists() or self.proc.poll() is not None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)


# Chapter 10's npm ci and go build take a minute on a fresh clone: prepare() does them at idle priority
# beside the chapters before it, and the lane waits for it before chapter 10.
BUILDS = "10"


def prepare() -> None:
    """Chapter BUILDS's installs and builds, as the chapter would do them first."""
    from pipelab import golang, node
    from pipelab.errors import LabError

    examples = sorted(d.name for d in golang.MODULE_DIR.iterdir() if d.is_dir() and d.name not in golang.SHARED)
    for step in [node.install, *(partial(golang.build, name) for name in examples)]:
        try:
            step()
        except LabError:
            pass  # the chapter says in one sentence what is missing


def main(out: Path, chapters: list[str]) -> None:
    """The lane itself, in its own process: the chapters in order, but BUILDS once prepared and LAST last."""
    from pipelab import jbang
    from pipelab.book import build as book
    from pipelab.lab import Session
    from pipelab.server import free_port
    from tests.conftest import java_runs_log, kernels_attached, section_tracing

    build = Path(os.environ["PIPELAB_BUILD"])
    prep = None
    if BUILDS in chapters:
        prep = subprocess.Popen([sys.executable, "-m", "tests.notebook_lane", "--prepare"], preexec_fn=yield_cpu)
    session = Session(port=free_port()).start()
    try:
        with kernels_attached(session, **section_tracing(build), **{jbang.RUNS_LOG_VAR: str(java_runs_log(build))}):

            def run(group: list[str]) -> list[Path]:
                return book.run_notebooks(session.env(), quick=True, only=group) if group else []  # none: all

            done = run([c for c in chapters if c not in (LAST, BUILDS)])
            if prep is not None:
                prep.wait()
                done += run([BUILDS])
            beside_last(out).touch()
            done += run([c for c in chapters if c == LAST])
    finally:
        session.stop()
        if prep is not None and prep.poll() is None:
            prep.kill()
    out.write_text(json.dumps([str(p) for p in done]))


if __name__ == "__main__":
    if sys.argv[1:] == ["--prepare"]:
        prepare()
    else:
        main(Path(sys.argv[1]), sys.argv[2:])
