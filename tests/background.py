"""The work a test session needs that measures nothing, run in processes of their own before the notebooks
(tests/conftest.py holds the fixtures that start and read it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from functools import partial
from pathlib import Path

from pipelab import host
from pipelab.cluster import free_cluster_port
from pipelab.errors import LabError
from pipelab.server import EmbeddedRedis, free_port


class Background:
    """A command run in a process of its own: started before the notebooks when the session has a test
    using the fixture `needed_by`, else when first waited for. `env` is called at the start (free
    ports are chosen then); `made` is what the command makes, if the tests read it."""

    def __init__(self, argv: list[str], env, log: Path, needed_by: str, made: Path | None = None):
        self.argv, self.env, self.log, self.needed_by, self.made = argv, env, log, needed_by, made
        self.proc: subprocess.Popen | None = None
        self.lowered = False
        self.starting = threading.Lock()

    def start(self) -> None:
        with self.starting:  # its queue's thread and a test that waits for it may both start it
            if self.proc is None:
                with open(self.log, "w") as log:
                    self.proc = subprocess.Popen(
                        self.argv,
                        cwd=Path(__file__).parent.parent,
                        env=self.env(),
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        preexec_fn=_lowered if self.lowered else None,
                    )

    def lower(self) -> None:
        """From now on, this job (if running, its whole process tree) runs at the lowest priority."""
        self.lowered = True
        if self.proc is not None and self.proc.poll() is None:
            for tid in host.threads_under(self.proc.pid):
                try:
                    os.setpriority(os.PRIO_PROCESS, tid, LOWEST)
                except OSError:  # ended meanwhile
                    pass

    def wait(self) -> tuple[int, str]:
        """Its exit code and the end of what it printed."""
        self.start()
        return self.proc.wait(timeout=1800), self.log.read_text()[-3000:]

    def succeeded(self) -> Path | None:
        """Waits; fails the test that asked, with the end of what the command printed, unless it exited 0;
        then what the command makes."""
        code, printed = self.wait()
        assert code == 0, f"{' '.join(map(str, self.argv[1:]))} exited {code}:\n{printed}"
        return self.made

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)


LOWEST = 19  # nice: a thread at 0 that wants the CPU gets about 70 times its share


def _lowered() -> None:
    os.setpriority(os.PRIO_PROCESS, 0, LOWEST)


def prepare_chapter_10() -> None:
    """Chapter 10's npm ci and go builds, as the chapter would do them first (the chapter says in one
    sentence what is missing)."""
    from pipelab import golang, node

    examples = sorted(d.name for d in golang.MODULE_DIR.iterdir() if d.is_dir() and d.name not in golang.SHARED)
    for step in [node.install, *(partial(golang.build, name) for name in examples)]:
        try:
            step()
        except LabError:
            pass


# Chapters whose quick run the tests read for what happened, never for how fast: chapter 8's outcomes,
# counts and heap sizes, mostly waits on client timeouts (about 40% of one core for 2 minutes). Each runs
# here, by `pipelab book` on a lab of its own, rather than among the notebooks that measure.
BESIDE = ("08",)

# One queue per line of work: chapter 10's builds; the course (from the start: the notebooks wait for
# it); the unsolved exercises; the books and site builds whose outcome no clock decides; each chapter of
# BESIDE. The two books that run chapter 1's JBang aliases share a queue: two JBang processes building
# one alias at once can clash. The reference's site build goes before the secured book's, whose site is
# seeded from it (seed).
QUEUES = (
    ("tools",),
    ("course",),
    ("unsolved",),
    ("portable", "reference", "secured", "nothing", "contradicted"),
    *((f"ch{chapter}",) for chapter in BESIDE),
)
# The notebooks do not wait for the jobs these fixtures read, and they run at the lowest priority from
# their start (Background.lower): before the notebooks, on the CPU time the tests, the course and chapter
# 8 leave, and then on the time the notebooks leave (a quick book keeps under one core of two busy).
# Work whose outcome a timeout or a time bound decides (the course's checks, chapter 8's traps, the
# unsolved exercises' Jedis reads) is not among them: lowered work can be starved for seconds.
LOWERED_FIXTURES = {"portable_book", "secured_run", "unmeasured_sites"}


class BeforeTheNotebooks:
    """The session's background jobs it needs, run in a thread per queue (QUEUES) from its start, those
    of LOWERED_FIXTURES at the lowest priority; `done()` waits for every queue with a job another fixture
    reads, so that the notebooks then share the machine with lowest-priority work only."""

    def __init__(self, jobs: list):
        queues = [queue for queue in jobs if queue]
        self.threads = [threading.Thread(target=self.run, args=(queue,), daemon=True) for queue in queues]
        self.awaited = [t for t, q in zip(self.threads, queues) if any(j.needed_by not in LOWERED_FIXTURES for j in q)]
        for queue in queues:
            for job in queue:
                if job.needed_by in LOWERED_FIXTURES:
                    job.lower()  # none has started yet: each starts lowered
        for thread in self.threads:
            thread.start()

    @staticmethod
    def run(queue: list) -> None:
        for job in queue:
            try:
                job.wait()
            except Exception:  # noqa: BLE001  any failure: the test that reads the job waits again and reports it
                pass

    def done(self) -> None:
        for thread in self.awaited:
            thread.join()


def unsolved_java(out: Path) -> None:
    """Each Java exercise run unsolved, as a trainee first runs it, on a Redis of its own, written to `out`
    as {alias: [exit code, stdout, stderr, keys left in that Redis after it]} (read by unsolved_runs)."""
    from pipelab.course import timings as course

    runs = {}
    with EmbeddedRedis(port=free_port()) as server:
        for ex in course.EXERCISES:
            done = course.run_java(ex, server.endpoint, solution=False)
            with server.endpoint.client() as client:
                runs[ex.alias(False)] = [done.returncode, done.stdout, done.stderr, client.dbsize()]
    out.write_text(json.dumps(runs))


def unsolved_runs(out: Path) -> dict:
    """unsolved_java's file as {alias: (the run, keys left)}."""
    return {
        alias: (subprocess.CompletedProcess([alias], code, stdout, stderr), keys)
        for alias, (code, stdout, stderr, keys) in json.loads(out.read_text()).items()
    }


