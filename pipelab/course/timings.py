"""The course kit: one exercise per chapter, in a notebook and as a JBang alias, with solutions kept apart.

`pipelab course` runs every solution (notebooks/solutions/, `jbang exNN-solution`) against the lab's
Redis and times it, so the trainer's page shows how long each exercise's code takes on this machine.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import jbang, proxy, results
from ..book import build as book
from ..book import progress, reference
from ..errors import LabError
from ..lab import open_lab
from ..measure import Measurement, measure
from ..paths import REPO, notebooks_out_dir, tools_dir
from ..server import Endpoint
from . import demos

TIMINGS = "course/timings"
SOLVED_MARK = "solved:"  # every check ends with "Exercise N solved: <figure>"


def _the_one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise LabError(f"Expected one {folder.relative_to(REPO)}/{pattern}, found {len(found)}.")
    return found[0]


@dataclass(frozen=True)
class Exercise:
    number: str  # "01": exercise N follows chapter N
    title: str
    java_class: str
    planned_minutes: int  # the trainer's plan for the exercise in class, not a measurement

    def notebook(self, kind: str) -> Path:
        """notebooks/exercises/NN-*.ipynb or notebooks/solutions/NN-*.ipynb."""
        return _the_one(REPO / "notebooks" / kind, f"{self.number}-*.ipynb")

    @property
    def chapter(self) -> str:
        """The chapter's page under site/chapters/, e.g. "01-round-trip-time"."""
        return _the_one(REPO / "site" / "chapters", f"{self.number}-*.md").stem

    def chapter_title(self) -> str:
        """The chapter page's own heading, e.g. "1. Round-trip time"."""
        return (REPO / "site" / "chapters" / f"{self.chapter}.md").read_text().splitlines()[0].lstrip("# ").strip()

    def alias(self, solution: bool) -> str:
        return f"ex{self.number}" + ("-solution" if solution else "")


EXERCISES = [
    Exercise("01", "Pipeline the loop", "Ex01PipelineTheLoop", 20),
    Exercise("02", "Chunk a big job", "Ex02ChunkABigJob", 25),
    Exercise("03", "Flush once (Java), a pipeline not a transaction (Python)", "Ex03FlushOnce", 25),
    Exercise("04", "Keep the latest 100, cheaply", "Ex04KeepLatest", 20),
    Exercise("05", "One slot per user", "Ex05OneSlotPerUser", 25),
    Exercise("06", "Stay under the reply budget", "Ex06StayUnderTheBudget", 20),
    Exercise("07", "Move money without losing it", "Ex07MoveMoney", 25),
    Exercise("08", "Charge once", "Ex08ChargeOnce", 25),
    Exercise("09", "Delete a pattern without stopping the server", "Ex09DeletePattern", 20),
]


def _solved_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if SOLVED_MARK in line]
    return lines[-1].split(SOLVED_MARK, 1)[1].strip() if lines else ""


def run_java(exercise: Exercise, target: Endpoint, *, solution: bool) -> subprocess.CompletedProcess:
    """One run of `jbang exNN[-solution] host port`, as a trainee types it (REDIS_URL set)."""
    argv = jbang.jbang_argv([exercise.alias(solution), target.host, str(target.port)])
    return subprocess.run(argv, cwd=REPO, env=jbang.jbang_env(target), capture_output=True, text=True)


def _java_solution(exercise: Exercise, target: Endpoint) -> str:
    done = run_java(exercise, target, solution=True)
    if done.returncode != 0:
        raise LabError(f"jbang {exercise.alias(True)} failed: {(done.stdout + done.stderr).strip().splitlines()[-1:]}")
    return _solved_line(done.stdout)


