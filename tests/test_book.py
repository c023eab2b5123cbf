"""The chapter end to end: notebook in quick mode on a real Redis, results, then the strict site build."""

from __future__ import annotations

import hashlib
import os
import re

import nbformat
import pytest

from pipelab import paths, results
from pipelab.book import build as book
from pipelab.book import inputs, markers
from pipelab.errors import LabError
from tests.conftest import cell_errors, unavailable

CHAPTERS = sorted((paths.REPO / "site" / "chapters").glob("*.md"))
PLOT = re.compile(r"<!--\s*pipelab:plot\s+([\w/.-]+)\s*-->")


@pytest.fixture(scope="module")
def executed(executed_notebooks):
    return executed_notebooks["01"]


def test_every_notebook_runs_without_errors(executed_notebooks):
    assert set(executed_notebooks) == {p.name[:2] for p in (paths.REPO / "notebooks").glob("*.ipynb")}
    for name, nb in executed_notebooks.items():
        assert not cell_errors(nb), name
    images = [
        o
        for c in executed_notebooks["01"].cells
        if c.cell_type == "code"
        for o in c.outputs
        if "image/png" in o.get("data", {})
    ]
    assert len(images) == 3, "chapter 1 has three plots: ping-10k, sadd, rtt-sweep"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_figure_the_prose_prints_was_measured(chapter, executed_notebooks, session):
    text = chapter.read_text()
    wanted = [(m.name, m.key) for m in markers.values(text)]
    assert wanted, "the chapter uses result markers"
    missing = [f"{name}#{key}" for name, key in wanted if (results.summary_value(name, key) or {}).get("value") is None]
    if not session.proxy_endpoint:  # without toxiproxy the RTT figures say "not measured", by design
        needs_rtt = [m for m in missing if "rtt" in m]
        missing = [m for m in missing if m not in needs_rtt]
    assert not missing, f"the prose prints figures the notebook did not measure: {missing}"
    if not session.proxy_endpoint and needs_rtt:
        unavailable(f"{len(needs_rtt)} figures need an injected RTT: {session.proxy_note}")
    plots = [name for name in PLOT.findall(text) if not (paths.results_dir() / f"{name}.png").exists()]
    assert not plots, f"the prose shows plots the notebook did not draw: {plots}"


def test_each_chapter_notes_the_java_examples_it_ran(executed_notebooks):
    """A chapter's key takes its Java inputs from what it ran, not from the aliases' names."""
    ran = {nb.name[:2]: set(inputs.runs_log(nb).read_text().split()) for nb in book.notebooks(list(executed_notebooks))}
    if "06" in ran:
        assert "ch02-depth" in ran["06"], "chapter 6 runs chapter 2's example"
    if "01" in ran:
        assert {"ch01-ping", "ch01-sadd"} <= ran["01"]


def test_results_record_the_environment_and_the_claims_hold(executed):
    ping = results.load("ch01/ping-10k")
    env = ping["environment"]
    assert env["redis_version"] and env["redis_py"] and env["hiredis"] and env["cpu_count"]
    assert env["java_clients"]["jedis"] and env["quick_mode"] is True
    assert env["server"] == "redis"
    assert env["lock_sha256"] == hashlib.sha256((paths.REPO / "uv.lock").read_bytes()).hexdigest()
    assert ping["summary"]["python_speedup"]["value"] > 1 and ping["summary"]["jedis_speedup"]["value"] > 1
    sweep = results.load("ch01/rtt-sweep")["summary"]
    assert sweep["single_ops_at_250ms"]["value"] <= 4.2  # redis.io: at most 4 requests/s at 250 ms
    assert sweep["pipelined_ops_at_250ms"]["value"] > 100 * sweep["single_ops_at_250ms"]["value"]


def test_site_builds_strict_with_the_readers_figures(built_site):
    assert (built_site / "index.html").exists()
    page = (built_site / "chapters" / "01-round-trip-time" / "index.html").read_text()
    text = re.sub(r"<[^>]+>", "", page)  # highlighted code is split into spans
    assert "not measured yet" not in text
    assert "static void pingPipelined" in text and "static long saddPipeline" in text, "Java sections of the real files"
    assert "def ping_pipelined" in text, "Python included from the notebook's taught cell"
    assert page.count('class="tabbed-set') >= 3, "Python and Java in tabs"
    for plot in ("ping-10k", "sadd", "rtt-sweep"):
        assert f"figures/ch01/{plot}.png" in page
        assert (built_site / "figures" / "ch01" / f"{plot}.png").exists()
    for chapter in CHAPTERS:
        html = (built_site / "chapters" / chapter.stem / "index.html").read_text()
        text = re.sub(r"<[^>]+>", "", html)
        assert "not measured yet" not in text, chapter.stem
        # Pygments marks Java's `static` as a declaration keyword, and Rust's `fn` as a keyword: a section of
        # the chapter's own example (Java, or chapter 11's Rust) was included and highlighted.
        shown = '<span class="kd">static</span>' in html or '<span class="k">fn</span>' in html
        assert shown, f"{chapter.stem} shows its examples' sections"
        notebook_page = (built_site / "chapters" / f"{chapter.stem}-notebook" / "index.html").read_text()
        assert "data:image/png;base64" in notebook_page or "<img" in notebook_page, chapter.stem


def test_site_builds_strict_before_anything_was_measured(unmeasured_sites):
    # Neither the reader's results nor a reference run (test_reference.py reads the build with one).
    code, stderr, site = unmeasured_sites["nothing"]
    assert code == 0, stderr
    page = (site / "chapters" / "01-round-trip-time" / "index.html").read_text()
    assert "not measured yet" in page


def test_a_cell_that_raises_fails_the_build(tmp_path, session):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("raise ValueError('boom in cell')")]
    source = tmp_path / "broken.ipynb"
    nbformat.write(nb, source)
    os.environ.update(book.kernel_env())
    with pytest.raises(LabError, match="boom in cell"):
        book.execute(source, tmp_path / "out" / "broken.ipynb", {})
    assert (tmp_path / "out" / "broken.ipynb").exists(), "the failing copy is kept for reading"
