"""The built site in a real browser, for the tests: a loopback server, and a tab in Debian's
Chromium driven by Playwright that records what a reader would call broken."""

from __future__ import annotations

import contextlib
import functools
import http.server
import importlib.util
import shutil
import threading
import time
from pathlib import Path

CHROMIUM = "chromium"  # Debian's package; the tests never download a browser of their own
VIEWPORT = {"width": 1280, "height": 900}
# A page counts as loaded once no request has been in flight for this long (Playwright's
# "networkidle" waits 500 ms on every page; a static site on loopback answers in a few ms).
QUIET_S = 0.15


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the tests' output is about the site, not its access log
        pass


@contextlib.contextmanager
def serve(site_dir: Path):
    """The built site over HTTP on 127.0.0.1 (a free port, loopback only), yielding its base URL."""
    handler = functools.partial(_Quiet, directory=str(site_dir))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            server.shutdown()
            thread.join()


def browser_unavailable() -> str | None:
    """Why the browser checks cannot run here, as one line saying what to do; None if they can."""
    if not shutil.which(CHROMIUM):
        return "no chromium on PATH: install Debian's package (apt-get install chromium, or make system-deps as root)"
    if importlib.util.find_spec("playwright") is None:
        return "Python Playwright is missing: run make test (it installs the test extra) or pip install -e '.[test]'"
    return None


class Tab:
    """One browser tab on the served site, recording what a reader would call broken as it happens:
    console errors, uncaught exceptions, and requests that leave the site.

    Only the site's own origin is reachable: a request elsewhere (a web font, a CDN) is blocked and
    reported, so a run gives the same answer with or without internet access."""

    def __init__(self, page, base_url: str):
        self.page, self.base_url = page, base_url
        self.problems: list[str] = []
        self._blocked: set[str] = set()
        self._in_flight: set = set()
        self._last_change = time.monotonic()
        # Only requests that leave the site are routed through here: the site's own go straight on.
        page.route(lambda url: not url.startswith((base_url, "data:", "blob:")), self._block)
        page.on("console", self._console)
        page.on("pageerror", lambda err: self.problems.append(f"uncaught exception: {err}"))
        page.on("request", lambda request: self._flight(self._in_flight.add, request))
        page.on("requestfinished", lambda request: self._flight(self._in_flight.discard, request))
        page.on("requestfailed", lambda request: self._flight(self._in_flight.discard, request))

    def _flight(self, change, request):
        change(request)
        self._last_change = time.monotonic()

    def _block(self, route):
        url = route.request.url
        if url not in self._blocked:
            self.problems.append(f"requests a resource outside the site: {url}")
        self._blocked.add(url)
        route.abort("blockedbyclient")

    def _console(self, msg):
        # A blocked request also logs "Failed to load resource"; it is reported once, as above.
        url = msg.location.get("url")
        if msg.type == "error" and url not in self._blocked:
            where = f" (at /{url.removeprefix(self.base_url)})" if url else ""
            self.problems.append(f"console error: {msg.text}{where}")

    def open(self, path: str):
        """Load a page (a path below the site root) and wait until the network is quiet; forgets earlier problems."""
        self.problems.clear()
        self._blocked.clear()
        response = self.page.goto(self.base_url + path, wait_until="load")
        deadline = time.monotonic() + 10
        while self._in_flight or time.monotonic() - self._last_change < QUIET_S:
            assert time.monotonic() < deadline, f"requests still in flight 10 s after load: {self._in_flight}"
            self.page.wait_for_timeout(20)  # lets Playwright deliver the request events
        if response is None or response.status != 200:
            self.problems.append(f"HTTP {response.status if response else 'no response'}")


@contextlib.contextmanager
def chromium_tab(base_url: str):
    """A Tab in Debian's Chromium, headless, driven by Playwright, at 1280x900."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which(CHROMIUM), headless=True)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(10_000)  # a static site on loopback: anything slower is broken
            yield Tab(page, base_url)
        finally:
            browser.close()
