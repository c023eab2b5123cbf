"""The site while the book measures: built with the reference's figures before the first chapter, served
on loopback, and each chapter's pages rebuilt with the reader's figures as soon as that chapter ends.

A refresh is mkdocs' dirty build (only the pages whose output is older than their source are built) of
the chapter's page and its notebook's, without the search index (the first build's stays): a few
seconds, between chapters, never while one measures. Other pages that quote the chapter (the method
page, Your run, a later chapter) wait for the run's last build, a whole and strict one.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ..errors import LabError
from ..paths import REPO, build_dir
from . import build as book
from . import failures

REFRESH_VAR = "PIPELAB_SITE_REFRESH"  # hooks.py: a refresh builds no search index
PORT_VAR = "PIPELAB_SITE_PORT"  # the port to serve on; 0 serves nowhere
PORTS = range(8000, 8020)  # the first free one, as `make serve` uses 8000


def site_dir() -> Path:
    return build_dir() / "site"


def output_of(page: str, site: Path) -> Path:
    """Where mkdocs (directory URLs) writes the page `page` (a path under the docs dir)."""
    stem = page.removesuffix(".md").removesuffix(".ipynb")
    return site / "index.html" if stem == "index" else site / stem / "index.html"


def chapter_pages(chapter: str) -> tuple[str, str]:
    """The chapter's page and its executed notebook's page (as hooks.py stages it)."""
    from .hooks import NOTEBOOK_SUFFIX  # noqa: PLC0415  (hooks imports matplotlib: only when refreshing)

    stem = book.notebooks([chapter])[0].stem
    return f"chapters/{stem}.md", f"chapters/{stem}{NOTEBOOK_SUFFIX}"


def url_of(page: str, root: str) -> str:
    stem = page.removesuffix(".md")
    return root if stem == "index" else f"{root}{stem}/"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *_) -> None:  # the book's own lines are what the terminal shows
        pass


def _serve() -> ThreadingHTTPServer | None:
    """A static server on loopback for build/site (its folder is looked up at each request, so a site
    swapped in by a whole build is served at once)."""
    wanted = os.environ.get(PORT_VAR)
    ports = [int(wanted)] if wanted else list(PORTS)
    if ports == [0]:
        return None
    handler = functools.partial(_Quiet, directory=str(site_dir()))
    for port in ports:
        try:
            server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        except OSError:
            continue
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server
    return None


class LiveSite:
    """`with LiveSite() as site:` builds the site and serves it; site.refresh(NN) after each chapter."""

    def __init__(self, out=None):
        self.out = out or sys.stdout
        self.server: ThreadingHTTPServer | None = None
        self.root = ""
        self.built = True  # a whole build is there to refresh

    def say(self, line: str) -> None:
        self.out.write(f"pipelab: {line}\n")
        self.out.flush()

    def __enter__(self) -> LiveSite:
        started = time.monotonic()
        try:
            index = book.build_site()
        except LabError as err:  # the chapters are measured all the same; the last build says it again
            self.say(f"the site could not be built before measuring ({err}); the book measures on")
            self.built = False
            return self
        self.server = _serve()
        if self.server:
            self.root = f"http://127.0.0.1:{self.server.server_address[1]}/"
        where = self.root or str(index)
        self.say(
            f"the site is up at {where} (built in {time.monotonic() - started:.0f} s) with the reference's "
            "figures; each chapter's page shows yours as soon as that chapter is measured"
        )
        return self

    def __exit__(self, *_) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    def refresh(self, chapter: str) -> float | None:
        """Rebuild the pages that show `chapter`'s results; seconds taken, or None when it failed (said
        in one line: a refresh never stops the book, and the run's last build is a whole one)."""
        if not self.built:
            return None
        started = time.monotonic()
        site = site_dir()
        page, notebook = chapter_pages(chapter)
        pages = [page, notebook]  # the other pages that quote the chapter wait for the run's last, whole build
        for shown in pages:  # older than its source: mkdocs --dirty builds it again
            if (out := output_of(shown, site)).exists():
                os.utime(out, (0, 0))
        done = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--dirty", "--site-dir", str(site)],
            cwd=REPO,
            env=dict(os.environ, NO_MKDOCS_2_WARNING="1", **{REFRESH_VAR: "1"}),
            capture_output=True,
            text=True,
        )
        took = time.monotonic() - started
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["?"])[-1]
            self.say(
                f"the site's pages for chapter {int(chapter)} could not be rebuilt now ({last}); the last build will"
            )
            return None
        shows = "what failed, and the reference's figures" if failures.recorded(chapter) else "your figures"
        where = url_of(page, self.root) if self.root else output_of(page, site)
        self.say(f"chapter {int(chapter)}'s page now shows {shows}: {where} (rebuilt in {took:.0f} s)")
        return took
