"""What keys a chapter's results: a change that can move a figure measures the chapter again, and
nothing else does (comments, docstrings, layout, a port, another chapter's code it does not use)."""

from __future__ import annotations

import ast
import json
import re
import shutil

import pytest

from pipelab import jbang, settings
from pipelab.book import inputs
from pipelab.book.cli import chapter_prefixes
from pipelab.errors import LabError
from pipelab.paths import REPO
from pipelab.programs import OTHER_EXAMPLES_DIR

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_a_notebook_reaches_its_chapter_and_the_harness_it_imports():
    parts = {
        p.relative_to(REPO).as_posix(): names
        for p, names in inputs.python_parts(REPO / "notebooks" / "07-implicit-pipelining.ipynb").items()
    }
    assert {"pipelab/lab.py", "pipelab/measure.py", "pipelab/server.py"} <= parts.keys()
    assert all(names is None for path, names in parts.items() if path.startswith("pipelab/chapters/ch07"))
    assert parts["pipelab/chapters/ch01.py"] and "PUBLISHED" in parts["pipelab/chapters/ch01.py"], (
        "another chapter's module counts for what this one takes from it"
    )
    assert not any(path.startswith("pipelab/chapters/ch06") for path in parts)
    assert "pipelab/settings.py" not in parts, "a port moves no figure"


def test_java_inputs_are_the_aliases_run_and_their_sources_lines():
    names = {p.name for p in inputs.java_files(["ch08-lettuce", "ch08-jedis"])}
    assert {"LettuceTraps.java", "JedisTraps.java", "LabSupport.java", "ClusterSupport.java"} <= names
    assert "PingBench.java" not in names and "LabDefaults.java" not in names
    assert {p.name for p in inputs.java_files(["ch02-depth"])} == {
        "DepthBench.java",
        "LabSupport.java",
        "LabTiming.java",  # LabSupport's parts, which its //SOURCES name
        "LabReport.java",
        "LabArgs.java",
        "LabInfo.java",
        "JedisSupport.java",  # how Jedis connects as REDIS_URL says
        "LabConnection.java",
        "LabProbe.java",
    }


def test_meaning_ignores_comments_docstrings_and_layout_but_not_code():
    code = 'def f(x):\n    """Doc."""\n    return x + 1  # why\n'
    assert inputs.python_meaning(code) == inputs.python_meaning("def f(x):\n\n    return (x +\n            1)\n")
    assert inputs.python_meaning(code) != inputs.python_meaning("def f(x):\n    return x + 2\n")
    java = '//DEPS a:b:1\nclass A { /* why */ String u = "http://x"; // note\n int n = 1; }\n'
    assert inputs.java_meaning(java) == inputs.java_meaning(
        '//DEPS a:b:1\nclass A {\n  String u = "http://x";\n  int n = 1;\n}\n'
    )
    assert inputs.java_meaning(java) != inputs.java_meaning(java.replace("a:b:1", "a:b:2")), "//DEPS pins a client"
    assert inputs.java_meaning(java) != inputs.java_meaning(java.replace("http://x", "http://y"))


def test_the_lock_counts_for_the_books_own_packages_only():
    pinned = inputs.lock_meaning()
    assert re.search(r"^redis==[\d.]+$", pinned, re.MULTILINE) and re.search(r"^hiredis==", pinned, re.MULTILINE)
    assert not re.search(r"^(pytest|playwright|jupyterlab|ruff)==", pinned, re.MULTILINE), "test and lab tools"


def test_settings_hold_plain_constants_only():
    """settings.py is left out of every key, so nothing that runs may hide in it."""
    tree = ast.parse((REPO / "pipelab" / "settings.py").read_text())
    for stmt in tree.body:
        docstring = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        assert docstring or (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)), ast.dump(stmt)


def test_the_port_is_written_once_and_its_one_fallback_once():
    """Usage lines say "the lab's port"; a repository-wide replace would also hit uv.lock's hashes."""
    sources = [
        p
        for p in [
            *(REPO / "pipelab").rglob("*.py"),
            *(REPO / "java-examples").rglob("*.java"),
            *(REPO / "notebooks").rglob("*.ipynb"),
            *(REPO / "site").rglob("*.md"),
        ]
        if str(settings.DEFAULT_PORT) in p.read_text()
    ]
    assert sorted(p.relative_to(REPO).as_posix() for p in sources) == sorted(inputs.NOT_INPUTS)


