"""The code a chapter teaches lives in its notebook, in code cells tagged `code:<name>`.

The learner reads, edits and runs those cells; the harness (timing, repeats, saving) takes the
functions they define as arguments. The site shows the same cells (`expand`, called by the book's
hooks), so the code shown is the code run. Code outside the notebook that needs one of those
functions (a test, another chapter's harness) takes it from the committed notebook with `load`,
and the staleness key of a chapter that does so holds that notebook's code (book/inputs.py).
"""

from __future__ import annotations

import functools
import json
import re
import sys
import types
from pathlib import Path

from .paths import REPO

TAG = "code:"
# An include in a chapter page, indented as the tab or admonition it sits in:
#     --8<-- "notebooks/01-round-trip-time.ipynb:ping"
INCLUDE = re.compile(r'^(?P<indent>[ \t]*)--8<-- "notebooks/(?P<stem>[\w-]+)\.ipynb:(?P<name>[\w-]+)"[ \t]*$', re.M)
# A call that takes another notebook's cells: its notebook is an input of whoever makes it.
LOADS = re.compile(r"""taught\.load\(\s*["'](?P<stem>[\w-]+)["']""")


class MissingCell(LookupError):
    pass


def notebook_path(stem: str, root: Path | None = None) -> Path:
    return (root or REPO) / "notebooks" / f"{stem}.ipynb"


def cells(stem: str, root: Path | None = None) -> dict[str, str]:
    """{name: source} of the notebook's cells tagged `code:<name>`, in notebook order."""
    path = notebook_path(stem, root)
    try:
        notebook = json.loads(path.read_text())
    except FileNotFoundError:
        raise MissingCell(f"no notebook {path.relative_to(REPO) if path.is_relative_to(REPO) else path}") from None
    found: dict[str, str] = {}
    for cell in notebook["cells"]:
        for tag in cell.get("metadata", {}).get("tags", []):
            if cell["cell_type"] == "code" and tag.startswith(TAG):
                name = tag[len(TAG) :]
                if name in found:
                    raise MissingCell(f"{path.name}: two cells are tagged {tag}")
                found[name] = "".join(cell["source"]).rstrip("\n")
    return found


def cell(stem: str, name: str, root: Path | None = None) -> str:
    found = cells(stem, root)
    if name not in found:
        raise MissingCell(f"notebooks/{stem}.ipynb has no code cell tagged {TAG}{name} (it has: {', '.join(found)})")
    return found[name]


@functools.cache
def load(stem: str) -> types.ModuleType:
    """The committed notebook's taught cells run in order, as one module: `load("01-round-trip-time").ping_pipelined`."""
    module = types.ModuleType(f"pipelab.taught.nb{stem[:2]}", f"The code cells of notebooks/{stem}.ipynb")
    module.__file__ = str(notebook_path(stem))
    sys.modules[module.__name__] = module  # dataclasses and pickling look a class's module up
    for name, source in cells(stem).items():
        exec(compile(source, f"{stem}.ipynb[{TAG}{name}]", "exec"), module.__dict__)
    return module


def expand(markdown: str, root: Path | None = None) -> str:
    """A page with every notebook include replaced by that cell's source, at the include's indent."""

    def include(match: re.Match) -> str:
        source = cell(match["stem"], match["name"], root)
        return "\n".join(match["indent"] + line if line else "" for line in source.splitlines())

    return INCLUDE.sub(include, markdown)


def loaded_by(text: str) -> set[str]:
    """The notebooks whose cells this code takes with taught.load."""
    return {m["stem"] for m in LOADS.finditer(text)}
