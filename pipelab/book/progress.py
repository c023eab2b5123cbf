"""One status line per chapter while notebooks execute: which chapter, which section, how long, how long left.

In a terminal the line is rewritten in place (and once a second, so the clock moves); elsewhere, as in a CI
log, it is printed when a chapter starts, when its section changes and when it ends.
"""

from __future__ import annotations

import re
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from typing import TextIO

HEADING = re.compile(r"^(#+)\s+(.+?)\s*#*\s*$")
CLEAR = "\r\x1b[K"  # back to the line's start, erase it


def _headings(cell) -> list[tuple[int, str]]:
    if cell.get("cell_type") != "markdown":
        return []
    source = cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else source
    return [(len(m[1]), m[2]) for m in map(HEADING.match, source.splitlines()) if m]


def title(nb) -> str:
    """The notebook's first `# ` heading, less its "Chapter 3 — " part: "Client internals"."""
    for cell in nb["cells"]:
        for level, text in _headings(cell):
            if level == 1:
                return text.split(" — ", 1)[-1]
    return ""


def sections(nb) -> list[str]:
    """For each cell, the nearest heading above it ("" before the first); the title is the chapter's
    name, shown already, so it is no section."""
    current, title_seen, out = "", False, []
    for cell in nb["cells"]:
        for level, text in _headings(cell):
            if level == 1 and not title_seen:
                title_seen = True
            else:
                current = text
        out.append(current)
    return out


def time_left(
    done: list[tuple[float, float]], current: tuple[float, float] | None, waiting: list[float], pace: float | None
) -> float | None:
    """Seconds left: the reference times still to run, times this run's pace (its seconds per reference
    second over the chapters it has finished; `pace` until there are some, None for no estimate).
    done: (took, reference) per finished chapter; current: (elapsed, reference); waiting: references."""
    took, ref = sum(t for t, _ in done), sum(r for _, r in done)
    if ref:
        pace = took / ref
    if pace is None:
        return None
    left = 0.0
    if current:
        elapsed, current_ref = current
        # A chapter running past its expected time shows the run is slower than thought: at least this pace.
        pace = max(pace, (took + elapsed) / (ref + current_ref))
        left = max(pace * current_ref - elapsed, 0.0)
    return left + pace * sum(waiting)


def clock(seconds: float) -> str:
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


def about(seconds: float) -> str:
    return "under a minute" if seconds < 60 else f"~{round(seconds / 60)} min"


def fit(text: str, width: int) -> str:
    """The line cut to the terminal's width (one column spare: a full line would wrap)."""
    return text if len(text) < width else text[: max(width - 2, 0)] + "…"


@dataclass
class Chapter:
    number: int
    name: str
    reference_s: float | None = None  # the reference run's time, if there is one
    took_s: float | None = None
    kept: bool = False  # not run: its results were unchanged
    failed: bool = False  # its notebook failed (book.failures)


