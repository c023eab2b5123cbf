"""The book build: execute every notebook against the lab's Redis, then build the site."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tqdm import tqdm

from .. import jbang
from ..errors import LabError
from ..paths import REPO, build_dir, notebooks_out_dir, results_dir
from . import inputs

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


def execute(source: Path, target: Path, params: dict, timeout: int = 3600) -> Path:
    """Run every cell; a cell that raises fails the build, and the failing copy is kept for reading."""
    # Imported here, not at the top: nbformat's schema checks take about a second to import, and most
    # `pipelab` commands (and every error they report) never execute a notebook.
    import nbformat  # noqa: PLC0415
    from nbclient import NotebookClient  # noqa: PLC0415
    from nbclient.exceptions import CellExecutionError  # noqa: PLC0415

    nb = nbformat.read(source, as_version=4)
    inject_parameters(nb, params)
    code_cells = sum(1 for c in nb.cells if c.cell_type == "code")
    bar = tqdm(total=code_cells, desc=source.stem, unit="cell", disable=not sys.stderr.isatty())
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(source.parent)}},
        on_cell_executed=lambda **_: bar.update(1),
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        client.execute()
    except CellExecutionError as err:
        nbformat.write(nb, target)
        summary = re.sub(r"\x1b\[[0-9;]*m", "", str(err)).strip().splitlines()  # no terminal colours
        raise LabError(
            f"Notebook {source.name} failed: {summary[-1] if summary else err}; the partly executed copy is {target}."
        ) from None
    finally:
        bar.close()
    nbformat.write(nb, target)
    return target


def attach_kernels(session_env: dict) -> None:
    """Notebooks executed from this process from now on run on the lab's kernel and attach to the session."""
    # PIPELAB_PROGRESS=0: the kernels' own bars would end up as noise in the executed pages.
    os.environ.update(session_env, **kernel_env(), PIPELAB_PROGRESS="0")


def run_notebooks(
    session_env: dict, quick: bool, only: list[str] | None = None, *, server: str | None = None, fresh: bool = True
) -> list[Path]:
    """Execute the notebooks; with `server` (the server's identity) and not `fresh`, a chapter whose
    inputs are unchanged since its last run keeps its results and is not measured again."""
    attach_kernels(session_env)
    # The kernels (and the JVMs they start) read quick mode here too: no extra rounds in measure.
    before = os.environ.get("PIPELAB_QUICK")
    os.environ["PIPELAB_QUICK"] = "1" if quick else "0"
    try:
        return _run_each(quick, only, server, fresh)
    finally:
        if before is None:
            os.environ.pop("PIPELAB_QUICK", None)
        else:
            os.environ["PIPELAB_QUICK"] = before


def _run_each(quick: bool, only: list[str] | None, server: str | None, fresh: bool) -> list[Path]:
    done = []
    for source in notebooks(only):
        last = inputs.last_run(source) if server else None
        key = inputs.chapter_key(source, quick=quick, server=server, aliases=last["aliases"]) if last else None
        if key and not fresh and inputs.unchanged(source, key):
            print(
                f"pipelab: {source.relative_to(REPO)} unchanged since its last run (inputs {key['key'][:12]}); "
                "keeping its results (FRESH=1 measures it again)",
                flush=True,
            )
            done.append(notebooks_out_dir() / source.name)
            continue
        print(f"pipelab: executing {source.relative_to(REPO)} {'(quick mode)' if quick else ''}", flush=True)
        # A chapter's results are all rewritten by its run: none left over from an older version of it.
        shutil.rmtree(results_dir() / f"ch{source.name[:2]}", ignore_errors=True)
        started = time.monotonic()
        done.append(execute_noting_java(source, {"QUICK": quick}))
        if server:
            ran = inputs.runs_log(source).read_text().split()
            key = inputs.chapter_key(source, quick=quick, server=server, aliases=ran)
            inputs.record(source, key | {"seconds": round(time.monotonic() - started, 1)})
    return done


def execute_noting_java(source: Path, params: dict) -> Path:
    """execute(), with the JBang aliases the chapter runs noted in its runs log (inputs.runs_log)."""
    log = inputs.runs_log(source)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    before = os.environ.get(jbang.RUNS_LOG_VAR)
    os.environ[jbang.RUNS_LOG_VAR] = os.pathsep.join(filter(None, [str(log), before]))
    try:
        return execute(source, notebooks_out_dir() / source.name, params)
    finally:
        if before is None:
            os.environ.pop(jbang.RUNS_LOG_VAR)
        else:
            os.environ[jbang.RUNS_LOG_VAR] = before


def build_site(site_dir: Path | None = None) -> Path:
    site_dir = site_dir or build_dir() / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        problems = [line for line in done.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
        raise LabError(f"mkdocs build --strict failed: {(problems or done.stderr.splitlines() or ['?'])[0]}")
    return site_dir / "index.html"
