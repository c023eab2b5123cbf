"""A chapter whose notebook failed costs that chapter only: what failed is kept in build/failed/, the
site shows the reference's figures on its page under a banner, and the run's last lines name it.

build/failed/chNN.json      what failed, in one sentence, and where the partly run notebook is
build/failed/NN-name.ipynb  the partly run notebook (moved out of build/notebooks/)
build/failed/chNN/          the results files it wrote before failing (moved out of build/results/)
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from ..paths import REPO, build_dir, notebooks_out_dir, results_dir
from . import inputs


@dataclass(frozen=True)
class Failure:
    chapter: str  # "08"
    title: str  # "Traps that client defaults set"
    reason: str  # the one sentence: the last line of the error
    notebook: str  # the partly run copy

    @property
    def rerun(self) -> str:
        return f"make book CHAPTER={int(self.chapter)}"

    def line(self) -> str:
        """What the run prints for it, at once and again among its last lines."""
        return (
            f"chapter {int(self.chapter)} ({self.title}) failed: {self.reason.rstrip('.')}. Its page shows the "
            f"reference's figures; `{self.rerun}` measures it again (partly run notebook: {self.notebook})."
        )

    def banner(self) -> str:
        """The admonition at the top of the chapter's page."""
        return (
            f'!!! failure "Your run of this chapter failed"\n'
            f"    Your `make book` stopped in this chapter: {self.reason.rstrip('.')}. It went on with the others.\n"
            f"    The figures on this page are the reference machine's. `{self.rerun}` measures this chapter "
            f"again; the partly run notebook is `{self.notebook}`.\n"
        )


def failed_dir() -> Path:
    return build_dir() / "failed"


def _record_path(chapter: str) -> Path:
    return failed_dir() / f"ch{chapter}.json"


def record(source: Path, title: str, reason: str) -> Failure:
    """Keep what the chapter left (partial results, the partly run copy) in build/failed/, out of what the
    site shows, and forget its last run's key, so that the next `make book` measures it again."""
    chapter = source.name[:2]
    clear(source)
    failed_dir().mkdir(parents=True, exist_ok=True)
    if (partial := results_dir() / f"ch{chapter}").exists():
        shutil.move(partial, failed_dir() / f"ch{chapter}")
    copy = failed_dir() / source.name
    if (executed := notebooks_out_dir() / source.name).exists():
        shutil.move(executed, copy)
    inputs.stamp_path(source).unlink(missing_ok=True)
    failure = Failure(chapter, title, reason, shown(copy))
    _record_path(chapter).write_text(json.dumps(asdict(failure), indent=1))
    return failure


def shown(path: Path) -> str:
    """A path as the reader types it: relative to the checkout when it is inside it."""
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def clear(source: Path) -> None:
    """The chapter ran (or runs again): no failure of its is left to show."""
    chapter = source.name[:2]
    _record_path(chapter).unlink(missing_ok=True)
    (failed_dir() / source.name).unlink(missing_ok=True)
    shutil.rmtree(failed_dir() / f"ch{chapter}", ignore_errors=True)


def recorded(chapter: str) -> Failure | None:
    try:
        return Failure(**json.loads(_record_path(chapter).read_text()))
    except (OSError, ValueError, TypeError):
        return None
