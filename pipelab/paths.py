"""Where things live. Everything generated goes below build/ (or $PIPELAB_BUILD); the committed
reference run lives in pipelab/reference_run/ (or $PIPELAB_REFERENCE)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def build_dir() -> Path:
    return Path(os.environ.get("PIPELAB_BUILD") or REPO / "build").resolve()


def results_dir() -> Path:
    """Where Lab.save writes and the site reads: the book's results, or a learner's own in `make lab`
    (PIPELAB_RESULTS, set by the lab for its kernels, so their runs never replace the book's)."""
    return Path(os.environ.get("PIPELAB_RESULTS") or book_results_dir()).resolve()


def book_results_dir() -> Path:
    """The results `make book` measured and the site publishes."""
    return build_dir() / "results"


def lab_dir() -> Path:
    """`make lab`'s workspace: the learner's working copies of the notebooks and what their runs saved."""
    return build_dir() / "lab"


def reference_dir() -> Path:
    """The reference machine's results, same layout as results_dir(): what the site shows before `make book`."""
    return Path(os.environ.get("PIPELAB_REFERENCE") or REPO / "pipelab" / "reference_run").resolve()


def tools_dir() -> Path:
    return Path(os.environ.get("PIPELAB_TOOLS") or REPO / "build" / "tools").resolve()


def notebooks_out_dir() -> Path:
    return build_dir() / "notebooks"


def env_flag(name: str) -> bool:
    """A yes/no setting from the environment: 1, true or yes."""
    return os.environ.get(name, "").lower() in {"1", "true", "yes"}
