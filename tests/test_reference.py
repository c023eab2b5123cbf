"""The reference run: plots drawn from results files alone, the site built from the committed
reference before the reader measures anything (and saying so), the figures written into the
Markdown for GitHub's readers, and `pipelab reference` copying only what it should."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from pipelab import Measurement, chapters, paths, plots, results
from pipelab.book import build as book
from pipelab.book import hooks, inputs, markers, reference, sitecheck
from pipelab.chapters import ch01
from pipelab.errors import LabError
from tests.conftest import document, run_cli, unavailable

SOURCES = sorted((paths.REPO / "site").rglob("*.md"))
NO_REFERENCE = "pipelab/reference_run/ holds no reference run yet: `make reference` makes one, for the lead to commit"


def committed_reference() -> bool:
    return bool(results.names(paths.reference_dir()))


def plot_markers() -> dict[str, list[str]]:
    """{page source: the results names of its plot markers}."""
    return {md: [name for kind, name in markers.BLOCK.findall(md.read_text()) if kind == "plot"] for md in SOURCES}


def test_every_plot_marker_has_a_registered_plot_and_every_plot_a_marker():
    shown = {name for names in plot_markers().values() for name in names}
    assert shown == set(chapters.every_plot())


def test_every_registered_plot_draws_from_its_reference_document():
    if not committed_reference():
        unavailable(NO_REFERENCE)  # a failure in CI: the committed reference is what readers see
    empty = []
    for name, draw in sorted(chapters.every_plot().items()):
        doc = results.load(name, paths.reference_dir())
        assert doc is not None, f"the reference run has no {name}"
        fig = draw(doc)
        if not any(ax.has_data() for ax in fig.axes):
            empty.append(name)
        plt.close(fig)
    assert not empty, f"plots with no data drawn from the reference: {empty}"


def test_the_lab_saves_the_registered_plot_drawn_from_the_file_it_wrote(lab, monkeypatch, tmp_path):
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path))  # not among the notebooks' results
    drawn = []

    def ping_plot(doc):  # the chapter's own plot, recording what it was given
        drawn.append(doc)
        return ch01.ping_plot(doc)

    monkeypatch.setitem(plots._PLOTS, "chx/lab-save", ping_plot)
    runs = [Measurement(f"m{i}", 100, [s, s * 1.1]) for i, s in enumerate((0.01, 0.002, 0.008, 0.001))]
    lab.save("chx/lab-save", runs, params={"n": 100}, alt="four bars")
    png = paths.results_dir() / "chx" / "lab-save.png"
    assert png.read_bytes().startswith(b"\x89PNG")
    assert [m.samples for m in drawn[0]["measurements"]] == [m.samples for m in runs]
    assert drawn[0] == results.load("chx/lab-save"), "drawn from the file as written, alt text and all"
    lab.save("chx/no-plot", runs)
    assert not (paths.results_dir() / "chx" / "no-plot.png").exists()


# --- figures in the prose --------------------------------------------------------------------


def test_writing_the_references_figures_into_the_markdown_is_idempotent(tmp_path):
    document(
        tmp_path,
        "chx/run",
        summary={"speedup": results.quantity(12.34, "x"), "outcome": results.quantity(0, "count", "OK | Error")},
    )
    bare = (
        "Pipelined, {{ chx/run#speedup }} faster;\n"
        "{{ chx/run#outcome }} and `{{ chx/run#outcome }}`, {{ chx/run#gone }}.\n"
    )
    once = reference.with_values(bare, tmp_path)
    assert once == (
        "Pipelined, <span><!--{{ chx/run#speedup }}-->12.3x</span> faster;\n"
        "<span><!--{{ chx/run#outcome }}-->OK \\| Error</span> and "
        "<span><!--{{ chx/run#outcome }}-->`OK \\| Error`</span>, "
        "<span><!--{{ chx/run#gone }}-->–</span>.\n"
    )
    assert reference.with_values(once, tmp_path) == once
    assert markers.values(once) == markers.values(bare)
    document(tmp_path, "chx/run", summary={"speedup": results.quantity(3.0, "x")})  # a new reference run
    again = reference.with_values(once, tmp_path)
    assert "-->3.0x</span> faster" in again and "-->`–`</span>" in again, "stale values are refreshed"


def test_the_committed_markdown_shows_the_references_figures():
    stale = [
        md.relative_to(paths.REPO).as_posix()
        for md in [*SOURCES, paths.REPO / "README.md", paths.REPO / "CONTRIBUTING.md"]
        if reference.with_values(md.read_text()) != md.read_text()
    ]
    assert not stale, f"run `make reference FROM_RESULTS=1` (or `pipelab reference`): stale figures in {stale}"


def test_the_site_shows_the_readers_figure_and_else_the_references_marked(tmp_path, monkeypatch):
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv("PIPELAB_REFERENCE", str(tmp_path / "reference"))
    document(paths.reference_dir(), "chx/ref-only", summary={"k": results.quantity(2.5, "x")})
    document(paths.results_dir(), "chx/sure", summary={"k": results.quantity(3.0, "x", interval=(2.9, 3.2))})
    document(paths.reference_dir(), "chx/both", summary={"k": results.quantity(9.0, "x")})
    document(paths.results_dir(), "chx/both", summary={"k": results.quantity(1.5, "x")})  # the reader's own
    page = SimpleNamespace(file=SimpleNamespace(src_uri="chapters/x.md"))
    source = hooks.on_page_markdown(
        "<span><!--{{ chx/both#k }}-->9.0x</span>, {{ chx/ref-only#k }}, `{{ chx/ref-only#k }}`, {{ chx/neither#k }}"
        ", {{ chx/sure#k }}",
        page,
        None,
        None,
    )
    assert source == (
        f'1.5x, <span class="ref" title="{hooks.REFERENCE_TITLE}">2.5x</span>, '
        f'<span class="ref" title="{hooks.REFERENCE_TITLE}">`2.5x`</span>, _{hooks.NOT_YET}_, '
        '<span class="figure" title="95% interval 2.9x – 3.2x">3.0x</span>'
    )


def test_a_block_marker_inside_a_folded_box_stays_inside_it(monkeypatch):
    monkeypatch.setattr(hooks.report, "environment_table", lambda name: "| a | b |\n|---|---|\n| 1 | 2 |")
    page = SimpleNamespace(file=SimpleNamespace(src_uri="chapters/x.md"))
    boxed = hooks.on_page_markdown('??? info "Env"\n\n    <!-- pipelab:env chx -->\n\nAfter.\n', page, None, None)
    assert boxed == '??? info "Env"\n\n    | a | b |\n    |---|---|\n    | 1 | 2 |\n\nAfter.\n'
    plain = hooks.on_page_markdown("Before: <!-- pipelab:env chx -->\n", page, None, None)
    assert plain == "Before: | a | b |\n|---|---|\n| 1 | 2 |\n", "text before a marker is not an indent"


def test_a_results_file_older_than_its_plot_says_so_on_the_page(tmp_path, monkeypatch):
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv("PIPELAB_REFERENCE", str(tmp_path / "reference"))
    document(paths.results_dir(), "ch02/busy-loop", params={"n": 100, "depth": 100})  # no histogram yet
    rtts = [0, 1]
    sweep = [
        Measurement(f"{mode} @ {rtt}", 10, [0.01], {"mode": mode, "rtt_ms": rtt, "via_proxy": rtt > 0})
        for rtt in rtts
        for mode in ("single", "pipelined")
    ]
    document(
        paths.reference_dir(),
        "ch01/rtt-sweep",
        sweep,
        params={"rtts_ms": rtts, "depth": 1_000},
        environment={"measured_at": "2026-11-23T19:02:47+00:00", "cpu_model": "AMD EPYC", "cpu_count": 2},
    )
    assert hooks._draw_plots() == ["ch01/rtt-sweep"]
    assert "predates the plot" in hooks._plot("ch02/busy-loop", 1)
    assert hooks._plot("ch01/rtt-sweep", 1).endswith(
        "<figcaption>The reference machine's run (measured 2026-11-23 on AMD EPYC, 2 CPUs): run <code>make book</code> "
        "for your own.</figcaption>\n</figure>"
    )
    assert hooks.NOT_YET[1:] in hooks._plot("ch01/ping-10k", 1)


def test_a_plot_is_drawn_again_only_when_what_it_shows_changed(tmp_path, monkeypatch):
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv("PIPELAB_REFERENCE", str(tmp_path / "reference"))

    def sweep(seconds: float) -> None:
        params = [{"mode": m, "rtt_ms": 0, "via_proxy": False} for m in ("single", "pipelined")]
        runs = [Measurement(f"{p['mode']} @ 0", 10, [seconds], p) for p in params]
        document(paths.reference_dir(), "ch01/rtt-sweep", runs, params={"rtts_ms": [0], "depth": 1_000})

    drawn, save = [], plots.save
    monkeypatch.setattr(plots, "save", lambda name, *args: drawn.append(name) or save(name, *args))
    picture = hooks._figures() / "ch01" / "rtt-sweep.png"
    sweep(0.01)
    assert hooks._draw_plots() == ["ch01/rtt-sweep"] and drawn == ["ch01/rtt-sweep"] and picture.exists()
    assert hooks._draw_plots() == ["ch01/rtt-sweep"] and len(drawn) == 1, "the same results: the same picture"
    sweep(0.02)
    assert hooks._draw_plots() == ["ch01/rtt-sweep"] and len(drawn) == 2, "other results: drawn again"
    (paths.reference_dir() / "ch01" / "rtt-sweep.json").unlink()
    assert hooks._draw_plots() == [] and not picture.exists(), "no results: no picture left behind"


def html_of(site, md) -> str:
    page = md.relative_to(paths.REPO / "site").with_suffix("")
    return (site / ("index.html" if page.name == "index" else page / "index.html")).read_text()


def test_a_site_built_before_the_reader_measures_reads_from_the_reference(unmeasured_sites):
    if not committed_reference():
        unavailable(NO_REFERENCE)  # a failure in CI: the committed reference is what readers see
    code, stderr, site = unmeasured_sites["reference"]
    assert code == 0, stderr
    problems = [
        f"{page.relative_to(site)}: says not measured yet"
        for page in sorted(site.rglob("*.html"))
        if "not measured yet" in re.sub(r"<[^>]+>", "", page.read_text()).lower()
    ]
    for md, names in plot_markers().items():
        html = html_of(site, md)
        for name in names:
            if not re.search(rf'<img [^>]*src="[./]*figures/{name}\.png"', html):
                problems.append(f"{md.name}: no <img> for the plot {name}")
            if not (site / "figures" / f"{name}.png").exists():
                problems.append(f"{md.name}: figures/{name}.png is not in the site")
        if names and "<figcaption>The reference machine's run (measured " not in html:
            problems.append(f"{md.name}: its plots do not say they are the reference machine's")
        text = md.read_text()
        if markers.values(text) and 'class="ref"' not in html:
            problems.append(f"{md.name}: its figures are not marked as the reference machine's")
        if "pipelab:env" in text and "The reference machine's environment" not in html:
            problems.append(f"{md.name}: its environment table does not say it is the reference machine's")
    problems += sitecheck.check_links(site) + sitecheck.template_text(site)
    assert not problems, "\n".join(problems)


# --- pipelab reference -----------------------------------------------------------------------


def run_of_every_chapter(base, quick=False) -> None:
    for chapter in reference.chapters():
        results.save(f"{chapter}/run", environment={"quick_mode": quick}, base=base)


def record_runs(aliases: dict[str, list[str]]) -> None:
    """What `make book` records of each chapter's run: its inputs, with the JBang aliases it ran."""
    for notebook in book.notebooks():
        chapter = f"ch{notebook.name[:2]}"
        inputs.record(notebook, inputs.chapter_key(notebook, quick=False, server="s", aliases=aliases.get(chapter, [])))


