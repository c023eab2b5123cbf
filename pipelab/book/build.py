"""The book build: execute every notebook against the lab's Redis, then build the site."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import jbang, results, weather
from ..errors import LabError, not_permitted
from ..paths import REPO, build_dir, notebooks_out_dir, reference_dir, results_dir
from . import failures, inputs, progress

PARAMETERS_TAG = "parameters"


def kernel_env() -> dict:
    """Point Jupyter at a kernelspec for this very interpreter, so notebooks run with the lab's packages."""
    spec_dir = build_dir() / "jupyter" / "kernels" / "python3"
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (pipelab)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1))
    return {
        "JUPYTER_PATH": str(build_dir() / "jupyter"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }


def notebooks(only: list[str] | None = None) -> list[Path]:
    found = sorted((REPO / "notebooks").glob("*.ipynb"))
    if only:
        found = [p for p in found if any(p.stem.startswith(o) for o in only)]
        if not found:
            raise LabError(f"No notebook matches {', '.join(only)}; see notebooks/.")
    return found


def inject_parameters(nb, params: dict) -> None:
    """Papermill's convention: a cell after the one tagged 'parameters' overrides its values."""

    import nbformat  # noqa: PLC0415  (imported when used: see execute)

    source = "\n".join(f"{k} = {v!r}" for k, v in params.items())
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]})
    for i, existing in enumerate(nb.cells):
        if PARAMETERS_TAG in existing.get("metadata", {}).get("tags", []):
            nb.cells.insert(i + 1, cell)
            return
    nb.cells.insert(0, cell)


def execute(
    source: Path, target: Path, params: dict, timeout: int = 3600, board: progress.Progress | None = None
) -> Path:
    """Run every cell; a cell that raises fails the build, and the failing copy is kept for reading.
    With a board, the section each code cell sits in is shown on it."""
    # Imported here, not at the top: nbformat's schema checks take about a second to import, and most
    # `pipelab` commands (and every error they report) never execute a notebook.
    import nbformat  # noqa: PLC0415
    from nbclient import NotebookClient  # noqa: PLC0415
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError  # noqa: PLC0415
    from traitlets.config import Config  # noqa: PLC0415

    nb = nbformat.read(source, as_version=4)
    inject_parameters(nb, params)
    where = progress.sections(nb)
    target.parent.mkdir(parents=True, exist_ok=True)
    # IPC, not TCP: the kernel talks to us over Unix sockets in a private (0700) folder, so ipykernel has
    # no "running over TCP without encryption" to warn of. The path is absolute (the kernel starts in the
    # notebook's folder) and short (a socket's path is limited to about 100 bytes).
    with tempfile.TemporaryDirectory(prefix="pipelab-kernel-") as sockets:
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(source.parent)}},
            config=Config(KernelManager={"transport": "ipc", "ip": f"{sockets}/kernel"}),
            on_cell_execute=(lambda cell_index, **_: board.section(where[cell_index])) if board else None,
        )
        try:
            client.execute()
        except (CellExecutionError, CellTimeoutError, DeadKernelError) as err:
            nbformat.write(nb, target)
            summary = re.sub(r"\x1b\[[0-9;]*m", "", str(err)).strip().splitlines()  # no terminal colours
            last = summary[-1] if summary else str(err)
            if last.startswith("NoPermissionError: "):
                last = not_permitted(last.removeprefix("NoPermissionError: "))
            raise NotebookFailed(source, target, last) from None
    nbformat.write(nb, target)
    return target


class NotebookFailed(LabError):
    """A cell raised (or hung, or the kernel died): `reason` is the error's last line."""

    def __init__(self, source: Path, copy: Path, reason: str):
        super().__init__(f"Notebook {source.name} failed: {reason}; the partly executed copy is {copy}.")
        self.reason = reason


def attach_kernels(session_env: dict) -> None:
    """Notebooks executed from this process from now on run on the lab's kernel and attach to the session."""
    # PIPELAB_PROGRESS=0: the kernels' own bars would end up as noise in the executed pages.
    os.environ.update(session_env, **kernel_env(), PIPELAB_PROGRESS="0")


@dataclass
class Ran:
    """What a run of the notebooks did: the executed notebooks of the chapters it measured, and the
    chapters that failed (each costing that chapter only)."""

    executed: list[Path] = field(default_factory=list)
    failed: list[failures.Failure] = field(default_factory=list)

    def raise_failures(self) -> None:
        """For callers that want the old way: the first failure as one sentence."""
        if self.failed:
            raise LabError(self.failed[0].line())


def run_notebooks(
    session_env: dict,
    quick: bool,
    only: list[str] | None = None,
    *,
    server: str | None = None,
    fresh: bool = True,
    after_chapter: Callable[[str], None] | None = None,
) -> Ran:
    """Execute the notebooks; with `server` (the server's identity) and not `fresh`, a chapter whose
    inputs are unchanged since its last run keeps its results and is not measured again. A chapter that
    fails is recorded (failures.record) and the run goes on. `after_chapter(NN)` is called once each
    chapter has measured, outside its timing (the site's refresh)."""
    attach_kernels(session_env)
    # The kernels (and the JVMs they start) read quick mode here too: no extra rounds in measure.
    before = os.environ.get("PIPELAB_QUICK")
    os.environ["PIPELAB_QUICK"] = "1" if quick else "0"
    try:
        return _run_each(quick, only, server, fresh, after_chapter)
    finally:
        if before is None:
            os.environ.pop("PIPELAB_QUICK", None)
        else:
            os.environ["PIPELAB_QUICK"] = before


