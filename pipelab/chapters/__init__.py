"""The book's content, one module per chapter (a package, a module per section, for the longer ones):
its workloads, parameters, summaries, plots and claims (pipelab.chapters.ch01 ... ch08). Notebooks
import their chapter's module."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType


def module(chapter: str) -> ModuleType | None:
    """pipelab.chapters.<chapter> ("ch01"); None for a results folder with no module (the course's)."""
    try:
        return importlib.import_module(f"{__name__}.{chapter}")
    except ModuleNotFoundError:
        return None


def every_plot() -> dict:
    """Every chapter's plots by results name ("ch01/ping-10k"): importing a module registers its own."""
    here = Path(__file__).parent
    for name in sorted(
        {p.stem for p in here.glob("ch[0-9][0-9].py")} | {p.parent.name for p in here.glob("ch[0-9][0-9]/__init__.py")}
    ):
        module(name)
    from .. import plots  # noqa: PLC0415  (matplotlib: the `pipelab` command reads claims without drawing)

    return plots.registered()
