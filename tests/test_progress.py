"""The build's status line: the section a cell runs in, the time left, and how the line is written."""

from __future__ import annotations

import io

import nbformat
import pytest

from pipelab.book import build, progress
from pipelab.book.progress import Chapter, Progress, time_left


def notebook():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    return nbformat.v4.new_notebook(
        cells=[
            md("# Chapter 3 — Client internals\n\nWhat this chapter measures."),
            code("import redis"),
            md("## 1. The SADD job\n\nSome prose."),
            code("job()"),
            md("A paragraph, no heading."),
            code("more()"),
            md("Prose first.\n\n### At 1 ms\n\nMore prose."),
            code("rtt()"),
        ]
    )


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def board(chapters, **kw):
    out, clock = io.StringIO(), Clock()
    return Progress(chapters, of=8, out=out, tty=False, now=clock, **kw), out, clock


def test_the_chapter_name_is_the_first_heading_less_its_number():
    assert progress.title(notebook()) == "Client internals"


def test_each_cell_runs_under_the_nearest_heading_above_it_any_level():
    assert progress.sections(notebook()) == [
        "",  # the title is the chapter's name, no section
        "",
        "1. The SADD job",
        "1. The SADD job",
        "1. The SADD job",
        "1. The SADD job",
        "At 1 ms",
        "At 1 ms",
    ]


def test_every_chapter_notebook_has_a_name():
    names = [progress.title(nbformat.read(p, as_version=4)) for p in build.notebooks()]
    assert all(names) and names[2] == "Client internals"


def test_before_any_chapter_ends_the_time_left_is_the_reference_at_the_given_pace():
    assert time_left([], None, [100, 200], pace=1.0) == 300
    assert time_left([], None, [100, 200], pace=None) is None  # quick mode: nothing to scale yet


def test_finished_chapters_set_the_pace():
    # Chapter 1 took half its reference time: the rest will too.
    assert time_left([(50, 100)], None, [200, 300], pace=1.0) == 250
    assert time_left([(50, 100)], None, [200, 300], pace=None) == 250


def test_the_running_chapter_counts_what_it_has_left_at_that_pace():
    # Expected 0.5 * 200 = 100 s for chapter 2; 40 s in, 60 s of it left, then 150 s for chapter 3.
    assert time_left([(50, 100)], (40, 200), [300], pace=1.0) == pytest.approx(210)


def test_a_chapter_past_its_expected_time_slows_the_pace():
    # 150 s into chapter 2 (expected 100 s): the run is at least (50 + 150) / (100 + 200) slow.
    left = time_left([(50, 100)], (150, 200), [300], pace=1.0)
    assert left == pytest.approx(300 * 200 / 300)


def test_kept_chapters_are_done_in_no_time_and_set_no_pace():
    p, _, clock = board([Chapter(1, "A", 100), Chapter(2, "B", 200), Chapter(3, "C", 300)])
    p.keep(0)
    p.start(1)
    clock.t += 100
    p.done()
    assert p.left() == pytest.approx(150)  # pace 100/200 from chapter 2 alone, chapter 1 not waited for


def test_without_reference_times_there_is_no_estimate():
    p, out, _ = board([Chapter(1, "A"), Chapter(2, "B")], pace=None)
    p.start(0)
    assert p.left() is None
    assert "left" not in out.getvalue()


def test_plain_output_is_a_line_per_start_section_change_and_end():
    p, out, clock = board([Chapter(3, "Client internals", 200), Chapter(4, "Pitfalls", 100)])
    with p:
        p.start(0)
        clock.t += 10
        p.section("1. The SADD job")
        p.section("1. The SADD job")  # the same section again: no new line
        clock.t += 65
        p.section("2. At 1 ms")
        clock.t += 25
        p.done()
        p.start(1)
        clock.t += 30
        p.done()
    assert out.getvalue().splitlines() == [
        "pipelab: 3/8 Client internals · 0:00 · book ~5 min left",
        "pipelab: 3/8 Client internals · 0:10 · book ~5 min left · 1. The SADD job",
        "pipelab: 3/8 Client internals · 1:15 · book ~4 min left · 2. At 1 ms",
        "pipelab: 3/8 Client internals · done in 1:40 · book under a minute left",
        "pipelab: 4/8 Pitfalls · 0:00 · book under a minute left",
        "pipelab: 4/8 Pitfalls · done in 0:30",
        "pipelab: 3/8 Client internals  1:40",
        "pipelab: 4/8 Pitfalls          0:30",
        "pipelab: total                 2:10",
    ]
    assert "\r" not in out.getvalue()


def test_the_table_marks_kept_chapters():
    p, out, _ = board([Chapter(1, "A", 10), Chapter(2, "B", 10)])
    with p:
        p.keep(0)
        p.keep(1)
    assert "pipelab: 1/8 A  kept (unchanged)" in out.getvalue().splitlines()


def test_a_failed_chapter_is_said_in_one_line_sets_no_pace_and_the_run_goes_on():
    p, out, clock = board([Chapter(1, "A", 100), Chapter(2, "B", 200)])
    with p:
        p.start(0)
        clock.t += 30
        p.failed("chapter 1 (A) failed: boom.")
        assert p.left() == pytest.approx(200), "chapter 2 at the reference's pace: the failure set none"
        p.start(1)
        clock.t += 200
        p.done()
    lines = out.getvalue().splitlines()
    assert lines[1:3] == ["pipelab: 1/8 A · failed after 0:30", "pipelab: chapter 1 (A) failed: boom."]
    assert "pipelab: 1/8 A  failed after 0:30" in lines and "pipelab: 2/8 B  3:20" in lines


def test_in_a_terminal_the_line_is_rewritten_in_place_and_cut_to_the_width():
    out, clock = io.StringIO(), Clock()
    p = Progress([Chapter(3, "Client internals", 200)], of=8, out=out, tty=True, width=40, now=clock)
    p.start(0)
    p.section("2. The same at an injected RTT of 1 ms, a long heading")
    writes = out.getvalue().split(progress.CLEAR)[1:]
    assert len(writes) == 2 and "\n" not in "".join(writes)
    assert all(len(w) < 40 for w in writes)
    assert writes[-1].endswith("…") and writes[-1].startswith("pipelab: 3/8 Client internals")


def test_fit_leaves_short_lines_alone():
    assert progress.fit("short", 40) == "short"
    assert progress.fit("x" * 50, 10) == "x" * 8 + "…"
