"""`make lab`'s workspace: the learner edits and runs working copies of the notebooks, never the book's.

build/lab/notebooks/ holds a copy of every notebook under notebooks/, made the first time the lab
opens and never overwritten; runs there save under build/lab/results/ (paths.results_dir), and
Lab.save prints each figure beside the book's. `make lab-restore NB=01` puts the book's version back
and keeps the learner's under build/lab/replaced/.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

from . import paths, results

WORKSPACE_VAR = "PIPELAB_LAB_WORKSPACE"  # set for the lab's kernels: Lab.save compares with the book
COPIED = ".copied-from.json"  # {notebook: sha256 of the book's version it was copied from}


def notebooks_dir() -> Path:
    return paths.lab_dir() / "notebooks"


def book_notebooks() -> dict[str, Path]:
    """{path under notebooks/: the book's file}, exercises and solutions included."""
    root = paths.REPO / "notebooks"
    return {
        p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*.ipynb")) if ".ipynb_checkpoints" not in p.parts
    }


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _record() -> dict:
    path = notebooks_dir() / COPIED
    return json.loads(path.read_text()) if path.exists() else {}


def prepare() -> tuple[list[str], list[str]]:
    """Copy every book notebook the workspace lacks. (copied now, copies older than the book's version)."""
    record, copied, older = _record(), [], []
    for rel, source in book_notebooks().items():
        target = notebooks_dir() / rel
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            record[rel] = _sha(source)
            copied.append(rel)
        elif record.get(rel) not in (None, _sha(source)):
            older.append(rel)
    (notebooks_dir() / COPIED).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return copied, older


def matching(which: str) -> list[str]:
    """The notebooks `which` names: "all", a chapter's number ("1", "01"), an exercise's ("ex01") or a name."""
    every = book_notebooks()
    if which == "all":
        return list(every)
    exercise = which.lower().startswith("ex") and which[2:].isdigit()
    number = which[2:] if exercise else which
    if number.isdigit():
        folder = "exercises/" if exercise else ""
        return [rel for rel in every if rel.startswith(f"{folder}{int(number):02d}-")]
    return [rel for rel in every if Path(rel).stem == which or rel == which or Path(rel).name == which]


def restore(which: str) -> list[tuple[str, Path | None]]:
    """The book's version back in the workspace: [(notebook, where the learner's copy was kept, or None)]."""
    chosen = matching(which)
    if not chosen:
        raise LookupError(
            f"no notebook matches {which!r}: give a chapter's number (NB=1), an exercise's (NB=ex1), a name or all"
        )
    record, done = _record(), []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for rel in chosen:
        source, target = paths.REPO / "notebooks" / rel, notebooks_dir() / rel
        kept = None
        if target.exists() and _sha(target) != _sha(source):
            kept = paths.lab_dir() / "replaced" / f"{Path(rel).stem}-{stamp}.ipynb"
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(target, kept)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        record[rel] = _sha(source)
        done.append((rel, kept))
    (notebooks_dir() / COPIED).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return done


def kernel_env() -> dict[str, str]:
    """What the lab's kernels need: their results apart from the book's, and Lab.save's comparison on."""
    return {"PIPELAB_RESULTS": str(paths.lab_dir() / "results"), WORKSPACE_VAR: "1"}


def in_workspace() -> bool:
    return bool(os.environ.get(WORKSPACE_VAR))


def book_figures(name: str) -> tuple[dict, str] | None:
    """The book's summary for a results file, and whose it is: the reader's `make book` run, else the reference."""
    for base, whose in ((paths.book_results_dir(), "your make book run"), (paths.reference_dir(), "the reference run")):
        if (doc := results.load(name, base)) is not None:
            return doc["summary"], whose
    return None


def beside(name: str, summary: dict) -> str:
    """Each figure this run saved beside the book's for the same results file, one line each."""
    book = book_figures(name)
    if book is None:
        return f"{name}: the book has no figures for this yet (run make book)"
    figures, whose = book
    lines = [f"{name}: this run beside {whose}"]
    for key, mine in summary.items():
        theirs = figures.get(key)
        if not isinstance(mine, dict) or mine.get("unit") in {"list"} or not isinstance(mine.get("value"), int | float):
            continue
        shown = results.with_interval(theirs) if theirs else "–"
        lines.append(f"  {key:<32} {results.with_interval(mine):<34} book: {shown}")
    return "\n".join(lines)
