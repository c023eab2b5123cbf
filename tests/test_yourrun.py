"""The "Your run" page: made-up results trees for its sections, then the built sites in a browser."""

from __future__ import annotations

import re

import browser
import mkdocs_yml
import pytest

from pipelab import paths, results, weather
from pipelab.book import build, inputs, markers, reference, yourrun
from pipelab.results import quantity
from tests.conftest import unavailable

LOCK = "ab" * 32


def env(**fields) -> dict:
    return {"cpu_model": "Test CPU", "cpu_count": 2, "redis_version": "8.2.3", "lock_sha256": LOCK} | fields


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """(your results dir, the reference dir), both empty, in place of build/results and the reference."""
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv("PIPELAB_REFERENCE", str(tmp_path / "reference"))
    return paths.results_dir(), paths.reference_dir()


def save(base, name: str, summary: dict, **environment) -> None:
    results.save(name, environment=env(**environment), summary=summary, base=base)


def test_figures_apart_beyond_both_intervals_are_grouped_by_chapter_farthest_first(runs):
    mine, ref = runs
    save(
        mine,
        "ch01/ping",
        {
            "apart_s": quantity(2.0, "s", interval=(1.9, 2.1)),
            "further_s": quantity(0.5, "s", interval=(0.45, 0.55)),
            "overlap_s": quantity(1.0, "s", interval=(0.9, 1.1)),
            "no_interval_x": quantity(9.0, "x"),
        },
    )
    save(
        ref,
        "ch01/ping",
        {
            "apart_s": quantity(1.0, "s", interval=(0.9, 1.1)),
            "further_s": quantity(2.0, "s", interval=(1.8, 2.2)),
            "overlap_s": quantity(1.05, "s", interval=(1.0, 1.2)),
            "no_interval_x": quantity(3.0, "x"),
        },
    )
    save(mine, "ch03/flush", {"ms": quantity(30.0, "ms", interval=(29, 31))})
    save(ref, "ch03/flush", {"ms": quantity(10.0, "ms", interval=(9, 11))})
    save(ref, "ch05/only-theirs", {"ms": quantity(10.0, "ms", interval=(9, 11))})

    groups = yourrun.beyond_groups()
    assert {c: [p.key for p in group] for c, group in groups.items()} == {
        "ch01": ["further_s", "apart_s"],
        "ch03": ["ms"],
    }, "only figures with both intervals apart, per chapter, the farthest apart first"
    text = yourrun.section("beyond", 1)
    assert text.startswith("3 of the 4 figures with an interval in both runs")
    assert '??? note "1. Round-trip time: 2 figures, the farthest apart ÷4.00"' in text
    assert "[1. Round-trip time](../chapters/01-round-trip-time.md)" in text
    assert "| `ch01/ping#apart_s` | 2.000 s<br><small>1.900 s – 2.100 s</small> |" in text
    assert "| ×2.00 |" in text and "| ×3.00 |" in text
    assert "overlap_s" not in text and "no_interval_x" not in text


def test_the_environment_table_lists_values_that_differ_between_results_files(runs):
    mine, ref = runs
    jedis = {"jedis": "8.0.2", "java": "17.0.15"}
    save(mine, "ch01/a", {}, java_clients=jedis)
    save(mine, "ch02/b", {}, java_clients=jedis | {"lettuce": "7.7.0"})
    save(mine, "ch06/c", {}, redis_version="7.0.15", lock_sha256="cd" * 32)
    save(ref, "ch01/a", {}, java_clients={"jedis": "7.4.0", "java": "17.0.15"})
    table = yourrun.section("environment", 0)
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1:] for line in table.splitlines()[2:]}
    assert rows["CPU"] == ["Test CPU", "Test CPU", "yes |"]
    assert rows["Version"] == ["8.2.3 (2 files); 7.0.15 (1 file)", "8.2.3", "**no** |"]
    assert rows["jedis (Java)"] == ["8.0.2", "7.4.0", "**no** |"]
    assert rows["lettuce (Java)"] == ["7.7.0", "–", "– |"], "a client only one run used"
    assert rows["Java"] == ["17.0.15", "17.0.15", "yes |"]
    lock = next(v for k, v in rows.items() if k.startswith("Python lock"))
    assert lock == ["`abababababab` (2 files); `cdcdcdcdcdcd` (1 file)", "`abababababab`", "**no** |"]


