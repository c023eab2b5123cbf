"""The course kit as a trainer uses it: every solution passes and is timed, every exercise fails until solved."""

from __future__ import annotations

import pytest

from pipelab import jbang
from pipelab.course import timings as course

STACK_TRACE = ("Exception in thread", "\tat ", "Traceback (most recent call last)")


@pytest.fixture(scope="module")
def timings(course_run):
    return course_run


def test_each_exercise_has_a_notebook_a_solution_and_two_aliases():
    aliases = jbang.catalog_aliases()
    for ex in course.EXERCISES:
        assert ex.notebook("exercises").name == ex.notebook("solutions").name
        for solution in (False, True):
            ref = aliases[ex.alias(solution)]["script-ref"]
            assert ref == f"java-examples/{'solutions' if solution else 'exercises'}/{ex.java_class}.java"


def test_every_solution_passes_and_is_timed(timings):
    summary = timings["summary"]
    for ex in course.EXERCISES:
        for side in ("python", "java"):
            assert summary[f"ex{ex.number}_{side}_s"]["value"] > 0
            printed = summary[f"ex{ex.number}_{side}_printed"]["text"]
            assert printed and any(ch.isdigit() for ch in printed), f"exercise {ex.number} {side}: {printed!r}"
    assert summary["maven_jars"]["value"] > 0 and summary["venv_bytes"]["value"] > 0
    assert timings["environment"]["redis_version"]


def test_the_trainers_tables_come_from_the_timings(timings):
    table = course.timings_table()
    for ex in course.EXERCISES:
        assert timings["summary"][f"ex{ex.number}_java_s"]["text"] in table
    assert "not measured" not in course.footprint_table()


@pytest.mark.parametrize("ex", course.EXERCISES, ids=lambda e: f"ex{e.number}")
def test_an_unsolved_java_exercise_says_so_in_one_sentence(ex, unsolved_java_runs):
    done, keys_left = unsolved_java_runs[ex.alias(False)]
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "not solved yet" in output, output
    assert not any(mark in output for mark in STACK_TRACE), output
    assert keys_left == 0, "the check left keys behind"


def test_a_java_exercise_refuses_a_redis_with_foreign_keys(jdk, lab, foreign_key):
    done = course.run_java(course.EXERCISES[0], lab.endpoint, solution=True)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not the lab's" in done.stdout + done.stderr
