"""Chapter 8, section 6: one pipeline object shared by threads or coroutines misattributes replies or
fails, while a pipeline per call and the shared one behind a lock do not; read from the notebook's quick
run, plus the tally and the summary on made-up inputs."""

from __future__ import annotations

import pytest

from pipelab.chapters.ch08 import shared as chapter
from tests.conftest import saved


@pytest.fixture(scope="module")
def ch08(executed_notebooks):
    return executed_notebooks["08"]


def cases() -> dict:
    return saved("ch08/shared")["params"]["cases"]


@pytest.mark.parametrize("client", ["sync", "async", "jedis"])
def test_a_shared_pipeline_misattributes_or_fails_where_one_per_call_does_not(ch08, client):
    shared = cases()[client]["shared"]
    went_wrong = shared["wrong"] + shared["missing"] + sum(shared["exceptions"].values()) + shared["lost"]
    assert went_wrong > 0 and shared["trials_faulty"] > 0, shared
    for fix in ("per_call", "lock"):
        c = cases()[client][fix]
        assert c["own"] == c["replies_expected"] == c["issued"] > 0, (fix, c)
        assert c["wrong"] == c["missing"] == c["lost"] == c["extra_runs"] == c["trials_faulty"] == 0, (fix, c)
        assert c["exceptions"] == {}, (fix, c)


def test_shared_redis_py_pipelines_hand_replies_to_other_callers(ch08):
    # Two threads executing at once send the same command_stack: the race shows in most trials.
    sync = cases()["sync"]["shared"]
    assert sync["wrong"] > 0 and sync["trials_faulty"] * 2 > sync["trials"], sync


def test_the_summary_says_which_modes_went_wrong(ch08):
    summary = saved("ch08/shared")["summary"]
    for client in ("sync", "async", "jedis"):
        assert summary[f"{client}_shared_faults"]["value"] > 0
        assert summary[f"{client}_per_call_faults"]["value"] == summary[f"{client}_lock_faults"]["value"] == 0


def test_the_tally_counts_other_callers_replies_missing_ones_and_exceptions():
    mine = [f"{chapter.SHARED_PREFIX}t:0:c0:r0:{i}" for i in range(2)]
    theirs = [f"{chapter.SHARED_PREFIX}t:0:c1:r0:{i}" for i in range(2)]
    outcomes = [
        [[True, mine[0].encode(), True, theirs[1].encode()]],  # one own value, one of caller 1's
        [ConnectionError("gone")],
    ]
    seen = chapter.tally([[mine], [theirs]], outcomes)
    assert seen["calls"] == 2 and seen["own"] == 1 and seen["wrong"] == 1
    assert seen["missing"] == 1 + 2 and seen["exception:ConnectionError"] == 1


def case(**counts) -> dict:
    base = dict.fromkeys(chapter.CASE_COUNTS, 0) | {"exceptions": {}, "trials": 3, "trials_faulty": 0}
    return base | counts


def test_the_summary_and_table_from_made_up_cases():
    cases = {
        "sync": {
            "shared": case(calls=240, replies_expected=1200, wrong=7, missing=3, exceptions={"TimeoutError": 2}),
            "per_call": case(calls=240, replies_expected=1200, own=1200, issued=1200),
        }
    }
    summary = chapter.shared_summary(cases, 8, 10)
    assert summary["sync_shared_faults"]["value"] == 7 + 3 + 2
    assert summary["sync_shared_exception_types"]["text"] == "2 TimeoutError"
    assert summary["sync_per_call_faults"]["value"] == 0 and summary["sync_per_call_exception_types"]["text"] == "none"
    table = chapter.shared_table(cases)
    assert table.count("\n") == 1 + 2 and "redis-py, threads" in table


class FakeRun:
    def __init__(self, facts: dict):
        self.facts = facts


def test_the_java_facts_become_cases():
    facts = {"trials": 3, "jedis_shared_trials_faulty": 3, "jedis_shared_exceptions": "JedisConnectionException 9"}
    facts |= {f"jedis_shared_{k}": 1 for k in chapter.CASE_COUNTS}
    jedis = chapter.java_cases(FakeRun(facts))
    assert list(jedis) == ["shared"], "modes the example did not run are left out"
    assert jedis["shared"]["exceptions"] == {"JedisConnectionException": 9} and jedis["shared"]["trials_faulty"] == 3