def test_without_results_of_their_own_the_page_says_how_to_get_them(runs, tmp_path):
    mine, ref = runs
    save(ref, "ch01/ping", {"s": quantity(1.0, "s")})
    status = yourrun.section("status", 0)
    assert "No results of yours yet" in status and "`make book`" in status
    assert "not measured yet" not in status.lower(), "the reference site's test reads that as a missing figure"
    assert not yourrun.draw(tmp_path / "plot.png") and not (tmp_path / "plot.png").exists()
    assert "![" not in yourrun.section("plot", 0)
    assert yourrun.section("beyond", 0) == "_Nothing to compare yet._"
    assert "| CPU | – | Test CPU | – |" in yourrun.section("environment", 0)
    (ref / "ch01" / "ping.json").unlink()  # no reference either
    assert "no reference run here either" in yourrun.section("status", 0)
    assert yourrun.section("environment", 0).startswith("_Neither")


def test_partial_and_quick_results_say_which_chapters_are_missing_and_which_files_are_quick(runs, tmp_path):
    mine, ref = runs
    for base, quick in ((mine, True), (ref, False)):
        save(base, "ch01/ping", {"s": quantity(1.0 if quick else 2.0, "s")}, quick_mode=quick)
        save(base, "ch02/depth", {"s": quantity(1.0, "s")}, quick_mode=False)
    status = yourrun.section("status", 0)
    missing = [int(c[2:]) for c in reference.chapters() if c not in ("ch01", "ch02")]
    assert f"from chapters {', '.join(map(str, missing[:-1]))} and {missing[-1]}." in status
    assert '!!! warning "Quick mode"' in status and "1 of your results files" in status and "ch01: ping." in status
    assert "2 figures in common" in status and "1 of them (50%) are within ±15%" in status
    assert yourrun.draw(tmp_path / "plot.png") and (tmp_path / "plot.png").stat().st_size > 0
    plot = yourrun.section("plot", 0)
    assert re.fullmatch(r"!\[Scatter plot on log axes of 2 figures[^\]]+\]\(figures/your-run\.png\)", plot)


def test_the_times_table_sets_each_chapter_beside_the_reference(runs):
    mine, ref = runs
    first, second, *_ = build.notebooks()
    inputs.record(first, {"seconds": 50.0, "quick": False})  # as a chapter's run records it
    inputs.record(second, {"seconds": 12.0, "quick": True})
    results.save(
        reference.TIMINGS,
        environment={},
        summary={"ch01_s": quantity(100, "s"), "ch02_s": quantity(None, "s")},
        base=ref,
    )
    rows = yourrun.section("times", 0).splitlines()
    assert rows[0] == "| Chapter | Yours | Reference | Yours ÷ reference |"
    assert rows[2] == "| [1. Round-trip time](chapters/01-round-trip-time.md) | 50 s | 100 s | 0.50x |"
    assert rows[3].endswith("| 12 s (quick mode) | – | – |")
    assert all(row.endswith("| – | – | – |") for row in rows[4:]) and len(rows) == 2 + len(build.notebooks())


def test_the_page_is_in_the_nav_after_the_method_and_names_only_known_sections():
    nav = mkdocs_yml.load()["nav"]
    titles = [next(iter(entry)) for entry in nav]
    assert titles[titles.index("How the book measures") + 1] == "Your run"
    assert {"Your run": "your-run.md"} in nav
    page = (paths.REPO / "site" / "your-run.md").read_text()
    sections = [arg for kind, arg in markers.BLOCK.findall(page) if kind == "yourrun"]
    assert sections and set(sections) <= set(yourrun.SECTIONS)
    assert "method.md#where-run-to-run-variance-comes-from" in page