def test_the_key_changes_with_each_input_and_only_then(tmp_path, monkeypatch):
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path / "build"))
    notebook = REPO / "notebooks" / "02-system-calls.ipynb"
    key = inputs.chapter_key(notebook, quick=True, server="s1", aliases=["ch02-depth"])
    assert key == inputs.chapter_key(notebook, quick=True, server="s1", aliases=["ch02-depth"])
    for other in (
        inputs.chapter_key(notebook, quick=False, server="s1", aliases=["ch02-depth"]),
        inputs.chapter_key(notebook, quick=True, server="s2", aliases=["ch02-depth"]),
        inputs.chapter_key(notebook, quick=True, server="s1", aliases=[]),
    ):
        assert other["key"] != key["key"]
    (tmp_path / "build" / "notebooks").mkdir(parents=True)
    assert not inputs.unchanged(notebook, key), "never run: measure"
    inputs.record(notebook, key)
    assert not inputs.unchanged(notebook, key), "no executed notebook to show: measure"
    shutil.copyfile(notebook, tmp_path / "build" / "notebooks" / notebook.name)
    assert inputs.unchanged(notebook, key)
    assert inputs.last_run(notebook)["aliases"] == ["ch02-depth"]
    assert "java-examples/ch02-system-calls/DepthBench.java" in inputs.last_run(notebook)["java"]


# Which JBang aliases each chapter's run records (the committed reference holds the real ones).
RAN = {
    "01": ["ch01-ping", "ch01-sadd"],
    "02": ["ch02-depth"],
    "06": ["ch02-depth", "ch06-cut", "ch06-push"],
    "07": ["ch07-mux", "ch07-glide", "ch07-watch"],
    "08": ["ch08-lettuce", "ch08-jedis", "ch08-redisson", "ch08-hangs"],
    "09": ["ch09-load", "ch09-delete"],
    "10": ["ch01-ping", "ch03-jedis", "ch07-mux", "ch07-glide"],
}


@pytest.fixture
def repo_copy(tmp_path, monkeypatch):
    """A copy of what the chapters read, so the repository itself is never touched; returns a
    function that edits a file of it and says which chapters went stale."""
    for part in ("pipelab", "java-examples", OTHER_EXAMPLES_DIR, "notebooks"):
        ignored = shutil.ignore_patterns("__pycache__", "reference_run", "node_modules", "target")
        shutil.copytree(REPO / part, tmp_path / part, ignore=ignored)
    for part in ("jbang-catalog.json", "uv.lock"):
        shutil.copyfile(REPO / part, tmp_path / part)
    monkeypatch.setattr(inputs, "REPO", tmp_path)
    monkeypatch.setattr(jbang, "REPO", tmp_path)  # where the aliases' sources are found
    notebooks = sorted((tmp_path / "notebooks").glob("*.ipynb"))
    before = {nb.name[:2]: inputs.sources(nb, RAN.get(nb.name[:2], [])) for nb in notebooks}

    def edit(path: str, old: str, new: str) -> list[str]:
        file = tmp_path / path
        text = file.read_text()
        assert old in text, f"{old!r} is not in {path}"
        file.write_text(text.replace(old, new, 1))
        now = {nb.name[:2]: inputs.sources(nb, RAN.get(nb.name[:2], [])) for nb in notebooks}
        stale = [chapter for chapter in now if inputs.changes(before[chapter], now[chapter])]
        before.update(now)  # the next edit is judged on its own
        return stale

    return edit


@pytest.mark.parametrize(
    "path, old, new",
    [
        ("pipelab/server.py", "\nimport", "\n# a comment on why\nimport"),
        ("pipelab/lab.py", '"""The lab a notebook opens', '"""A docstring, reworded: the lab a notebook opens'),
        ("pipelab/lab.py", "\nclass ", "\n\n# a banner\n\nclass "),
        ("java-examples/common/LabSupport.java", "final class LabSupport {", "/* why */ final class  LabSupport\n{"),
        ("pipelab/settings.py", f"DEFAULT_PORT = {settings.DEFAULT_PORT}", "DEFAULT_PORT = 1"),
        ("java-examples/common/LabDefaults.java", f"? {settings.DEFAULT_PORT} :", "? 1 :"),
        ("uv.lock", "\n[[package]]", '\n[[package]]\nname = "ruff-like-tool"\nversion = "1.0"\n\n[[package]]'),
    ],
)
def test_what_moves_no_figure_stales_no_chapter(repo_copy, path, old, new):
    assert repo_copy(path, old, new) == []


def test_a_change_to_an_examples_code_stales_the_chapters_that_ran_it(repo_copy):
    assert repo_copy("java-examples/ch02-system-calls/DepthBench.java", 'VALUE = "xxx"', 'VALUE = "xxy"') == [
        "02",
        "06",
    ]


def test_a_workload_size_stales_exactly_its_chapter(repo_copy):
    assert repo_copy("pipelab/chapters/ch01.py", "N_PING = Size(full=10_000", "N_PING = Size(full=10_001") == ["01"]
    assert repo_copy("pipelab/chapters/ch02/parameters.py", "N_PY = Size(full=20_000", "N_PY = Size(full=20_001") == [
        "02"
    ]


