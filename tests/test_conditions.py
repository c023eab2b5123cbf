"""Prose that checks itself: conditions parsed, judged with intervals, marked on the page, and the
committed reference keeping every condition the chapters state."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import browser
import pytest

from pipelab import paths
from pipelab.book import conditions, markers
from pipelab.book.conditions import CONTRADICTED, HELD, NOISE
from tests.background import CONTRADICTED_PAGE, contradict
from tests.conftest import unavailable


def write(base, name: str, summary: dict, quick: bool = False) -> None:
    path = base / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    environment = {"quick_mode": quick}
    path.write_text(json.dumps({"name": name, "environment": environment, "measurements": [], "summary": summary}))


def ratio(value: float, lo: float | None = None, hi: float | None = None) -> dict:
    figure = {"value": value, "unit": "x", "text": f"{value:.2g}x"}
    if lo is not None:
        figure |= {"interval": [lo, hi], "interval_text": f"{lo:.2g}x – {hi:.2g}x"}
    return figure


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """An empty reader's build and a made-up reference; returns (reader's results dir, reference dir)."""
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv("PIPELAB_REFERENCE", str(tmp_path / "reference"))
    return tmp_path / "build" / "results", tmp_path / "reference"


def test_parse_reads_comparisons_numbers_factors_and_short_keys():
    first, second = conditions.parse(" chx/a#speedup > 10 and 2 * #slow_us < chx/b#fast_us ")
    assert (first.left.name, first.left.key, first.op, first.right.number) == ("chx/a", "speedup", ">", 10.0)
    assert (second.left.factor, second.left.name, second.left.key) == (2.0, "chx/a", "slow_us")
    assert second.right.name == "chx/b"
    (about,) = conditions.parse("chx/a#r ~ 1 ±25%")
    assert about.tolerance == pytest.approx(0.25)
    assert about.text == "r ~ 1 ±25%"


@pytest.mark.parametrize(
    "bad, says",
    [
        ("chx/a#r >= 1", "not a figure"),
        ("#r > 1", "names no results file"),
        ("chx/a#r ~ 1", "takes a tolerance"),
        ("chx/a#r > 1 ±5%", "takes a tolerance"),
        ("chx/a#r", "is not 'A > B'"),
    ],
)
def test_a_condition_the_build_cannot_read_says_why(bad, says):
    with pytest.raises(conditions.ConditionError, match=says):
        conditions.parse(bad)


@pytest.mark.parametrize(
    "condition, left, right, state",
    [
        ("a > b", (1.2, 1.4), (1.0, 1.0), HELD),
        ("a > b", (0.9, 1.4), (1.0, 1.0), NOISE),
        ("a > b", (0.5, 0.9), (1.0, 1.0), CONTRADICTED),
        ("a < b", (2.0, 3.0), (3.5, 4.0), HELD),
        ("a < b", (2.0, 3.6), (3.5, 4.0), NOISE),
        ("a < b", (4.1, 5.0), (3.5, 4.0), CONTRADICTED),
        ("a ~ b ±25%", (0.9, 1.1), (1.0, 1.0), HELD),
        ("a ~ b ±25%", (0.9, 1.4), (1.0, 1.0), NOISE),
        ("a ~ b ±25%", (1.5, 2.0), (1.0, 1.0), CONTRADICTED),
        ("a ~ b ±25%", (0.5, 0.7), (1.0, 1.0), CONTRADICTED),
    ],
)
def test_a_comparison_is_judged_over_both_intervals(condition, left, right, state):
    (comparison,) = conditions.parse(condition.replace("a", "chx/r#a", 1).replace("b", "#b", 1))
    assert conditions.judge(comparison, left, right) == state


def test_conditions_are_judged_on_the_readers_run_else_the_reference(runs):
    results, reference = runs
    write(reference, "chx/run", {"up": ratio(3.0, 2.5, 3.5), "flat": ratio(1.0, 0.95, 1.05)})
    on_reference = conditions.evaluate("chx/run#up > 1 and #flat ~ 1 ±25%")
    assert (on_reference.state, on_reference.from_reference) == (HELD, True)

    write(results, "chx/run", {"up": ratio(0.9, 0.8, 1.2), "flat": ratio(1.0)})
    mine = conditions.evaluate("chx/run#up > 1 and #flat ~ 1 ±25%")
    assert (mine.state, mine.from_reference) == (NOISE, False)
    # Only the comparison that fell short is named; "flat", a point without interval, held.
    assert (mine.needs, mine.shown) == ("up > 1", ["up 0.9x (0.8x – 1.2x)"])
    assert on_reference.needs == "up > 1 and flat ~ 1 ±25%"

    write(results, "chx/run", {"up": ratio(0.5, 0.4, 0.6), "flat": ratio(1.0)})
    assert conditions.evaluate("chx/run#up > 1 and #flat ~ 1 ±25%").state == CONTRADICTED
    assert conditions.evaluate("chx/run#gone > 1").state is None

    # Quick mode measures smaller jobs than the prose speaks of: its figures are not judged.
    write(results, "chx/run", {"up": ratio(0.5, 0.4, 0.6)}, quick=True)
    assert conditions.evaluate("chx/run#up > 1").state is None


def page_markdown(markdown: str, src_uri: str = "chapters/09-x.md") -> str:
    from pipelab.book import hooks

    page = SimpleNamespace(file=SimpleNamespace(src_uri=src_uri))
    return hooks.on_page_markdown(markdown, page, {}, None)


def test_each_outcome_renders_as_the_page_shows_it(runs):
    results, _ = runs
    write(results, "chx/run", {"up": ratio(3.0, 2.5, 3.5), "near": ratio(1.05, 0.9, 1.2), "down": ratio(0.4, 0.3, 0.5)})
    held, noise, contradicted = (
        page_markdown(f"It is faster, {{{{ chx/run#{key} }}}}. <!--holds: chx/run#{key} > 1 -->")
        for key in ("up", "near", "down")
    )
    assert "condition" not in held and "<!--holds" not in held
    assert 'class="condition condition-noise"' in noise and "Within noise on your run: near 1.1x (0.9x – 1.2x)" in noise
    assert 'class="condition condition-contradicted"' in contradicted
    assert "Your run contradicts this: down 0.4x (0.3x – 0.5x), where it needs down > 1" in contradicted
    # From a chapter page, the link climbs to the method page's section on variance.
    assert f"](../{conditions.WHY})" in contradicted


def test_the_book_ends_with_how_its_claims_fared(runs):
    results, _ = runs
    write(results, "chx/run", {"up": ratio(3.0, 2.5, 3.5), "down": ratio(0.4, 0.3, 0.5)})
    outcomes = [conditions.evaluate("chx/run#up > 1", "a.md"), conditions.evaluate("chx/run#down > 1", "b.md")]
    line, named = conditions.summary(outcomes).splitlines()
    assert line == "claims: 1 held, 0 within noise, 1 contradicted"
    assert named == "  contradicted on b.md: down > 1 (down 0.4x (0.3x – 0.5x))"


def chapter_pages() -> list:
    return sorted((paths.REPO / "site" / "chapters").glob("0*.md"))


def test_every_chapter_states_conditions_and_each_names_a_figure_of_the_reference(tmp_path, monkeypatch):
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path))  # no reader's results: the reference is judged
    for page in chapter_pages():
        found = list(markers.CONDITION.finditer(page.read_text()))
        assert len(found) >= 3, f"{page.name} states {len(found)} conditions"
    unmeasured = [f"{o.page}: {o.condition}" for o in conditions.site_outcomes() if o.state is None]
    assert not unmeasured, f"conditions naming figures the reference lacks: {unmeasured}"


def test_the_reference_contradicts_no_sentence_of_the_book(tmp_path, monkeypatch):
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path))
    contradicted = [o for o in conditions.site_outcomes() if o.state == CONTRADICTED]
    assert not contradicted, conditions.summary(contradicted)


# Ratios that landed on both sides of 1 in full runs on the reference machine's kind and whose
# direction a sentence reads. get_server_ratio, valkey_io2_vs_io1_p256_c50 and
# tagged_pipeline_vs_pipeline flipped too; the prose prints them and says no direction of them.
FLIPPED_AND_READ = [
    "ch07/variadic#get_cpu_ratio",
    "ch02/batches#time_ratio",
    "ch03/sadd#redispy_pure_parser_vs_hiredis",
    "ch06/ceiling#reply_peak_8_vs_6",
]


def test_every_flipped_ratio_a_sentence_reads_has_a_condition():
    for figure in FLIPPED_AND_READ:
        name, key = figure.split("#")
        printing = [p for p in chapter_pages() if f"{{{{ {figure} }}}}" in p.read_text()]
        assert printing, f"no chapter prints {figure}"
        for page in printing:  # a short #key counts: its condition named the file before it
            stated = "\n".join(m["condition"] for m in markers.CONDITION.finditer(page.read_text()))
            assert re.search(rf"(?:{name})?#{key}\b", stated), f"{page.name} prints {figure} without a condition"


def test_the_your_run_page_lists_the_sentences_a_run_contradicts(tmp_path, monkeypatch):
    from pipelab.book import yourrun

    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path))
    _, key = contradict(paths.results_dir())
    text = yourrun.section("claims", 0)
    first, *rest = text.splitlines()
    rows = [line for line in rest if "| contradicted |" in line]
    assert first.startswith("Claims: ") and first.endswith(f" within noise, {len(rows)} contradicted.")
    assert rows and all(f"`{key} " in row for row in rows), "only the sentences on the made-up figure"
    assert any(
        row.startswith("| [1. Round-trip time](chapters/01-round-trip-time.md) | contradicted |") for row in rows
    )


def test_a_contradicted_sentence_shows_its_mark_in_the_browser(contradicted_site, tmp_path):
    """The site built from a reader's results file that breaks a condition of chapter 1 (conftest's
    contradict), opened in Chromium: the mark is on the page, visible, names the reader's figure and
    links to why figures vary."""
    code, output, site = contradicted_site
    assert code == 0, output
    if why := browser.browser_unavailable():
        unavailable(why)
    _, key = contradict(tmp_path)  # the same figure the site's build was given
    page = CONTRADICTED_PAGE.removesuffix(".md") + "/"
    with browser.serve(site) as base, browser.chromium_tab(base) as tab:
        tab.open(page)
        marks = tab.page.locator(".condition-contradicted")
        # Every sentence that reads the broken figure is marked (the chapter and its What to remember), no other.
        stated = len(re.findall(rf"<!--holds:[^>]*#{key}\b", (paths.REPO / "site" / CONTRADICTED_PAGE).read_text()))
        assert 1 <= marks.count() <= stated, (
            f"{marks.count()} contradicted marks on {page}, {stated} sentences read {key}"
        )
        assert all(f"{key} " in marks.nth(i).inner_text() for i in range(marks.count())), "a mark for another figure"
        mark = marks.first
        assert mark.is_visible()
        text = mark.inner_text()
        assert text.startswith("Your run contradicts this:") and f"{key} " in text and "(made up)" in text
        link = mark.locator("a")
        assert link.inner_text() == "Why figures vary"
        mark.scroll_into_view_if_needed()
        tab.page.screenshot(path=str(paths.build_dir() / "condition-contradicted.png"))
        link.click()
        tab.page.wait_for_load_state()
        assert tab.page.url.endswith("/method/#where-run-to-run-variance-comes-from")
        assert not tab.problems, tab.problems