def run_solutions(server: Endpoint, quick: bool) -> Path:
    """Time every solution, Python notebook and JBang alias; fail if one does not report "solved"."""
    jbang.require_jdk()
    repeat, warmup = (1, 0) if quick else (3, 1)  # the warm-up keeps the first run's time: compile, fetch
    measurements: list[Measurement] = []
    summary: dict = {}
    runs = f"{repeat + warmup} run{'s' if repeat + warmup > 1 else ''}"
    board = progress.Progress(
        [progress.Chapter(int(ex.number), ex.title) for ex in EXERCISES], len(EXERCISES), what="course"
    )
    with board:
        for i, ex in enumerate(EXERCISES):
            board.start(i)
            source = ex.notebook("solutions")
            target = notebooks_out_dir() / "solutions" / source.name
            board.section(f"Python solution notebook, {runs}")
            python = measure(
                f"exercise {ex.number}, Python solution notebook",
                lambda: book.execute(source, target, {"QUICK": quick}),
                ops=1,
                repeat=repeat,
                warmup=warmup,
                exercise=ex.number,
            )
            printed = _solved_line("".join(o.get("text", "") for c in _cells(target) for o in c.get("outputs", [])))
            if not printed:
                raise LabError(f"The solution notebook {source.name} ran but did not print 'solved'.")
            java_lines: list[str] = []
            board.section(f"jbang {ex.alias(True)}, {runs}")
            java = measure(
                f"exercise {ex.number}, jbang {ex.alias(True)}",
                lambda: java_lines.append(_java_solution(ex, server)),
                ops=1,
                repeat=repeat,
                warmup=warmup,
                exercise=ex.number,
            )
            measurements += [python, java]
            summary.update(
                {
                    f"ex{ex.number}_python_s": results.median_figure(python),
                    f"ex{ex.number}_java_s": results.median_figure(java),
                    f"ex{ex.number}_java_first_s": results.quantity(java.warmup[0] if java.warmup else None, "s"),
                    f"ex{ex.number}_python_printed": results.quantity(0, "count", printed),
                    f"ex{ex.number}_java_printed": results.quantity(0, "count", java_lines[-1]),
                }
            )
            board.done()
    summary.update(footprint())
    lab = open_lab(quick)
    if not quick:  # the demos run at the examples' own sizes, as in front of a room: minutes, not for tests
        lab.save(demos.DEMOS_RESULT, summary=demos.run(server))
    return Path(lab.save(TIMINGS, measurements, summary=summary))


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def footprint() -> dict:
    """What a laptop has fetched for the course, measured on disk (not download) sizes."""
    jars: set[Path] = set()
    for alias in jbang.catalog_aliases():  # the exact artifacts the examples run with, not all of ~/.m2
        named = map(Path, jbang.launch(alias)["jars"])
        jars.update(j for j in named if j.suffix == ".jar" and not j.is_relative_to(jbang.cache_dir()))
    venv = Path(sys.prefix)
    with_lab = importlib.util.find_spec("jupyterlab") is not None
    return {
        "venv_bytes": results.quantity(_size(venv), "bytes"),
        "venv_has_jupyterlab": results.quantity(0, "count", "yes" if with_lab else "no (make lab adds it)"),
        "tools_bytes": results.quantity(_size(tools_dir()), "bytes"),
        "maven_bytes": results.quantity(sum(_size(j) for j in jars if j.exists()), "bytes"),
        "maven_jars": results.quantity(len(jars), "count"),
    }


def prefetch() -> dict:
    """Fetch and compile everything the course needs now, so nothing is fetched in class."""
    for alias in jbang.catalog_aliases():
        print(f"pipelab: jbang build {alias}", flush=True)
        jbang.jbang(["build", alias], quiet=True)
    try:
        print(f"pipelab: toxiproxy ready ({proxy.find_toxiproxy()})", flush=True)
    except proxy.ToxiproxyUnavailable as err:
        print(f"pipelab: no toxiproxy, so the RTT experiments will be skipped: {err}", flush=True)
    return footprint()


def _cells(notebook: Path) -> list:
    import nbformat  # noqa: PLC0415  (imported when used, as in pipelab.book.build.execute)

    return nbformat.read(notebook, as_version=4).cells


REFERENCE_NOTE = "_Measured on the reference machine: `make course` measures yours._"


def footprint_table() -> str:
    doc, from_reference = reference.shown(TIMINGS)
    if not doc or "venv_bytes" not in doc["summary"]:
        return "_`make course` measures what the course fetches onto this machine._"

    def value(key):
        return doc["summary"][key]["text"]

    note = f"{REFERENCE_NOTE}\n\n" if from_reference else ""
    return note + results.md_table(
        ["What", "Where", "On disk"],
        [
            [
                f"Python packages (JupyterLab installed: {value('venv_has_jupyterlab')})",
                "build/venv",
                value("venv_bytes"),
            ],
            [
                f"Java clients and their dependencies, {value('maven_jars')} jars",
                "~/.m2/repository",
                value("maven_bytes"),
            ],
            ["JBang and toxiproxy", "build/tools", value("tools_bytes")],
        ],
    )


def timings_table() -> str:
    """The trainer's page: the plan for each exercise beside what its solutions took on this machine."""
    doc, from_reference = reference.shown(TIMINGS)
    value = (lambda key: doc["summary"].get(key, {}).get("text", "–")) if doc else (lambda key: "–")
    rows = [
        [
            f"{int(ex.number)}. {ex.title}",
            f"[{ex.chapter_title()}](../chapters/{ex.chapter}.md)",
            f"{ex.planned_minutes} min",
            value(f"ex{ex.number}_python_s"),
            value(f"ex{ex.number}_java_first_s"),
            value(f"ex{ex.number}_java_s"),
        ]
        for ex in EXERCISES
    ]
    table = results.md_table(
        [
            "Exercise",
            "Chapter",
            "Planned in class",
            "Python solution notebook",
            "Java solution, first run",
            "Java solution, later runs",
        ],
        rows,
    )
    if not doc:
        return table + "\n\n_Run `make course` to time the solutions on this machine._"
    printed = [
        [f"{int(ex.number)}", value(f"ex{ex.number}_python_printed"), value(f"ex{ex.number}_java_printed")]
        for ex in EXERCISES
    ]
    return "\n".join(
        [
            *([REFERENCE_NOTE, ""] if from_reference else []),
            table,
            "",
            "What each solution printed when it passed:",
            "",
            results.md_table(["Exercise", "Python", "Java"], printed),
        ]
    )