def test_a_quick_size_stales_no_full_run(repo_copy):
    assert (
        repo_copy(
            "pipelab/chapters/ch01.py", "N_PING = Size(full=10_000, quick=500)", "N_PING = Size(full=10_000, quick=501)"
        )
        == []
    )
    assert repo_copy(
        "pipelab/chapters/ch01.py", "N_PING = Size(full=10_000, quick=501)", "N_PING = Size(full=9_999, quick=501)"
    ) == ["01"]


@pytest.mark.parametrize("quick", [False, True])
def test_each_mode_reads_only_its_own_sizes(quick):
    module = "from ..params import Size\nBASE = 4\nN = Size(full=BASE * 10, quick=2)\nM = Size(3, 1)\n"

    def meaning(source, names=None):
        return inputs.python_meaning(source, names, quick=quick)

    edits = {  # what each edit moves: a full run's sizes, or a quick run's
        "full": [("BASE * 10", "BASE * 11"), ("Size(3, 1)", "Size(5, 1)")],
        "quick": [("quick=2", "quick=3"), ("Size(3, 1)", "Size(3, 2)")],
    }
    for mode, changes in edits.items():
        for old, new in changes:
            moved = meaning(module.replace(old, new)) != meaning(module)
            assert moved == (mode == ("quick" if quick else "full")), (old, new)
    # What only the full size uses is no input of a quick run of N.
    assert (meaning(module.replace("BASE = 4", "BASE = 5"), {"N"}) != meaning(module, {"N"})) is not quick


def test_a_function_another_chapter_uses_stales_it_too(repo_copy):
    # Chapter 6's harness runs chapter 2's taught GET loop (taught.load): an edit of that cell stales both.
    stale = repo_copy("notebooks/02-system-calls.ipynb", "def get_in_batches(", "def get_in_batches(_unused=None, *, ")
    assert stale == ["02", "06"]
    assert repo_copy("notebooks/02-system-calls.ipynb", "## ", "## A retitled ") == [], "markdown is no input"


CH10 = OTHER_EXAMPLES_DIR  # the Node, Go and Rust examples


def test_a_node_or_go_lock_stales_the_chapters_that_run_its_examples(repo_copy):
    # Chapters 4 and 5 run the shared Node and Go examples through pipelab.node and pipelab.golang.
    assert repo_copy(f"{CH10}/node/package-lock.json", '"lockfileVersion"', '"lockfileVersion" ') == ["04", "05", "10"]


def test_a_comment_in_a_node_or_go_example_stales_nothing_its_code_does(repo_copy):
    examples = sorted(p for p in (REPO / CH10).rglob("*") if p.suffix in (".mjs", ".go"))
    if not examples:
        pytest.skip("no Node or Go example in this checkout")
    path = examples[0].relative_to(REPO).as_posix()
    text = examples[0].read_text()
    first = next(line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("//"))
    assert repo_copy(path, first, "// why, in a comment\n" + first) == []
    assert repo_copy(path, first, first + "\n;") == ["04", "05", "10"]


def test_a_rust_file_stales_chapter_11_alone_and_its_comments_nothing(repo_copy):
    lib = f"{CH10}/rust/src/lib.rs"
    first = next(line for line in (REPO / lib).read_text().splitlines() if line.strip() and not line.startswith("//"))
    assert repo_copy(lib, first, "// why, in a comment\n" + first) == []
    assert repo_copy(lib, first, first + "\n;") == ["11"]
    assert repo_copy(f"{CH10}/rust/Cargo.lock", "version = 4", "version = 4 ") == ["11"]


def test_a_toolchain_version_is_part_of_its_chapters_key(monkeypatch):
    notebook = next(nb for nb in NOTEBOOKS if nb.name.startswith("10"))
    monkeypatch.setattr(inputs, "toolchain_versions", lambda langs: dict.fromkeys(langs, "v1"))
    before = inputs.sources(notebook, [])
    monkeypatch.setattr(inputs, "toolchain_versions", lambda langs: dict.fromkeys(langs, "v2"))
    assert inputs.changes(before, inputs.sources(notebook, [])) == ["toolchains"]
    other = next(nb for nb in NOTEBOOKS if nb.name.startswith("09"))
    assert "toolchains" not in inputs.sources(other, []), "a chapter without Node or Go keeps its key"


def test_make_book_chapter_numbers():
    assert (
        chapter_prefixes("3,4") == ["03", "04"] and chapter_prefixes(" 8 ") == ["08"] and chapter_prefixes("") is None
    )
    with pytest.raises(LabError, match="chapter numbers"):
        chapter_prefixes("three")


def test_each_notebook_has_a_key():
    for notebook in NOTEBOOKS:
        key = inputs.chapter_key(notebook, quick=True, server="s", aliases=[])
        assert json.loads(json.dumps(key)) == key and len(key["key"]) == 64