def test_publishing_copies_every_chapters_results_the_courses_and_nothing_else(tmp_path, monkeypatch):
    source, target = tmp_path / "results", tmp_path / "reference"
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path / "build"))
    run_of_every_chapter(source)
    with pytest.raises(LabError, match="No record of what chapter 1"):
        reference.publish(source, target)
    record_runs({"ch06": ["ch02-depth", "ch06-cut"]})
    results.save("course/timings", environment={}, base=source)
    results.save("course/demos", environment={"quick_mode": True}, base=source)  # a test's quick course: not kept
    (source / "ch01" / "run.png").write_bytes(b"\x89PNG")
    results.save("ch99/gone", environment={}, base=target)  # the previous reference's (no such chapter now)
    (target / ".gitkeep").write_text("")
    names = reference.publish(source, target)
    chapters = [f"{chapter}/run" for chapter in reference.chapters()]
    assert names == [*chapters, "course/timings"] and len(chapters) == len(book.notebooks())
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()) == sorted(
        [".gitkeep", *(f"{name}.json" for name in names), reference.SOURCES]
    )
    assert results.load("ch01/run", target) == results.load("ch01/run", source)
    assert reference.stale_chapters(target) == {}, "the run is recorded as made from the sources as they are"
    made_from = json.loads((target / reference.SOURCES).read_text())
    assert made_from["ch06"]["aliases"] == ["ch02-depth", "ch06-cut"]
    assert "java-examples/ch02-system-calls/DepthBench.java" in made_from["ch06"]["java"]
    results.save("book/weather", environment={}, summary={"slow_pct": {"value": 31}}, base=source)
    reference.publish(source, target)
    assert results.load("book/weather", target)["summary"] == {"slow_pct": {"value": 31}}, "the run's weather goes too"


