"""What the site shows is what the quick book runs.

A named section of a Python file that a page includes (`--8<-- "file.py:name"`) holds functions and
classes the chapter notebooks called (tests/section_trace.py recorded them inside their kernels); a
named section of a Java file belongs to an example the notebooks ran, and every method it declares is
called from outside it.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest

from pipelab.paths import REPO
from tests.conftest import java_examples_run

INCLUDE = re.compile(r'--8<--\s+"([^":]+):([\w-]+)"')
JAVA_METHOD = re.compile(
    r"^\s*(?:(?:public|private|protected|static|final|synchronized|abstract)\s+)*"
    r"(?:<[^>]+>\s+)?[\w.<>\[\], ?]+\s+(\w+)\s*\([^;{]*\)?\s*(?:throws [\w., ]+)?\{?\s*$"
)
NOT_METHODS = {"if", "for", "while", "switch", "catch", "return", "new", "else", "try", "synchronized"}


def included_sections() -> dict[tuple[str, str], list[str]]:
    """(file, section) → the pages that include it."""
    found: dict[tuple[str, str], list[str]] = {}
    for page in sorted((REPO / "site").rglob("*.md")):
        for path, section in INCLUDE.findall(page.read_text()):
            found.setdefault((path, section), []).append(page.relative_to(REPO).as_posix())
    return found


def section_span(path: str, name: str) -> range:
    """Line numbers (1-based) between a section's start and end markers."""
    lines = (REPO / path).read_text().splitlines()
    start = next(i for i, line in enumerate(lines, 1) if f"[start:{name}]" in line)
    end = next(i for i, line in enumerate(lines, 1) if f"[end:{name}]" in line)
    return range(start + 1, end)


def python_definitions(path: str, span: range) -> list[str]:
    """The top-level functions and classes a section defines (nested ones run with their parent)."""
    tree = ast.parse((REPO / path).read_text())
    return [
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.lineno in span
    ]


def module_of(path: str) -> str:
    """The module's import name; a package's __init__.py is the package (importing "….__init__" would
    load a second copy, which the notebooks never call)."""
    return ".".join(Path(path).with_suffix("").parts).removesuffix(".__init__")


def section_targets() -> dict[str, list[str]]:
    """{module: [names]} of everything the site's Python sections show: what the kernels record."""
    targets: dict[str, list[str]] = {}
    for path, section in included_sections():
        if path.endswith(".py"):
            targets.setdefault(module_of(path), []).extend(python_definitions(path, section_span(path, section)))
    return targets


def java_methods(path: str, span: range) -> dict[str, int]:
    lines = (REPO / path).read_text().splitlines()
    out = {}
    for number in span:
        match = JAVA_METHOD.match(lines[number - 1])
        if match and match.group(1) not in NOT_METHODS and "=" not in lines[number - 1]:
            out[match.group(1)] = number
    return out


def aliases_for(path: str) -> set[str]:
    """The catalog aliases whose script is `path` or includes it with //SOURCES."""
    catalog = json.loads((REPO / "jbang-catalog.json").read_text())["aliases"]
    target = (REPO / path).resolve()
    found = set()
    for alias, entry in catalog.items():
        script = REPO / entry["script-ref"]
        sources = {script.resolve()} | {
            (script.parent / s.strip()).resolve() for s in re.findall(r"^//SOURCES\s+(.+)$", script.read_text(), re.M)
        }
        if target in sources:
            found.add(alias)
    return found


@pytest.fixture(scope="module")
def ran(executed_notebooks, isolated_build):
    if os.environ.get("PIPELAB_TEST_NOTEBOOKS"):
        pytest.skip("only some notebooks ran (PIPELAB_TEST_NOTEBOOKS)")
    called = set((isolated_build / "sections-run.txt").read_text().split())
    return called, java_examples_run(isolated_build)


SECTIONS = sorted(included_sections())


@pytest.mark.parametrize("path,section", [s for s in SECTIONS if s[0].endswith(".py")])
def test_every_python_section_on_the_site_runs_in_the_quick_book(path, section, ran):
    called, _ = ran
    names = python_definitions(path, section_span(path, section))
    assert names, f"{path}:{section} shows no function"
    never = [name for name in names if f"{module_of(path)}:{name}" not in called]
    assert not never, (
        f"{path}:{section} (on {', '.join(included_sections()[(path, section)])}) shows "
        f"{', '.join(never)}, which no chapter notebook runs"
    )


@pytest.mark.parametrize("path,section", [s for s in SECTIONS if s[0].endswith(".java")])
def test_every_java_section_on_the_site_is_run_by_the_quick_book(path, section, ran):
    _, java = ran
    aliases = aliases_for(path)
    assert aliases & java, f"{path}:{section}: no notebook ran any of {sorted(aliases) or 'its aliases'}"
    span = section_span(path, section)
    methods = java_methods(path, span)
    assert methods, f"{path}:{section} declares no method"
    files = {REPO / path} | {
        REPO / json.loads((REPO / "jbang-catalog.json").read_text())["aliases"][a]["script-ref"] for a in aliases
    }
    uncalled = []
    for name, line in methods.items():
        calls = sum(len(re.findall(rf"\b{name}\s*\(|::{name}\b", f.read_text())) for f in files)
        if calls <= 1:  # the declaration itself is the one match
            uncalled.append(f"{name} (line {line})")
    assert not uncalled, f"{path}:{section} shows {', '.join(uncalled)}, which nothing calls"


def test_the_checks_find_what_they_look_for():
    """The parsers above, on this repository's own files (a check that finds nothing proves nothing)."""
    assert python_definitions("pipelab/measure.py", section_span("pipelab/measure.py", "measure")) == [
        "measure",
        "measure_interleaved",
        "_rounds",
    ]
    assert "Probe" in python_definitions(
        "pipelab/chapters/ch04/instruments.py", section_span("pipelab/chapters/ch04/instruments.py", "instruments")
    )
    assert module_of("pipelab/chapters/ch01.py") == "pipelab.chapters.ch01"
    assert module_of("pipelab/chapters/ch08/__init__.py") == "pipelab.chapters.ch08"
    assert aliases_for("java-examples/common/LabSupport.java") >= {"ch01-ping", "ch02-depth"}
    assert JAVA_METHOD.match("    static long sendPipelined(Jedis jedis, int n) {").group(1) == "sendPipelined"
    assert JAVA_METHOD.match("    public static void main(String[] args) throws Exception {").group(1) == "main"
    assert not JAVA_METHOD.match("        int total = count(a, b);")
