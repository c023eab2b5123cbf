"""Checks on the built site: its links (local files and anchors, and optionally the external ones),
and the pages its navigation lists. The browser that opens them lives with the tests (tests/browser.py).

Problems are one line each, "page: link → what is wrong", so a failure names the page to fix.
"""

from __future__ import annotations

import concurrent.futures
import posixpath
import re
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    """The ids a page defines, the href/src values it uses, and the links of its navigation."""

    def __init__(self, path: Path):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.nav: list[str] = []
        self.feed(path.read_text(errors="replace"))

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.ids.update(v for k, v in attrs if k == "id" or (tag == "a" and k == "name"))
        self.links.extend(v.strip() for k, v in attrs if k in ("href", "src") and v and v.strip())
        if tag == "a" and "md-nav__link" in (a.get("class") or "").split() and a.get("href"):
            self.nav.append(a["href"])


def _pages(site_dir: Path) -> dict[Path, _Page]:
    """Every HTML file of the site, parsed once: pages are the targets of each other's links."""
    return {path: _Page(path) for path in sorted(site_dir.rglob("*.html"))}


def _resolve(site_dir: Path, page: Path, path: str) -> Path:
    """The file a local URL path names, as a static server (or mkdocs serve) would answer it."""
    base = "" if path.startswith("/") else posixpath.dirname(page.relative_to(site_dir).as_posix())
    joined = posixpath.normpath(posixpath.join(base, unquote(path).lstrip("/")))
    if joined == ".." or joined.startswith("../"):
        raise ValueError("points outside the site")
    target = site_dir / joined
    return target / "index.html" if path.endswith("/") or target.is_dir() else target


def check_links(site_dir: Path) -> list[str]:
    """Every local href/src of every page: the file exists, and a #fragment names an id on the target page."""
    site_dir = Path(site_dir).resolve()
    pages = _pages(site_dir)
    problems = []
    for page, parsed in pages.items():
        name = page.relative_to(site_dir).as_posix()
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:  # http(s), mailto:, data:, javascript:, //host
                continue
            try:
                target = _resolve(site_dir, page, parts.path) if parts.path else page
            except ValueError as err:
                problems.append(f"{name}: {link} → {err}")
                continue
            if not target.is_file():
                problems.append(f"{name}: {link} → no such file {target.relative_to(site_dir).as_posix()}")
            elif parts.fragment and target in pages and unquote(parts.fragment) not in pages[target].ids:
                where = "on this page" if target == page else f"in {target.relative_to(site_dir).as_posix()}"
                problems.append(f'{name}: {link} → no id "{unquote(parts.fragment)}" {where}')
    return problems


def external_links(site_dir: Path) -> dict[str, list[str]]:
    """{url without its fragment: [pages using it]} for every http(s) href/src."""
    site_dir = Path(site_dir).resolve()
    found: dict[str, list[str]] = {}
    for page, parsed in _pages(site_dir).items():
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme in ("http", "https"):
                pages = found.setdefault(parts._replace(fragment="").geturl(), [])
                if (name := page.relative_to(site_dir).as_posix()) not in pages:
                    pages.append(name)
    return found


def _fetch_problem(url: str, timeout: float) -> str | None:
    last = None
    for method in ("HEAD", "GET"):  # some servers refuse HEAD (405, 403) but serve GET
        req = urllib.request.Request(url, method=method, headers={"User-Agent": "pipelab-linkcheck"})
        try:
            with urllib.request.urlopen(req, timeout=timeout):
                return None
        except urllib.error.HTTPError as err:
            last = f"HTTP {err.code}"
        except (urllib.error.URLError, OSError) as err:
            last = str(getattr(err, "reason", err))
    return last


def check_external_links(site_dir: Path, timeout: float = 5) -> list[str]:
    """Each external URL fetched once over the network (HEAD, then GET); a problem per URL that fails."""
    links = external_links(site_dir)
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        answers = dict(zip(links, pool.map(lambda url: _fetch_problem(url, timeout), links)))
    return [
        f"{pages[0]}{f' (and {len(pages) - 1} more)' if len(pages) > 1 else ''}: {url} → {answers[url]}"
        for url, pages in links.items()
        if answers[url]
    ]


# What a page's prose shows only when a template was left unfilled: a figure marker's braces, Jinja's
# tags, a Python call or name in braces (`{S("x")}`), or an HTML comment printed as text. Code is exempt,
# and so is the copy button's hidden text.
_TEMPLATE = re.compile(r"\{\{|\}\}|\{%|%\}|\{[A-Za-z_][\w.]*(?:\(|\[|\})|<!--|-->")
_NOT_PROSE = {"code", "pre", "script", "style", "svg", "textarea", "kbd", "samp"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Prose(HTMLParser):
    """A page's visible text outside code, with each leftover template found in it."""

    def __init__(self, path: Path):
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, bool]] = []  # (tag, inside code or hidden text)
        self.found: list[str] = []
        self.feed(path.read_text(errors="replace"))

    def handle_starttag(self, tag, attrs):
        if tag not in _VOID:
            hidden = "clipboard-copy-txt" in (dict(attrs).get("class") or "")
            self.open.append((tag, tag in _NOT_PROSE or hidden or bool(self.open and self.open[-1][1])))

    def handle_endtag(self, tag):
        if any(t == tag for t, _ in self.open):  # a stray end tag closes nothing
            while self.open.pop()[0] != tag:
                pass

    def handle_data(self, data):
        if not (self.open and self.open[-1][1]):
            self.found += [data[max(0, m.start() - 30) : m.end() + 30].strip() for m in _TEMPLATE.finditer(data)]


def template_text(site_dir: Path) -> list[str]:
    """Every place where a page's prose shows template text instead of what it stands for."""
    site_dir = Path(site_dir).resolve()
    return [
        f"{page.relative_to(site_dir).as_posix()}: shows template text: …{found}…"
        for page in sorted(site_dir.rglob("*.html"))
        for found in _Prose(page).found
    ]


def nav_pages(site_dir: Path) -> list[str]:
    """The home page ("") and the pages the site's navigation lists, as paths below the site root.

    Read from the built home page rather than mkdocs.yml, so a page added to the nav is visited
    without touching the tests."""
    pages = [""]
    for href in _Page(Path(site_dir) / "index.html").nav:
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or not parts.path:  # external, or a heading on the home page
            continue
        path = posixpath.normpath(parts.path)
        path = "" if path == "." else path if path.endswith(".html") else path + "/"  # directory URLs
        if path not in pages:
            pages.append(path)
    return pages
