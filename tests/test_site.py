"""The built site as a reader sees it: its links, then every page in a real browser (Debian's Chromium
under Playwright; tests/site_visit.py opens each page once, beside the tests that measure), with
screenshots in build/screenshots/ to look at after the run.

A test fails with "page: problem" for all of them at once.
"""

from __future__ import annotations

import json

import browser
import pytest

from pipelab import paths
from pipelab.book import sitecheck
from tests.conftest import unavailable
from tests.site_visit import VISITED, chapter_source, screenshot


def fail_on(title: str, problems: list[str]) -> None:
    """Fail with the problems one per line, and no traceback to read past."""
    if problems:
        pytest.fail("\n".join([title, *problems]), pytrace=False)


def by_page(found: dict[str, list[str]]) -> list[str]:
    return [f"/{page}: {problem}" for page, problems in found.items() for problem in problems]


def test_every_local_link_and_anchor_resolves(built_site):
    fail_on("broken links in the built site:", sitecheck.check_links(built_site))


def test_no_page_shows_template_text_in_its_prose(built_site):
    fail_on("template text in the built site's prose:", sitecheck.template_text(built_site))


def test_the_template_check_finds_leftovers_in_prose_and_leaves_code_alone(tmp_path):
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards" / "index.html").write_text(
        '<p>callers got {S("jedis_noscript")} errors</p><p>a <code>{user}:1</code> tag</p>'
        '<div class="clipboard-copy-txt">print(f"{lab.endpoint}")</div><pre>{{ x }}</pre><br>'
        "<p>it holds: its buffers</p><p>a {a} set</p><li>&lt;!--{{ ch05/x#y }}--&gt;</li>"
    )
    (tmp_path / "index.html").write_text("<p>Jinja left {% if x %} here</p></span><p>fine</p>")
    found = sitecheck.template_text(tmp_path)
    pages = {line.split(": shows template text: ")[0] for line in found}
    text = "\n".join(found)
    assert pages == {"cards/index.html", "index.html"}
    for leftover in ('{S("jedis_noscript")}', "{a}", "<!--{{ ch05/x#y }}-->", "{% if x %}"):
        assert leftover in text, leftover
    for code in ("{user}", "lab.endpoint", "{{ x }}", "holds:"):
        assert code not in text, code


def test_the_link_check_reports_a_missing_file_and_a_missing_anchor(tmp_path):
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "index.html").write_text('<h2 id="here">x</h2><img src="../gone.png">')
    (tmp_path / "index.html").write_text(
        '<p id="top"><a href="ok/">fine</a> <a href="ok/#here">fine</a> <a href="#top">fine</a>'
        ' <a href="mailto:x@example.org">m</a> <img src="data:image/png;base64,AA==">'
        ' <a href="javascript:void(0)">j</a>'
        ' <a href="missing/">broken</a> <a href="ok/#nowhere">broken</a> <a href="/ok/#top">broken</a>'
        ' <a href="../../etc/passwd">outside</a> <a href="https://example.org/a#b">external</a></p>'
    )
    assert sitecheck.check_links(tmp_path) == [
        "index.html: missing/ → no such file missing/index.html",
        'index.html: ok/#nowhere → no id "nowhere" in ok/index.html',
        'index.html: /ok/#top → no id "top" in ok/index.html',
        "index.html: ../../etc/passwd → points outside the site",
        "ok/index.html: ../gone.png → no such file gone.png",
    ]
    assert sitecheck.external_links(tmp_path) == {"https://example.org/a": ["index.html"]}


@pytest.fixture(scope="module")
def tab(request):
    """One headless Chromium for the module, on the site served from 127.0.0.1."""
    why = browser.browser_unavailable()
    if why:
        unavailable(why)
    site = request.getfixturevalue("built_site")  # after the check: a skip need not wait for the notebooks
    with browser.serve(site) as base, browser.chromium_tab(base) as tab:
        yield tab


@pytest.fixture(scope="module")
def visited(built_site, isolated_build) -> dict[str, tuple[list[str], list[str] | None]]:
    """Every page of the nav as tests/site_visit.py found it on opening it once: {page: (problems on
    opening, problems the chapter checks found, None on a page that is no chapter)}."""
    found = json.loads((isolated_build / VISITED).read_text())
    if "unavailable" in found:
        unavailable(found["unavailable"])
    if "failed" in found:
        pytest.fail(f"opening the pages failed: {found['failed']}", pytrace=False)
    chapters = {p.stem for p in (paths.REPO / "site" / "chapters").glob("[0-9][0-9]-*.md")}
    assert chapters <= {page.split("/")[1] for page in found if chapter_source(page)}, "every chapter is in the nav"
    assert set(found) == set(sitecheck.nav_pages(built_site)), "every page of the nav was opened"
    return {page: (opening, checked) for page, (opening, checked) in found.items()}


def test_every_page_opens_without_errors(visited):
    fail_on("pages with errors in the browser:", by_page({page: opening for page, (opening, _) in visited.items()}))


def test_every_chapter_has_its_plots_java_tabs_and_measured_figures(visited):
    found = {page: checked for page, (_, checked) in visited.items() if checked is not None}
    assert found, "the nav lists no chapter pages"
    fail_on("chapters that do not show what they should:", by_page(found))


def test_the_home_page_switches_palette_and_searches(tab):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    tab.open("")
    tab.problems.clear()  # as above
    body = tab.page.locator("body")
    problems = []
    for title, scheme in (("Switch to dark mode", "slate"), ("Switch to light mode", "default")):
        tab.page.get_by_title(title).click()
        if body.get_attribute("data-md-color-scheme") != scheme:
            problems.append(f"{title!r} left the page in scheme {body.get_attribute('data-md-color-scheme')!r}")
        elif scheme == "slate":
            screenshot(tab, "", "-dark")
    tab.page.locator(".md-search__input").click()  # focusing the box is what starts the search, as for a reader
    tab.page.keyboard.type("LTRIM")
    results = tab.page.locator(".md-search-result__item")
    try:
        results.first.wait_for(timeout=5000)
    except PlaywrightTimeout:
        problems.append("searching for LTRIM shows no results")
    fail_on("the home page does not work:", by_page({"": problems + tab.problems}))


def test_the_trainer_cards_project_as_slides_that_the_arrow_keys_move_through(tab):
    tab.open("course/cards/?slides")
    page, problems = tab.page, []
    slides = page.locator("section.slide")
    cards = 1 + len(list((paths.REPO / "site" / "chapters").glob("[0-9][0-9]-*.md")))  # the title, a card per chapter
    if slides.count() != cards:
        problems.append(f"{slides.count()} slides, not {cards}")
    if page.locator(".md-header").is_visible() or page.locator(".md-sidebar--primary").is_visible():
        problems.append("the site's menus still show")
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(300)
    if slides.count() > 1 and abs(slides.nth(1).bounding_box()["y"]) > 5:
        problems.append("the right arrow did not bring the first card to the top")
    screenshot(tab, "course/cards/", "-slides")
    tab.open("course/cards/")  # without ?slides the page reads as a page
    if tab.page.locator("section.slide").count() or not tab.page.locator(".md-header").is_visible():
        problems.append("the page without ?slides is laid out as slides")
    fail_on("the trainer cards as slides:", by_page({"course/cards/?slides": problems + tab.problems}))
