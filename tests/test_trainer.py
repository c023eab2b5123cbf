"""The trainer's pages: a day that names every exercise, a card per chapter built from the chapter's own
"What to remember", live demos with the output the room will see, and figures before anyone runs anything."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from pipelab import jbang, results
from pipelab.book import hooks, markers
from pipelab.course import demos
from pipelab.course import timings as course
from pipelab.paths import REPO

SITE = REPO / "site"
TRAINER = (SITE / "course" / "trainer.md").read_text()
CARDS = (SITE / "course" / "cards.md").read_text()
CHAPTERS = sorted((SITE / "chapters").glob("[0-9][0-9]-*.md"))


def test_the_day_names_every_exercise_or_says_why_it_is_cut():
    day = TRAINER.split("## The day", 1)[1].split("\n## ", 1)[0]
    timetable, cuts = day.split("**Cut from the one-day plan:**")
    assert re.search(r"^\| 09:00 \|", timetable, re.M) and re.search(r"^\| 17:00 \|", timetable, re.M)
    assert timetable.count("Break") >= 2 and "Lunch" in timetable
    for ex in course.EXERCISES:
        n = int(ex.number)
        assert f"Exercise {n}," in timetable or f"**Exercise {n} and" in cuts, f"exercise {n} has no slot and no cut"
    two_days = TRAINER.split("## Two days", 1)[1].split("\n## ", 1)[0]
    for n in range(1, 11):
        assert re.search(rf"[Cc]hapter {n}\b", two_days), f"the two-day plan leaves out chapter {n}"


def test_the_days_clock_adds_up_and_each_exercise_gets_its_planned_minutes():
    day = TRAINER.split("## The day", 1)[1].split("**Cut from", 1)[0]
    rows = re.findall(r"^\| (\d\d):(\d\d) \| ([^|]+) \| (\d*) \|", day, re.M)
    for (h, m, part, minutes), (h2, m2, _, _) in zip(rows, rows[1:]):
        assert int(h) * 60 + int(m) + int(minutes) == int(h2) * 60 + int(m2), f"{h}:{m} {part.strip()}"
    planned = {int(ex.number): ex.planned_minutes for ex in course.EXERCISES}
    for _, _, part, minutes in rows:
        if found := re.match(r"Exercise (\d)", part):
            assert int(minutes) >= planned[int(found[1])], part


def test_every_chapter_has_a_card_with_its_takeaways_a_plot_a_demo_and_two_debrief_questions():
    cards = re.split(r"^## (?=\d+\. )", CARDS, flags=re.M)[1:]
    assert len(cards) == len(CHAPTERS)
    for number, card in enumerate(cards, 1):
        kinds = {(kind, arg) for kind, arg in markers.BLOCK.findall(card)}
        assert ("remember", f"ch{number:02d}") in kinds, f"card {number} does not show its chapter's takeaways"
        assert any(kind == "plot" and arg.startswith(f"ch{number:02d}/") for kind, arg in kinds) or "no plot" in card
        assert "**Live demo**" in card and "**Debrief.**" in card
        questions = re.findall(r"^\d\. \*", card.split("**Debrief.**")[1], re.M)
        assert len(questions) == 2, f"card {number}: {len(questions)} debrief questions"
        assert card.count("The wrong answer") == 2, f"card {number}: each question names the common wrong answer"


def test_a_card_shows_the_chapters_own_takeaways():
    page = SimpleNamespace(file=SimpleNamespace(src_uri="course/cards.md"))
    shown = hooks.on_page_markdown("<!-- pipelab:remember ch04 -->\n", page, None, None)
    chapter = (SITE / "chapters" / "04-pitfalls.md").read_text()
    first = re.search(r"^- \*\*(.+?)\*\*", chapter.split("## What to remember")[1], re.M).group(1)
    assert f"**{first}**" in shown and "## What you measured" not in shown


def test_every_demo_is_a_catalog_alias_and_its_output_is_trimmed_for_a_projector():
    assert {demo.alias for demo in demos.DEMOS} <= set(jbang.catalog_aliases())
    long = "\n".join(f"line {i}" for i in range(40)) + f"\n{jbang.RESULT_MARK}{{}}\n"
    shown = demos.trimmed(long)
    assert jbang.RESULT_MARK not in shown and shown.count("\n") == demos.KEEP_LINES
    assert shown.endswith(f"({40 - demos.KEEP_LINES} more lines)")


def test_the_trainers_page_shows_the_references_demos_and_timings_marked_until_the_trainer_runs_them(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv("PIPELAB_REFERENCE", str(tmp_path / "reference"))
    assert "_`make course` runs it" in demos.section(None, False)
    summary = {
        "ch01-ping_output": results.quantity(0, "count", "Jedis one by one: 1 s"),
        "ch01-ping_s": results.quantity(2, "s"),
    }
    reference = tmp_path / "reference" / "course"
    reference.mkdir(parents=True)
    doc = {"name": demos.DEMOS_RESULT, "environment": {}, "params": {}, "measurements": [], "summary": summary}
    (reference / "demos.json").write_text(json.dumps(doc))
    page = SimpleNamespace(file=SimpleNamespace(src_uri="course/trainer.md"))
    shown = hooks.on_page_markdown("<!-- pipelab:course demos -->\n", page, None, None)
    assert "Printed on the reference machine" in shown and "Jedis one by one: 1 s" in shown
    assert "`build/venv/bin/pipelab jbang ch01-ping`" in shown


@pytest.mark.parametrize("page", ["trainer.md", "cards.md", "examples.md", "exercises.md"])
def test_the_course_pages_run_an_example_one_way(page):
    text = (SITE / "course" / page).read_text()
    bare = re.findall(r"(?<![\w/-])(?<!pipelab )jbang (?:ch\d\d|ex\d\d|lab-connect)", text)
    assert not bare, f"{page}: run examples as `build/venv/bin/pipelab jbang ALIAS`: {bare}"
