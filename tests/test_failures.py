"""A chapter's failure costs that chapter: the run goes on, what failed is kept and shown on its page,
the last lines name it and the status is non-zero; the site is refreshed after each chapter."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict

import nbformat
import pytest

from pipelab import paths
from pipelab.book import build as book
from pipelab.book import cli, failures, hooks, live

FAKE = ("98-breaks", "99-measures")  # chapter numbers no real chapter has: the session's results stay apart


def fake_notebook(path, title: str, code: str) -> None:
    md, cell = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nbformat.write(nbformat.v4.new_notebook(cells=[md(f"# Chapter 9 — {title}"), cell(code)]), path)


@pytest.fixture
def two_chapters(tmp_path, monkeypatch):
    """Chapter 98 writes a results file, then raises; chapter 99 writes one and ends."""
    sources = [tmp_path / f"{name}.ipynb" for name in FAKE]
    write = "import json, os, pathlib; d = pathlib.Path(os.environ['PIPELAB_BUILD'], 'results', 'ch{0}'); "
    write += "d.mkdir(parents=True, exist_ok=True); (d / 'x.json').write_text('{{}}')"
    fake_notebook(sources[0], "Breaks", write.format("98") + "\nraise ValueError('boom in chapter 98')")
    fake_notebook(sources[1], "Measures", write.format("99"))
    monkeypatch.setattr(book, "notebooks", lambda only=None: sources)
    yield sources
    for name in FAKE:
        chapter = name[:2]
        shutil.rmtree(paths.results_dir() / f"ch{chapter}", ignore_errors=True)
        (paths.notebooks_out_dir() / f"{name}.ipynb").unlink(missing_ok=True)
        failures.clear(paths.REPO / "notebooks" / f"{name}.ipynb")


def test_a_failing_chapter_costs_that_chapter_only(two_chapters):
    refreshed = []
    ran = book.run_notebooks({}, quick=True, after_chapter=refreshed.append)
    assert refreshed == ["98", "99"], "the site is refreshed after a failed chapter too"
    assert [p.name for p in ran.executed] == ["99-measures.ipynb"]
    (failure,) = ran.failed
    assert failure.chapter == "98" and failure.title == "Breaks"
    assert failure.reason == "ValueError: boom in chapter 98"
    assert failures.recorded("98") == failure
    assert not (paths.results_dir() / "ch98").exists(), "the site shows the reference's figures, not half of a run"
    assert (failures.failed_dir() / "ch98" / "x.json").exists(), "nothing is lost: the partial results are kept"
    assert (failures.failed_dir() / "98-breaks.ipynb").exists() and failure.notebook.endswith("98-breaks.ipynb")
    assert (paths.results_dir() / "ch99" / "x.json").exists()
    assert "`make book CHAPTER=98` measures it again" in failure.line()
    with pytest.raises(Exception, match="boom in chapter 98"):
        ran.raise_failures()


def test_a_chapter_that_runs_again_leaves_no_failure_behind(two_chapters, tmp_path):
    book.run_notebooks({}, quick=True)
    assert failures.recorded("98")
    fake_notebook(two_chapters[0], "Breaks", "1 + 1")  # mended
    ran = book.run_notebooks({}, quick=True)
    assert not ran.failed and failures.recorded("98") is None
    assert not (failures.failed_dir() / "ch98").exists() and not (failures.failed_dir() / "98-breaks.ipynb").exists()


def test_the_failed_chapters_page_opens_with_what_failed(tmp_path, monkeypatch):
    monkeypatch.setattr(failures, "failed_dir", lambda: tmp_path)
    failure = failures.Failure("08", "Traps", "LabError: jbang ch08-lettuce exited with 1", "build/failed/08.ipynb")
    (tmp_path / "ch08.json").write_text(json.dumps(asdict(failure)))
    page = "# 8. Traps that client defaults set\n\nThe first paragraph.\n"
    shown = hooks._with_failure(page, "chapters/08-client-traps.md")
    assert shown.startswith("# 8. Traps that client defaults set\n\n!!! failure")
    assert "jbang ch08-lettuce exited with 1" in shown and "`make book CHAPTER=8`" in shown
    assert shown.endswith("The first paragraph.\n")
    assert hooks._with_failure(page, "chapters/01-round-trip-time.md") == page, "other chapters are left alone"
    assert hooks._with_failure(page, "chapters/08-client-traps-notebook.ipynb") == page


def test_the_books_last_lines_name_the_failed_chapters_and_its_status_is_not_zero(monkeypatch, capsys):
    failure = failures.Failure("08", "Traps", "ValueError: boom", "build/failed/08-client-traps.ipynb")
    monkeypatch.setattr(cli, "measure", lambda **_: book.Ran(failed=[failure]))
    assert cli.main(["book", "--no-site"]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-2:]
    assert last[0] == "pipelab: 1 chapter(s) failed; every other chapter was measured."
    assert last[1].startswith("pipelab: chapter 8 (Traps) failed: ValueError: boom.")


def test_a_refresh_rebuilds_the_chapters_pages_with_the_readers_figures(unmeasured_sites, tmp_path, monkeypatch):
    """The site built before anything was measured, then chapter 1's results: its page shows them after a
    refresh, the other pages and the search index are left as they were."""
    code, output, site = unmeasured_sites["reference"]
    assert code == 0, output
    build = tmp_path / "build"
    shutil.copytree(site, build / "site")  # copy2: the pages keep their times, so only what is older is rebuilt
    for part in (hooks.JUPYTER_CACHE, hooks.FIGURES, "site-notebooks"):
        if (earlier := site.parent / "build" / part).is_dir():
            shutil.copytree(earlier, build / part)
    shutil.copytree(paths.reference_dir() / "ch01", build / "results" / "ch01")
    ping = build / "results" / "ch01" / "ping-10k.json"
    doc = json.loads(ping.read_text())
    doc["summary"]["python_speedup"] |= {"text": "123.4x", "interval_text": "[120.0x, 125.0x]"}
    ping.write_text(json.dumps(doc))
    monkeypatch.setenv("PIPELAB_BUILD", str(build))
    monkeypatch.setenv("PIPELAB_REFERENCE", str(paths.reference_dir()))
    other = build / "site" / "chapters" / "04-pitfalls" / "index.html"
    untouched = {path: path.stat().st_mtime for path in (other, build / "site" / "search" / "search_index.json")}
    started = time.monotonic()
    took = live.LiveSite().refresh("01")
    print(f"refresh of chapter 1's pages: {time.monotonic() - started:.1f} s")  # a budget, reported
    assert took is not None
    page = (build / "site" / "chapters" / "01-round-trip-time" / "index.html").read_text()
    assert '<span class="figure" title="95% interval [120.0x, 125.0x]">123.4x</span>' in page, "the reader's, unmarked"
    assert {path: path.stat().st_mtime for path in untouched} == untouched
