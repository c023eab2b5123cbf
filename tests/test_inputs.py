"""What keys a chapter's results: a change to anything that produced them measures the chapter again,
and nothing else does."""
from __future__ import annotations

import json
import shutil

import pytest

from pipelab.book import inputs
from pipelab.book.cli import chapter_prefixes
from pipelab.errors import LabError
from pipelab.paths import REPO


def test_a_notebook_reaches_its_chapter_module_and_the_harness_it_imports():
    files = {p.relative_to(REPO).as_posix() for p in inputs.python_files(REPO / "notebooks" / "07-implicit-pipelining.ipynb")}
    assert {"pipelab/chapters/ch07.py", "pipelab/chapters/ch01.py", "pipelab/lab.py", "pipelab/measure.py"} <= files
    assert "pipelab/chapters/ch06.py" not in files, "another chapter's module is not an input"


def test_a_chapters_java_inputs_follow_sources_lines():
    names = {p.name for p in inputs.java_files("08")}
    assert {"LettuceTraps.java", "JedisTraps.java", "LabSupport.java", "ClusterSupport.java"} <= names
    assert "PingBench.java" not in names


def test_the_key_changes_with_each_input_and_only_then(tmp_path, monkeypatch):
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path / "build"))
    notebook = REPO / "notebooks" / "02-system-calls.ipynb"
    key = inputs.chapter_key(notebook, quick=True, server="s1")
    assert key == inputs.chapter_key(notebook, quick=True, server="s1")
    for other in (inputs.chapter_key(notebook, quick=False, server="s1"),
                  inputs.chapter_key(notebook, quick=True, server="s2")):
        assert other["key"] != key["key"]
    (tmp_path / "build" / "notebooks").mkdir(parents=True)
    assert not inputs.unchanged(notebook, key), "never run: measure"
    inputs.record(notebook, key)
    assert not inputs.unchanged(notebook, key), "no executed notebook to show: measure"
    shutil.copyfile(notebook, tmp_path / "build" / "notebooks" / notebook.name)
    assert inputs.unchanged(notebook, key)
    # A copy of the repository where one harness module changed by a byte: the key moves.
    changed = dict(key, python="0" * 64)
    stamp = json.loads(inputs.stamp_path(notebook).read_text())
    assert stamp["key"] == key["key"] and changed["python"] != stamp["python"]
    assert "pipelab/chapters/ch02.py" in stamp["files"]


def test_an_edit_to_a_module_or_java_source_changes_the_key(tmp_path, monkeypatch):
    # On a copy of what chapter 2 reads, so the repository itself is never touched.
    for part in ("pipelab", "java-examples", "notebooks"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("jbang-catalog.json", "uv.lock"):
        shutil.copyfile(REPO / part, tmp_path / part)
    monkeypatch.setattr(inputs, "REPO", tmp_path)
    notebook = tmp_path / "notebooks" / "02-system-calls.ipynb"
    before = inputs.chapter_key(notebook, quick=True, server="s")["key"]
    for edited, comment in ((tmp_path / "pipelab" / "chapters" / "ch02.py", b"# an edit"),
                            (tmp_path / "java-examples" / "common" / "LabSupport.java", b"// an edit")):
        original = edited.read_bytes()
        edited.write_bytes(original + b"\n" + comment + b"\n")
        assert inputs.chapter_key(notebook, quick=True, server="s")["key"] != before, edited.name
        edited.write_bytes(original)
    (tmp_path / "pipelab" / "chapters" / "ch06.py").write_text("# another chapter's edit\n")
    assert inputs.chapter_key(notebook, quick=True, server="s")["key"] == before


def test_make_book_chapter_numbers():
    assert chapter_prefixes("3,4") == ["03", "04"] and chapter_prefixes(" 8 ") == ["08"] and chapter_prefixes("") is None
    with pytest.raises(LabError, match="chapter numbers"):
        chapter_prefixes("three")