def book_progress(sources: list[Path], quick: bool) -> progress.Progress:
    """The status line for these chapters, its time left scaled from the reference run's chapter times."""
    import nbformat  # noqa: PLC0415  (imported when used: see execute)

    timings = results.load("book/timings", reference_dir())
    reference = timings["summary"] if timings else {}
    chapters = [
        progress.Chapter(
            int(source.name[:2]),
            progress.title(nbformat.read(source, as_version=4)),
            reference.get(f"ch{source.name[:2]}_s", {}).get("value"),
        )
        for source in sources
    ]
    # Quick mode: the reference ran full sizes, so only its chapters' proportions hold, at this run's own pace.
    return progress.Progress(chapters, of=len(notebooks()), pace=None if quick else 1.0)


def _run_each(
    quick: bool,
    only: list[str] | None,
    server: str | None,
    fresh: bool,
    after_chapter: Callable[[str], None] | None = None,
) -> Ran:
    sources = notebooks(only)
    ran = Ran()
    sky = {}  # the machine's weather before the first chapter measured and after the last (not in quick mode)
    with book_progress(sources, quick) as board:
        for i, source in enumerate(sources):
            last = inputs.last_run(source) if server else None
            key = inputs.chapter_key(source, quick=quick, server=server, aliases=last["aliases"]) if last else None
            if key and not fresh and inputs.unchanged(source, key):
                print(
                    f"pipelab: {source.relative_to(REPO)} unchanged since its last run (inputs {key['key'][:12]}); "
                    "keeping its results (FRESH=1 measures it again)",
                    flush=True,
                )
                board.keep(i)
                continue
            # A chapter's results are all rewritten by its run: none left over from an older version of it.
            shutil.rmtree(results_dir() / f"ch{source.name[:2]}", ignore_errors=True)
            if not quick and not sky:
                sky["before"] = _weather()
            board.start(i)
            failures.clear(source)
            # What the chapter reads, as it starts: a source edited while it runs leaves it unrecorded (stale).
            before = inputs.sources(source, last["aliases"] if last else [], quick=quick) if server else None
            try:
                ran.executed.append(execute_noting_java(source, {"QUICK": quick}, board))
            except NotebookFailed as err:
                failure = failures.record(source, board.chapters[i].name, err.reason)
                board.failed(failure.line())
                ran.failed.append(failure)
            else:
                took = board.done()
                if server:
                    aliases = inputs.runs_log(source).read_text().split()
                    key = inputs.chapter_key(source, quick=quick, server=server, aliases=aliases)
                    edited = inputs.changes(
                        before, inputs.sources(source, last["aliases"] if last else [], quick=quick)
                    )
                    if edited:
                        print(
                            f"pipelab: {', '.join(edited[:3])} changed while {source.name} ran; its results are "
                            "kept but not recorded as current, so the next `make book` measures it again",
                            flush=True,
                        )
                    else:
                        inputs.record(source, key | {"seconds": round(took, 1)})
            if after_chapter:
                after_chapter(source.name[:2])
    if sky:
        sky["after"] = _weather()
        weather.keep(sky, "pipelab: the machine's weather, ")
    return ran


def _weather() -> dict[str, list[float]]:
    print(
        f"pipelab: timing a fixed loop on each CPU, {weather.SECONDS:.0f} s each: the machine's own weather", flush=True
    )
    return weather.measure()


def execute_noting_java(source: Path, params: dict, board: progress.Progress | None = None) -> Path:
    """execute(), with the JBang aliases the chapter runs noted in its runs log (inputs.runs_log)."""
    log = inputs.runs_log(source)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    before = os.environ.get(jbang.RUNS_LOG_VAR)
    os.environ[jbang.RUNS_LOG_VAR] = os.pathsep.join(filter(None, [str(log), before]))
    try:
        return execute(source, notebooks_out_dir() / source.name, params, board=board)
    finally:
        if before is None:
            os.environ.pop(jbang.RUNS_LOG_VAR)
        else:
            os.environ[jbang.RUNS_LOG_VAR] = before


def site_argv(site_dir: Path) -> list[str]:
    """The command that builds the site into `site_dir`, every warning an error."""
    return [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)]


def build_site(site_dir: Path | None = None) -> Path:
    """A whole, strict build. Built beside an existing site and swapped in, so that a reader reading it
    meanwhile (live.LiveSite serves it) never finds it half written."""
    site_dir = site_dir or build_dir() / "site"
    target = site_dir.with_name(f"{site_dir.name}.next") if site_dir.exists() else site_dir
    if target != site_dir:
        shutil.rmtree(target, ignore_errors=True)  # left by a build that was interrupted
    done = subprocess.run(
        site_argv(target),
        cwd=REPO,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),  # else Material's banner is the first "WARNING" line below
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        problems = [line for line in done.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
        raise LabError(f"mkdocs build --strict failed: {(problems or done.stderr.splitlines() or ['?'])[0]}")
    if target != site_dir:
        old = site_dir.with_name(f"{site_dir.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        site_dir.rename(old)
        target.rename(site_dir)
        shutil.rmtree(old)
    return site_dir / "index.html"
