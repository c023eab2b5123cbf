"""The built site as a reader sees it: its links, then every page in a real browser (Debian's Chromium
under Playwright), with screenshots in build/screenshots/ to look at after the run.

Each check returns one line per problem; a test fails with "page: problem" for all of them at once.
"""

from __future__ import annotations

import re
from pathlib import Path

import browser
import pytest

from pipelab import paths
from pipelab.book import sitecheck
from pipelab.book.markers import BLOCK
from pipelab.chapters.claims import NOT_MEASURED
from tests.conftest import unavailable

SCREENSHOTS = paths.REPO / "build" / "screenshots"  # the repository's build/, not the isolated one
CHAPTER = re.compile(r"chapters/\d\d-[\w-]+/")


def fail_on(title: str, problems: list[str]) -> None:
    """Fail with the problems one per line, and no traceback to read past."""
    if problems:
        pytest.fail("\n".join([title, *problems]), pytrace=False)


def by_page(found: dict[str, list[str]]) -> list[str]:
    return [f"/{page}: {problem}" for page, problems in found.items() for problem in problems]


def chapter_source(page: str) -> Path | None:
    """The chapter's Markdown for a chapter page; None for other pages (the rendered notebooks included)."""
    md = paths.REPO / "site" / f"{page.rstrip('/')}.md"
    return md if CHAPTER.fullmatch(page) and md.exists() else None


def screenshot(tab, page: str, suffix: str = "") -> None:
    tab.page.evaluate("window.scrollTo(0, 0)")
    name = page.strip("/").replace("/", "-") or "index"
    tab.page.screenshot(path=SCREENSHOTS / f"{name}{suffix}.png")


def test_every_local_link_and_anchor_resolves(built_site):
    fail_on("broken links in the built site:", sitecheck.check_links(built_site))


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
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob("*.png"):  # a page gone from the nav leaves no stale picture
        old.unlink()
    with browser.serve(site) as base, browser.chromium_tab(base) as tab:
        yield tab


@pytest.fixture(scope="module")
def pages(built_site):
    found = sitecheck.nav_pages(built_site)
    chapters = {p.stem for p in (paths.REPO / "site" / "chapters").glob("[0-9][0-9]-*.md")}
    assert chapters <= {page.split("/")[1] for page in found if chapter_source(page)}, "every chapter is in the nav"
    return found


@pytest.fixture(scope="module")
def visited(tab, pages) -> dict[str, tuple[list[str], list[str] | None]]:
    """Every page opened once, as a reader opens it: {page: (problems on opening, problems the chapter
    checks found, None on a page that is no chapter)}. One pass: each page is loaded only once."""
    out = {}
    for page in pages:
        tab.open(page)
        screenshot(tab, page)
        opening, checked = list(tab.problems), None
        if md := chapter_source(page):
            tab.problems.clear()  # from here on, the problems the checks cause
            markdown = md.read_text()
            checked = [problem for check in CHAPTER_CHECKS for problem in check(tab, markdown)] + tab.problems
        out[page] = (opening, checked)
    return out


def test_every_page_opens_without_errors(visited):
    fail_on("pages with errors in the browser:", by_page({page: opening for page, (opening, _) in visited.items()}))


# What each chapter page must show, checked in the browser. Each returns problems, one line each.


def first_paragraph_asks(tab, markdown: str) -> list[str]:
    text = (tab.page.locator("article > p").all_inner_texts() or [""])[0]
    return [] if "?" in text else [f"the first paragraph asks no question: {text[:80]!r}"]


def plots_load(tab, markdown: str) -> list[str]:
    problems = []
    for kind, name in BLOCK.findall(markdown):
        if kind != "plot":
            continue
        img = tab.page.locator(f'article img[src$="figures/{name}.png"]')
        if not img.count():
            problems.append(f"plot {name} is not on the page")
            continue
        if not (img.first.get_attribute("alt") or "").strip():
            problems.append(f"plot {name} has no alt text")
        img.first.scroll_into_view_if_needed()  # loading=lazy: only an image near the viewport loads
        if not img.first.evaluate("i => i.decode().then(() => i.naturalWidth, () => 0)"):
            problems.append(f"plot {name} did not load")
    return problems


def switch_tab(tabbed, to: int) -> list[str]:
    """Click label `to` of a tabbed set: its panel shows, the one shown before hides."""
    blocks = tabbed.locator(":scope > .tabbed-content > .tabbed-block")
    shown = [i for i in range(blocks.count()) if blocks.nth(i).is_visible()]
    label = tabbed.locator(":scope > .tabbed-labels > label").nth(to)
    name = label.inner_text()
    if len(shown) != 1:
        return [f"tabs {name!r}: {len(shown)} panels visible before a click, not 1"]
    label.click()
    if not blocks.nth(to).is_visible() or (shown[0] != to and blocks.nth(shown[0]).is_visible()):
        return [f"clicking the tab {name!r} did not switch to its panel"]
    return []


def java_tab_switches_and_shows_java(tab, markdown: str) -> list[str]:
    """A tabbed set with Java among two or more tabs: switch away and back, and the Java panel shows Java
    (a method or a class from the example's marked section)."""
    for tabbed in tab.page.locator("article .tabbed-set").all():
        names = tabbed.locator(":scope > .tabbed-labels > label").all_inner_texts()
        java = next((i for i, n in enumerate(names) if "Java" in n), None)
        if java is None or len(names) < 2:
            continue
        other = (java + 1) % len(names)  # shown first, so the click on Java is a real switch
        problems = switch_tab(tabbed, other) + switch_tab(tabbed, java)
        code = tabbed.locator(":scope > .tabbed-content > .tabbed-block").nth(java).inner_text()
        return problems + ([] if re.search(r"\b(static|class) ", code) else [f"the tab {names[java]!r} shows no Java"])
    return ["no tabbed set with a Java tab beside another"]


def measured_table_filled(tab, markdown: str) -> list[str]:
    """The "Yours" column of the table under "What you measured" holds the reader's run, every row."""
    if "<!-- pipelab:figures" not in markdown:  # a chapter whose sources published nothing to stand beside
        return []
    table = tab.page.evaluate("""() => {
        const h = [...document.querySelectorAll('article h2')].find(h => h.textContent.includes('What you measured'));
        if (!h) return null;
        for (let el = h.nextElementSibling; el && el.tagName !== 'H2'; el = el.nextElementSibling) {
            const table = el.matches('table') ? el : el.querySelector('table');
            if (table) return {header: [...table.querySelectorAll('th')].map(th => th.innerText.trim()),
                               rows: [...table.querySelectorAll('tbody tr')].map(
                                   tr => [...tr.querySelectorAll('td')].map(td => td.innerText.trim()))};
        }
        return {header: [], rows: []};
    }""")
    if table is None:
        return ['no "What you measured" heading']
    if "Yours" not in table["header"]:
        return ['no table with a "Yours" column under "What you measured"']
    yours = [row[table["header"].index("Yours")] for row in table["rows"]]
    empty = [cell for cell in yours if cell == NOT_MEASURED]
    return [f'{len(empty)} of {len(yours)} "Yours" cells of the "What you measured" table are empty'] if empty else []


CHAPTER_CHECKS = [first_paragraph_asks, plots_load, java_tab_switches_and_shows_java, measured_table_filled]


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