# Run as a process of its own, so that no test's change to os.environ (a PATH without java, say) reaches it.
JOBS = {"tools": prepare_chapter_10, "unsolved": unsolved_java}

if __name__ == "__main__":
    import sys

    JOBS[sys.argv[1]](*map(Path, sys.argv[2:]))


def course_env(env: dict) -> dict:
    """`pipelab course` starts its own Redis, toxiproxy and cluster (isolated_build has unset the
    variables that would attach it elsewhere): on ports other than the session's."""
    session_port = int(env["PIPELAB_CLUSTER_PORT"])
    cluster_port = free_cluster_port()
    while abs(cluster_port - session_port) <= 3:  # three masters each: the two ranges must not meet
        cluster_port = free_cluster_port()
    return dict(env, PIPELAB_PORT=str(free_port()), PIPELAB_CLUSTER_PORT=str(cluster_port), PIPELAB_PROGRESS="0")


def beside_env(env: dict, build: Path, kernels: dict) -> dict:
    """A chapter of BESIDE: its own Redis, toxiproxy and cluster (course_env), its own build, and what
    the session's kernels get (`kernels`: section tracing, the Java runs log)."""
    return course_env(env) | kernels | {"PIPELAB_BUILD": str(build)}


def adopt(chapter: str, made: Path, build: Path) -> None:
    """A chapter's run beside the work, moved into the session's build as if run there: its executed
    notebook, its results and the record of its inputs."""
    for folder, pattern in (("notebooks", f"{chapter}-*.ipynb"), ("inputs", f"{chapter}-*")):
        (build / folder).mkdir(parents=True, exist_ok=True)
        for path in (made / folder).glob(pattern):
            shutil.copy2(path, build / folder / path.name)
    shutil.copytree(made / "results" / f"ch{chapter}", build / "results" / f"ch{chapter}", dirs_exist_ok=True)


def portable_env(env: dict, build: Path) -> dict:
    """Chapter 1's book as a reader without Linux's facilities runs it (pipelab.host), on a Redis and
    toxiproxy of its own, into a build of its own."""
    return dict(
        env,
        PIPELAB_HOST="portable",
        PIPELAB_BUILD=str(build),
        PIPELAB_PORT=str(free_port()),
        PIPELAB_PROGRESS="0",
    )


CONTRADICTED_PAGE = "chapters/01-round-trip-time.md"


def contradict(results_dir: Path) -> tuple[str, str]:
    """A reader's results file that breaks the first condition "figure > number" (or "<") of chapter 1:
    the reference's copy, with that figure and its interval moved to the wrong side. (name, key)."""
    from pipelab import paths
    from pipelab.book import conditions, markers

    text = (paths.REPO / "site" / CONTRADICTED_PAGE).read_text()
    for match in markers.CONDITION.finditer(text):
        comparison = conditions.parse(match["condition"])[0]
        if comparison.op in "<>" and comparison.left.name and comparison.right.number:
            break
    else:
        raise AssertionError(f"{CONTRADICTED_PAGE} states no condition 'figure > number' to break")
    name, key, bound = comparison.left.name, comparison.left.key, comparison.right.number / comparison.left.factor
    doc = json.loads((paths.reference_dir() / f"{name}.json").read_text())
    moved = bound / 4 if comparison.op == ">" else bound * 4
    doc["summary"][key] |= {
        "value": moved,
        "text": f"{moved:.3g} (made up)",
        "interval": [moved * 0.9, moved * 1.1],
        "interval_text": "a made-up interval",
    }
    (results_dir / f"{name}.json").parent.mkdir(parents=True, exist_ok=True)
    (results_dir / f"{name}.json").write_text(json.dumps(doc))
    return name, key


def seed(build: Path, earlier: Path) -> None:
    """Before a site build into `build` of the same unexecuted notebooks as the build in `earlier`, which
    ran before it in the same queue: its mkdocs-jupyter cache (a third of a build's time) and its plots
    (drawn again only where the results differ) copied in."""
    from pipelab.book.hooks import FIGURES, JUPYTER_CACHE

    for part in (JUPYTER_CACHE, FIGURES):
        source, target = earlier / part, build / part
        if source.is_dir() and source != target:
            shutil.copytree(source, target, dirs_exist_ok=True)


def seeded(env: dict, earlier: Path) -> dict:
    """`env` for a site build into its PIPELAB_BUILD, seeded from `earlier` (seed)."""
    seed(Path(env["PIPELAB_BUILD"]), earlier)
    return env