class Progress:
    """The status line for a run of chapters (the book's, or the course's exercises)."""

    def __init__(
        self,
        chapters: list[Chapter],
        of: int,
        *,
        what: str = "book",
        pace: float | None = 1.0,
        out: TextIO | None = None,
        tty: bool | None = None,
        width: int | None = None,
        now=time.monotonic,
    ):
        self.chapters, self.of, self.what, self.pace = chapters, of, what, pace
        self.out = out or sys.stdout
        self.tty = self.out.isatty() if tty is None else tty
        self.width, self.now = width, now
        self.estimable = all(c.reference_s for c in chapters)
        self.current: int | None = None
        self.section_text = ""
        self.started = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()

    # --- what the run tells it

    def start(self, index: int) -> None:
        with self._lock:
            self.current, self.section_text, self.started = index, "", self.now()
            self._show()

    def section(self, text: str) -> None:
        with self._lock:
            if text and text != self.section_text:
                self.section_text = text
                self._show()

    def done(self) -> float:
        """The current chapter finished: its time, in seconds."""
        with self._lock:
            chapter = self.chapters[self.current]
            chapter.took_s = self.now() - self.started
            self.current = None
            line = f"{self._name(chapter)} · done in {clock(chapter.took_s)}"
            self._show(self._with_left(line), end=True)
            return chapter.took_s

    def failed(self, why: str) -> None:
        """The current chapter failed: said in one line, and the run goes on."""
        with self._lock:
            chapter = self.chapters[self.current]
            chapter.took_s, chapter.failed = self.now() - self.started, True
            self.current = None
            self._show(f"{self._name(chapter)} · failed after {clock(chapter.took_s)}", end=True)
            self.out.write(f"pipelab: {why}\n")
            self.out.flush()

    def keep(self, index: int) -> None:
        """Not run (unchanged): done, in no time."""
        self.chapters[index].took_s, self.chapters[index].kept = 0.0, True

    # --- what it shows

    def left(self) -> float | None:
        if not self.estimable:
            return None
        ran = [(c.took_s, c.reference_s) for c in self.chapters if c.took_s is not None and not (c.kept or c.failed)]
        current = None
        if self.current is not None:
            current = (self.now() - self.started, self.chapters[self.current].reference_s)
        waiting = [c.reference_s for i, c in enumerate(self.chapters) if c.took_s is None and i != self.current]
        if current is None and not waiting:
            return None  # nothing left to estimate
        return time_left(ran, current, waiting, self.pace)

    def line(self) -> str:
        chapter = self.chapters[self.current]
        line = self._with_left(f"{self._name(chapter)} · {clock(self.now() - self.started)}")
        return f"{line} · {self.section_text}" if self.section_text else line

    def table(self) -> list[str]:
        """The end of the run: each chapter's time, and the total."""
        rows = [
            (
                self._name(c),
                "kept (unchanged)" if c.kept else f"failed after {clock(c.took_s)}" if c.failed else clock(c.took_s),
            )
            for c in self.chapters
            if c.took_s is not None
        ]
        rows.append(("total", clock(sum(c.took_s for c in self.chapters if c.took_s is not None))))
        width = max(len(name) for name, _ in rows)
        return [f"pipelab: {name:<{width}}  {took}" for name, took in rows]

    def _name(self, chapter: Chapter) -> str:
        return f"{chapter.number}/{self.of} {chapter.name}"

    def _with_left(self, line: str) -> str:
        left = self.left()
        return line if left is None else f"{line} · {self.what} {about(left)} left"

    def _show(self, line: str | None = None, end: bool = False) -> None:
        line = "pipelab: " + (line or self.line())
        if self.tty:
            width = self.width or shutil.get_terminal_size().columns
            self.out.write(CLEAR + fit(line, width) + ("\n" if end else ""))
        else:
            self.out.write(line + "\n")
        self.out.flush()

    # --- a run: `with progress:`, the clock ticking in a terminal, the table at its end

    def _tick(self) -> None:
        while not self._stop.wait(1):
            with self._lock:
                if self.current is not None:
                    self._show()

    def __enter__(self) -> Progress:
        # Said once, up front: why the line shows no time left, or not yet.
        if not self.estimable:
            some = "some of its parts" if any(c.reference_s for c in self.chapters) else "its parts"
            note = f"the {self.what} has no reference time for {some}: no estimate of the time left"
        elif self.pace is None:
            note = "quick mode has no reference times of its own: time left shown once a chapter sets the pace"
        else:
            note = None
        if note:
            self.out.write(f"pipelab: {note}\n")
        if self.tty:
            threading.Thread(target=self._tick, daemon=True).start()
        return self

    def __exit__(self, kind, *_) -> None:
        self._stop.set()
        with self._lock:
            if self.tty and self.current is not None:
                self.out.write("\n")  # the failing chapter's line stays, the error goes below it
            if kind is None:
                self.out.write("\n".join(self.table()) + "\n")
            self.out.flush()
