"""The code a chapter teaches: in the notebook cell the learner edits, shown on the site from that same
cell, and a `make lab` workspace in which the learner's edits and runs leave the book alone."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from pipelab import paths, results, taught, workspace
from pipelab.book import inputs
from pipelab.paths import REPO
from tests.test_layout import code_cells
from tests.test_sections import section_span

PAGES = sorted((REPO / "site" / "chapters").glob("[0-9][0-9]-*.md"))
FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)
PY_INCLUDE = re.compile(r'^\s*--8<-- "(?P<path>[^":]+\.py)(?::(?P<section>[\w-]+))?"\s*$')
# What calling a client's pipeline looks like, in the clients the chapters run from Python.
PIPELINE_API = re.compile(
    r"\.pipeline\(|\.execute\(|\bBatch\(|\bClusterBatch\(|gather\(|\.exec\(|\.transaction\(|redis::pipe\("
)


def notebook_for(page: Path) -> Path:
    return REPO / "notebooks" / f"{page.stem}.ipynb"


def python_blocks(markdown: str) -> list[str]:
    """Every ```python block of a page, its indent removed and any .py include read in (pymdownx.snippets)."""
    blocks = []
    for match in FENCE.finditer(taught.expand(markdown)):
        lines = []
        for line in match["body"].splitlines():
            line = line.removeprefix(match["indent"])
            if include := PY_INCLUDE.match(line):
                text = (REPO / include["path"]).read_text().splitlines()
                span = section_span(include["path"], include["section"]) if include["section"] else None
                lines += [text[i - 1] for i in span] if span else text
            else:
                lines.append(line)
        blocks.append("\n".join(lines).strip("\n"))
    return blocks


def appears_in(block: str, cells: list[str]) -> bool:
    """The block's lines, in order and side by side, in one code cell."""
    want = [line.rstrip() for line in block.splitlines()]
    for cell in cells:
        have = [line.rstrip() for line in cell.splitlines()]
        if any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1)):
            return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem[:2])
def test_every_python_block_a_chapter_shows_is_in_its_notebooks_code_cells(page):
    cells = code_cells(notebook_for(page))
    missing = [block.splitlines()[0] for block in python_blocks(page.read_text()) if not appears_in(block, cells)]
    assert not missing, f"{page.name} shows Python its notebook does not run, starting: {missing}"


# A notebook whose clients run in another language (chapter 11's Rust) shows their code from the example
# itself: ch11.rust_code("example", "region", ...) in a cell.
SHOWN_RUST = re.compile(r"rust_code\((?P<args>[^)]*)\)")


def shown_code(cells: list[str]) -> list[str]:
    """The example regions the cells print, as the learner reads them above the cell that runs them."""
    from pipelab.chapters.ch11 import rust_code

    return [rust_code(*ast.literal_eval(f"({m['args']},)")) for cell in cells for m in SHOWN_RUST.finditer(cell)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem[:2])
def test_every_chapter_notebook_calls_a_pipeline_itself(page):
    cells = code_cells(notebook_for(page))
    seen = cells + shown_code(cells)
    assert any(PIPELINE_API.search(cell) for cell in seen), f"{notebook_for(page).name} never calls a pipeline API"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem[:2])
def test_every_taught_function_is_run_by_its_notebook(page):
    """A function a taught cell defines is used by another cell (passed to the harness, or called by a
    taught function that is)."""
    notebook = notebook_for(page)
    cells = json.loads(notebook.read_text())["cells"]
    for i, cell in enumerate(cells):
        tags = [t for t in cell.get("metadata", {}).get("tags", []) if t.startswith(taught.TAG)]
        if not tags:
            continue
        later = "\n".join("".join(c["source"]) for j, c in enumerate(cells) if c["cell_type"] == "code" and j != i)
        defined = re.findall(r"^(?:async )?def (\w+)|^class (\w+)", "".join(cell["source"]), re.M)
        unused = [a or b for a, b in defined if not re.search(rf"\b{a or b}\b", later)]
        # A helper the cell's own functions call is used through them.
        own = "".join(cell["source"])
        unused = [name for name in unused if len(re.findall(rf"\b{name}\b", own)) < 2]
        assert not unused, f"{notebook.name} [{tags[0]}] defines {unused}, which no other cell runs"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem[:2])
def test_every_chapter_ends_with_what_to_remember(page):
    text = page.read_text()
    assert "## What to remember" in text, f"{page.name} has no 'What to remember'"
    section = text.split("## What to remember", 1)[1]
    section = re.split(r"\n## |<!-- pipelab:figures", section, maxsplit=1)[0]
    conditioned = re.findall(r"<!--holds:", section)
    assert len(conditioned) >= 3, f"{page.name}: 'What to remember' has {len(conditioned)} conditioned sentences"
    table = text.find("<!-- pipelab:figures")  # a chapter without published figures has no table
    assert table == -1 or text.index("## What to remember") < table, "before the figures table"


def _notebook(root: Path, stem: str, cells: list[dict]) -> None:
    path = root / "notebooks" / f"{stem}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def _code(source: str, *tags: str) -> dict:
    return {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": source, "outputs": []}


def test_an_include_is_the_cell_at_the_includes_indent(tmp_path):
    _notebook(tmp_path, "99-x", [_code("def f():\n\n    return 1\n", "code:f"), _code("f()")])
    page = '=== "Python"\n\n    ```python\n    --8<-- "notebooks/99-x.ipynb:f"\n    ```\n'
    assert taught.expand(page, tmp_path) == '=== "Python"\n\n    ```python\n    def f():\n\n        return 1\n    ```\n'
    with pytest.raises(taught.MissingCell, match="no code cell tagged code:g"):
        taught.expand('--8<-- "notebooks/99-x.ipynb:g"', tmp_path)
    _notebook(tmp_path, "98-y", [_code("a = 1", "code:a"), _code("a = 2", "code:a")])
    with pytest.raises(taught.MissingCell, match="two cells are tagged code:a"):
        taught.cells("98-y", tmp_path)


def test_the_checks_find_what_they_look_for():
    cells = ["x = 1\ndef ping(r):\n    r.ping()\n"]
    assert appears_in("def ping(r):\n    r.ping()", cells) and not appears_in("def ping(r):\n    r.echo()", cells)
    page = REPO / "site" / "chapters" / "01-round-trip-time.md"
    assert any("def ping_pipelined" in block for block in python_blocks(page.read_text()))
    assert PIPELINE_API.search("pipe = r.pipeline(transaction=False)") and not PIPELINE_API.search("r.ping()")


def test_loaded_cells_are_the_notebooks():
    ch01 = taught.load("01-round-trip-time")
    assert callable(ch01.ping_pipelined) and "def ping_pipelined" in taught.cell("01-round-trip-time", "ping")


def test_a_chapter_that_runs_another_notebooks_cells_is_keyed_on_them():
    key = inputs.sources(REPO / "notebooks" / "02-system-calls.ipynb", [])
    assert "notebooks/01-round-trip-time.ipynb" in key.get("taught", {}), "chapter 2's busy loop runs chapter 1's PINGs"
    assert "taught" not in inputs.sources(REPO / "notebooks" / "01-round-trip-time.ipynb", [])


@pytest.fixture
def lab_build(tmp_path, monkeypatch):
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path / "build"))
    monkeypatch.delenv("PIPELAB_RESULTS", raising=False)
    monkeypatch.delenv(workspace.WORKSPACE_VAR, raising=False)
    return tmp_path / "build"


def test_the_lab_works_on_copies_and_restores_the_books_version(lab_build):
    copied, older = workspace.prepare()
    assert "01-round-trip-time.ipynb" in copied and any(rel.startswith("exercises/") for rel in copied)
    assert not older and workspace.prepare() == ([], [])  # a second start copies nothing
    mine = workspace.notebooks_dir() / "01-round-trip-time.ipynb"
    mine.write_text(mine.read_text().replace("transaction=False", "transaction=True"))
    [(rel, kept)] = workspace.restore("1")
    assert rel == "01-round-trip-time.ipynb" and "transaction=True" in kept.read_text(), "the learner's edit is kept"
    assert mine.read_bytes() == (REPO / "notebooks" / rel).read_bytes()
    assert workspace.matching("ex1") == ["exercises/01-pipeline-the-loop.ipynb"]
    with pytest.raises(LookupError, match="no notebook matches"):
        workspace.restore("chapter one")


def test_a_learners_runs_save_apart_and_print_beside_the_books(lab_build, monkeypatch):
    book = results.save("ch01/ping-10k", environment={}, summary={"python_speedup": results.quantity(11.0, "x")})
    assert book.parent.parent == paths.book_results_dir()
    monkeypatch.setenv("PIPELAB_RESULTS", workspace.kernel_env()["PIPELAB_RESULTS"])
    mine = results.save("ch01/ping-10k", environment={}, summary={"python_speedup": results.quantity(6.5, "x")})
    assert mine.is_relative_to(paths.lab_dir()) and results.load("ch01/ping-10k", paths.book_results_dir())
    shown = workspace.beside("ch01/ping-10k", {"python_speedup": results.quantity(6.5, "x")})
    assert "your make book run" in shown and "6.5x" in shown and "11.0x" in shown