# In the browser: the site built from the tests' quick run, and the two built before any run.


def your_run_page(site) -> dict:
    """The page opened in Chromium: its text, its plot's size and alt text, broken images, problems."""
    if why := browser.browser_unavailable():
        unavailable(why)
    with browser.serve(site) as base, browser.chromium_tab(base) as tab:
        tab.open("your-run/")
        img = tab.page.locator(f'article img[src$="figures/{yourrun.PLOT}"]')
        shown = {
            "text": tab.page.locator("article").inner_text(),
            "plots": img.count(),
            "width": img.first.evaluate("i => i.decode().then(() => i.naturalWidth, () => 0)") if img.count() else 0,
            "alt": img.first.get_attribute("alt") if img.count() else None,
            "broken": tab.page.evaluate(
                "() => Promise.all([...document.images].map(i => i.decode().then(() => null, () => i.src)))"
                ".then(srcs => srcs.filter(Boolean))"
            ),
        }
        return shown | {"problems": list(tab.problems)}


def test_the_your_run_page_shows_its_plot(built_site):
    page = your_run_page(built_site)
    assert page["problems"] == [] and page["broken"] == []
    assert page["plots"] == 1 and page["width"] > 0, "the scatter plot is on the page and loads"
    assert page["alt"].startswith("Scatter plot on log axes")
    assert "Quick mode" in page["text"], "the tests' run is a quick one, and the page says so"


@pytest.mark.parametrize("which", ["nothing", "reference"])
def test_the_your_run_page_works_without_local_results(unmeasured_sites, which):
    code, output, site = unmeasured_sites[which]
    assert code == 0, output
    page = your_run_page(site)
    assert page["problems"] == [] and page["broken"] == []
    assert page["plots"] == 0
    assert "No results of yours yet" in page["text"] and "make book" in page["text"]


def test_the_environment_table_sets_the_two_machines_weather_side_by_side(runs):
    mine, ref = runs
    save(mine, "ch01/a", {})
    save(ref, "ch01/a", {})

    def rows():
        table = yourrun.section("environment", 0).splitlines()[2:]
        return {line.split(" | ")[0].strip("| "): line.split(" | ")[1:] for line in table}

    loop = "A fixed loop's fast time (`pipelab weather`)"
    assert rows()[loop] == ["–", "–", "– |"], "a quick run, or an older one, timed no weather"
    fast, slowed = [50.0] * 30, [80.0] * 25 + [160.0] * 5  # a host whose fast speed is itself slower
    weather.record({"before": {"cpu0": fast}, "after": {"cpu0": fast}}, base=ref)
    weather.record({"before": {"cpu0": slowed}, "after": {"cpu0": slowed}}, base=mine)
    assert rows()[loop] == ["80.0 ms", "50.0 ms", "**no**, yours 1.60x |"]
    assert rows()["The same loop, slowed in spells"] == ["17% of the time, at 2.0x", "0% of the time, at 1.0x", "– |"]
    weather.record({"before": {"cpu0": [52.0] * 30}}, base=mine)
    assert rows()[loop][2] == "yes |", "4% apart is within ±15%"
    held = "The same loop agreeing with itself before and after the run: runs of nine within ±15%, by median"
    assert rows()[held] == ["–", "100%", "– |"], "a run timed only before its chapters sets nothing against it"
    weather.record({"before": {"cpu0": [50.0] * 18}, "after": {"cpu0": [50.0] * 9 + [100.0] * 9}}, base=mine)
    assert rows()[held] == ["50%", "100%", "– |"], "a spell as long as a run of nine moves its median"
    calm = "The same, of the loops that followed a fast one only (as if each sample waited for a calm machine)"
    assert rows()[calm] == ["100%", "100%", "– |"], "the spell's loops after its first are left out"
    weather.record({"before": {"cpu0": [100.0] * 18}, "after": {"cpu0": [50.0] * 18}}, base=mine)
    assert rows()[calm][0] == "–", "a spell through all of one moment leaves no calm run of nine to set against"