def test_the_committed_reference_was_made_from_every_chapters_current_sources():
    if not committed_reference():
        unavailable(NO_REFERENCE)
    stale = reference.stale_chapters()
    assert not stale, (
        f"changed since the reference run: {stale}; run `make reference` and commit pipelab/reference_run/"
    )


@pytest.mark.parametrize("broken", ["quick", "missing chapter"])
def test_publishing_refuses_a_quick_or_partial_run_in_one_sentence(tmp_path, broken):
    source, target = tmp_path / "build" / "results", tmp_path / "reference"
    run_of_every_chapter(source, quick=broken == "quick")
    if broken == "missing chapter":
        (source / "ch03" / "run.json").unlink()
    results.save("ch01/kept", environment={}, base=target)
    done = run_cli(
        "reference", "--from-results", env={"PIPELAB_BUILD": str(tmp_path / "build"), "PIPELAB_REFERENCE": str(target)}
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and ("quick run" if broken == "quick" else "chapter 3") in done.stderr
    assert results.names(target) == ["ch01/kept"], "the reference is left as it was"


def test_the_reference_run_times_its_parts_for_the_readme(tmp_path, monkeypatch):
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path / "build"))
    record_runs({})
    first = book.notebooks()[0]
    inputs.record(first, inputs.last_run(first) | {"seconds": 52.6})
    (tmp_path / "build" / reference.TEST_TIME).write_text(json.dumps({"seconds": 581, "measured_at": "2026-11-24"}))
    reference.record_time(reference.BOOK_TIME, 800.4)  # a `make book` that measured every chapter
    reference.save_timings(site_s=15.2, target=tmp_path / "ref")
    made = results.load(reference.TIMINGS, tmp_path / "ref")
    summary = made["summary"]
    assert summary["ch01_s"]["text"] == "53 s" and summary["ch02_s"]["value"] is None, "a run that recorded no time"
    assert (summary["book_s"]["value"], summary["book_min"]["value"], summary["test_s"]["value"]) == (800, 13.3, 581)
    assert made["params"]["book_measured_at"] and made["params"]["kept_from_the_last_run"] == []
    # FROM_RESULTS on a machine whose build has no whole run: the reference keeps what it had.
    (tmp_path / "build" / reference.BOOK_TIME).unlink()
    reference.save_timings(target=tmp_path / "ref")
    again = results.load(reference.TIMINGS, tmp_path / "ref")
    assert again["summary"]["book_s"]["value"] == 800 and "book_s" in again["params"]["kept_from_the_last_run"]
    assert again["summary"]["site_s"]["value"] == 15 and "site_s" in again["params"]["kept_from_the_last_run"]
    assert again["params"]["book_measured_at"] == made["params"]["book_measured_at"], "a kept time keeps its date"
    # Chapter 1 measured again and published beside chapter 2's results as they were: chapter 2 keeps its time.
    inputs.record(first, inputs.last_run(first) | {"seconds": 61.0})
    again["summary"]["ch02_s"] = results.quantity(70, "s", "70 s")
    results.save(
        reference.TIMINGS, environment={}, params=again["params"], summary=again["summary"], base=tmp_path / "ref"
    )
    reference.save_timings(target=tmp_path / "ref", kept_chapters={"ch02"})
    third = results.load(reference.TIMINGS, tmp_path / "ref")["summary"]
    assert (third["ch01_s"]["value"], third["ch02_s"]["value"]) == (61, 70)
    readme = reference.with_values("took {{ book/timings#book_s }} in all", tmp_path / "ref")
    assert readme == "took <span><!--{{ book/timings#book_s }}-->800 s</span> in all"


