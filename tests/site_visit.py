"""The readers' site built, then every page of it opened once in Debian's Chromium (Playwright), as a
reader opens it, with a screenshot of each in build/screenshots/ to look at after the run. Run as
`python -m tests.site_visit SITE OUT`, beside the tests that measure and at the lowest priority
(tests/conftest.py, readers_site); tests/test_site.py reads OUT:
{page: [problems on opening, problems the chapter checks found (null on a page that is no chapter)]},
{"unavailable": why} without a browser, or {"failed": why} if opening them failed.

Each check returns one line per problem.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from pipelab import paths
from pipelab.book import build as book
from pipelab.book import sitecheck
from pipelab.book.markers import BLOCK
from pipelab.chapters.claims import NOT_MEASURED
from pipelab.errors import LabError
from tests import browser

VISITED = "visited.json"  # OUT, in the session's build directory
SCREENSHOTS = paths.REPO / "build" / "screenshots"  # the repository's build/, not the isolated one
CHAPTER = re.compile(r"chapters/\d\d-[\w-]+/")


def chapter_source(page: str) -> Path | None:
    """The chapter's Markdown for a chapter page; None for other pages (the rendered notebooks included)."""
    md = paths.REPO / "site" / f"{page.rstrip('/')}.md"
    return md if CHAPTER.fullmatch(page) and md.exists() else None


def screenshot(tab, page: str, suffix: str = "") -> None:
    tab.page.evaluate("window.scrollTo(0, 0)")
    name = page.strip("/").replace("/", "-") or "index"
    tab.page.screenshot(path=SCREENSHOTS / f"{name}{suffix}.png")


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


# The languages of the chapters' own examples, as a tab names them, and what their code shows.
EXAMPLE_CODE = {"Java": r"\b(static|class) ", "Rust": r"\bfn "}


def example_tab_switches_and_shows_code(tab, markdown: str) -> list[str]:
    """A tabbed set with the chapter's example language (Java; Rust in chapter 11) among two or more tabs:
    switch away and back, and its panel shows that language (a method, a class or a function from the
    example's marked section)."""
    for tabbed in tab.page.locator("article .tabbed-set").all():
        names = tabbed.locator(":scope > .tabbed-labels > label").all_inner_texts()
        found = next(((i, lang) for i, n in enumerate(names) for lang in EXAMPLE_CODE if lang in n), None)
        if found is None or len(names) < 2:
            continue
        at, lang = found
        other = (at + 1) % len(names)  # shown first, so the click on the example's tab is a real switch
        problems = switch_tab(tabbed, other) + switch_tab(tabbed, at)
        code = tabbed.locator(":scope > .tabbed-content > .tabbed-block").nth(at).inner_text()
        return problems + ([] if re.search(EXAMPLE_CODE[lang], code) else [f"the tab {names[at]!r} shows no {lang}"])
    return ["no tabbed set with a Java or Rust tab beside another"]


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


CHAPTER_CHECKS = [first_paragraph_asks, plots_load, example_tab_switches_and_shows_code, measured_table_filled]


def visit(site: Path) -> dict:
    """Every page in the nav opened once: its problems on opening, then those the chapter checks find."""
    if why := browser.browser_unavailable():
        return {"unavailable": why}
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob("*.png"):  # a page gone from the nav leaves no stale picture
        old.unlink()
    out = {}
    with browser.serve(site) as base, browser.chromium_tab(base) as tab:
        for page in sitecheck.nav_pages(site):
            tab.open(page)
            screenshot(tab, page)
            opening, checked = list(tab.problems), None
            if md := chapter_source(page):
                tab.problems.clear()  # from here on, the problems the checks cause
                markdown = md.read_text()
                checked = [problem for check in CHAPTER_CHECKS for problem in check(tab, markdown)] + tab.problems
            out[page] = [opening, checked]
    return out


if __name__ == "__main__":
    site, report = map(Path, sys.argv[1:])
    try:
        book.build_site(site)
    except LabError as err:
        sys.exit(str(err))
    try:
        found = visit(site)
    except Exception as err:  # noqa: BLE001  the browser's tests say so; the site itself was built
        found = {"failed": f"{type(err).__name__}: {err}"}
    report.write_text(json.dumps(found))
