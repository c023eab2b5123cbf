"""The harness's layout holds: notebooks stay thin and import only the lab and their chapter, the lab
core imports no chapter, and neither imports the book build or the course."""

from __future__ import annotations

import ast
import json
import re

import pytest

from pipelab.paths import REPO

MAX_CELL_LINES = 25
# A taught cell (tagged code:…) is the lesson's code itself, shown on the page: one idea, a screen at most.
MAX_TAUGHT_LINES = 30
NOTEBOOKS = sorted((REPO / "notebooks").rglob("*.ipynb"))
CORE = sorted(p for p in (REPO / "pipelab").glob("*.py") if p.name != "__main__.py")  # __main__: the command line
CHAPTERS = sorted((REPO / "pipelab" / "chapters").rglob("*.py"))  # chapter packages too


def code_cells(path):
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def imported(source: str, package: str = "") -> set[str]:
    """Every module an `import` or `from ... import` names; relative ones resolved from `package`."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            base = ".".join(parts + ([node.module] if node.module else []))
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return names


def package_of(path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(REPO / "notebooks").as_posix())
def test_notebook_cells_are_thin(path):
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    fat = []
    for i, cell in enumerate(cells):
        taught = any(t.startswith("code:") for t in cell.get("metadata", {}).get("tags", []))
        lines = len("".join(cell["source"]).splitlines())
        if lines > (MAX_TAUGHT_LINES if taught else MAX_CELL_LINES):
            fat.append((i, lines, "taught" if taught else "harness call"))
    assert not fat, (
        f"code cells over {MAX_CELL_LINES} lines ({MAX_TAUGHT_LINES} for a taught cell): {fat}; move harness code "
        "to the chapter module, split a taught cell"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(REPO / "notebooks").as_posix())
def test_notebooks_never_import_the_book_build(path):
    names = set().union(*(imported(src) for src in code_cells(path)))
    assert not {n for n in names if n.startswith("pipelab.book")}, names


@pytest.mark.parametrize("path", CORE + CHAPTERS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_the_lab_and_the_chapters_import_neither_the_book_nor_the_course(path):
    names = imported(path.read_text(), package_of(path))
    assert not {n for n in names if n.startswith(("pipelab.book", "pipelab.course"))}, names
    if path.parent.name == "pipelab":  # the lab core serves every chapter and knows none
        assert not {n for n in names if n.startswith("pipelab.chapters")}, names


def test_the_import_reader_resolves_relative_imports():
    assert "pipelab.book.build" in imported("from ..book import build", "pipelab.chapters")
    assert "pipelab.chapters.ch01" in imported("from . import ch01", "pipelab.chapters")
    assert "pipelab.cluster.Cluster" in imported("from .cluster import Cluster", "pipelab")
    assert package_of(REPO / "pipelab" / "chapters" / "ch01.py") == "pipelab.chapters"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(REPO / "notebooks").as_posix())
def test_cell_ids_are_generated_not_numbered_by_hand(path):
    """Jupyter's random ids: a numbered id invites renumbering, which rewrites every cell of a diff."""
    ids = [cell.get("id", "") for cell in json.loads(path.read_text())["cells"]]
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids), ids
    assert len(set(ids)) == len(ids), "ids are unique"
    assert not any(a[:6] == b[:6] for a, b in zip(ids, ids[1:])), f"ids that count up: {ids}"


MAX_MODULE_LINES = 600


def test_no_python_module_outgrows_one_idea():
    """A module past this size becomes a package with a module per section, as chapters 2, 4, 6 and 7 are."""
    modules = [*(REPO / "pipelab").rglob("*.py"), *(REPO / "tests").rglob("*.py")]
    big = {
        p.relative_to(REPO).as_posix(): n for p in modules if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert len(modules) > 50 and not big, big


def test_no_java_file_outgrows_one_idea():
    """The same bound for the Java examples and their helpers: a bigger one splits into files of its own
    (a helper LabSupport reaches, a base class the example extends) that its //SOURCES lines name."""
    sources = sorted((REPO / "java-examples").rglob("*.java"))
    big = {
        p.relative_to(REPO).as_posix(): n for p in sources if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert len(sources) > 50 and not big, big