def test_only_chapters_whose_results_differ_from_the_reference_count_as_measured_again(tmp_path):
    source, target = tmp_path / "results", tmp_path / "reference"
    run_of_every_chapter(source)
    run_of_every_chapter(target)
    assert reference.unchanged_chapters(source, target) == set(reference.chapters())
    results.save("ch03/run", environment={"again": True}, base=source)
    assert reference.unchanged_chapters(source, target) == set(reference.chapters()) - {"ch03"}


def test_every_plot_a_chapter_declares_is_registered():
    """Chapter packages too: a plot whose module is never imported would vanish from the site."""
    declared = set()
    for path in (paths.REPO / "pipelab" / "chapters").rglob("*.py"):
        declared |= set(re.findall(r'@plots\.draws\("([\w/.-]+)"\)', path.read_text()))
    assert len(declared) >= 17 and declared <= set(chapters.every_plot())


def test_a_shown_text_with_angle_brackets_stays_visible_and_a_code_figure_stays_verbatim():
    plain, code = markers.Value("ch05/redirects", "x", False), markers.Value("ch05/redirects", "x", True)
    assert plain.markdown("ASK 8999 <addr> | more") == "ASK 8999 &lt;addr&gt; \\| more"
    assert code.markdown("ASK 8999 <addr>") == "`ASK 8999 <addr>`"
    written = plain.written("ASK 8999 <addr>")
    assert [(v.name, v.key) for v in markers.values(written)] == [("ch05/redirects", "x")]
