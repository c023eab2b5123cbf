"""Chapter 8, batches that hang (ch08-hangs), read from the notebook's quick run: each trap is still
waiting, or has failed, at the example's bound, and each fix completes everything; then the table and
the summary from made-up facts."""

from __future__ import annotations

import pytest

from pipelab.chapters import ch08 as chapter
from pipelab.chapters.ch08 import hangs
from pipelab.jbang import JavaRun
from tests.conftest import saved


@pytest.fixture(scope="module")
def facts(executed_notebooks):
    executed_notebooks["08"]
    return saved("ch08/hangs")["params"]


def test_lettuce_commands_never_flushed_wait_for_the_command_timeout_and_a_flush_fixes_it(facts):
    n = facts["lettuce_commands"]
    assert facts["bound_ms"] == chapter.HANG_BOUND_S * 1000
    stuck = "lettuce_unflushed_default"
    assert facts[f"{stuck}_futures_pending"] > 0.9 * n, "no future completes before the 60 s default timeout"
    assert facts[f"{stuck}_wait_ms"] >= 0.9 * facts["bound_ms"] and facts[f"{stuck}_applied"] == 0, facts
    short = "lettuce_unflushed_timeout"
    assert facts[f"{short}_futures_failed"] > 0 and facts[f"{short}_futures_ok"] == 0, facts
    assert facts[f"{short}_wait_ms"] >= 0.9 * facts["lettuce_short_timeout_s"] * 1000, "ended by the timeout"
    assert "Timeout" in facts[f"{short}_error"] and facts[f"{short}_applied"] == 0, facts
    fix = "lettuce_flush_per_batch"
    assert facts[f"{fix}_futures_ok"] == n and facts[f"{fix}_futures_pending"] == 0, facts
    assert facts[f"{fix}_applied"] == n


def test_crossed_cluster_pipelines_wait_forever_by_default_fail_with_a_bounded_wait_and_a_sized_pool_fixes_it(facts):
    if "jedis_skipped" in facts:
        pytest.fail(facts["jedis_skipped"])
    assert facts["jedis_pool_max_wait_default_ms"] < 0, "commons-pool2's default waits forever"
    assert facts["jedis_default_wait_hung"] >= 1 and facts["jedis_default_wait_ok"] == 0, facts
    assert facts["jedis_default_wait_ms"] >= 0.9 * facts["bound_ms"]
    assert facts["jedis_bounded_wait_hung"] == 0 and facts["jedis_bounded_wait_failed"] >= 1, facts
    assert "Could not get a resource" in facts["jedis_bounded_wait_outcome"]
    assert facts["jedis_bounded_wait_ms"] < facts["bound_ms"], "the bounded wait ends before the example's bound"
    assert facts["jedis_sized_pool_ok"] == facts["jedis_pipelines"] == 2, facts
    assert facts["jedis_sized_pool_keys_written"] == 4


def test_redisson_skip_result_never_completes_the_commands_futures_and_without_it_all_complete(facts):
    n = facts["redisson_commands"]
    assert facts["redisson_skip_result_futures_pending"] == n and facts["redisson_skip_result_responses"] == 0, facts
    assert facts["redisson_skip_result_applied"] == n, "the batch itself ran"
    assert facts["redisson_with_results_futures_ok"] == n and facts["redisson_with_results_futures_pending"] == 0


FACTS = {
    "bound_ms": 2000,
    "lettuce_commands": 10,
    "lettuce_default_timeout_s": 60,
    "lettuce_flush_every": 1000,
    **{
        f"lettuce_{case}_{k}": v
        for case, hung in (("unflushed_default", True), ("unflushed_timeout", False))
        for k, v in {"futures_ok": 0, "futures_failed": 0, "futures_pending": 10, "hung": hung, "wait_ms": 2001}.items()
    },
    **{
        f"lettuce_{case}_{k}": v
        for case in ("flush_per_batch",)
        for k, v in {"futures_ok": 10, "futures_failed": 0, "futures_pending": 0, "hung": False, "wait_ms": 5}.items()
    },
    **{f"lettuce_{case}_applied": 0 for case in ("unflushed_default", "unflushed_timeout")},
    **{f"lettuce_{case}_applied": 10 for case in ("flush_per_batch",)},
    "redisson_commands": 3,
    **{
        f"redisson_{case}_{k}": v
        for case, pending in (("skip_result", 3), ("with_results", 0))
        for k, v in {
            "futures_ok": 3 - pending,
            "futures_failed": 0,
            "futures_pending": pending,
            "hung": pending > 0,
            "wait_ms": 2002 if pending else 0,
            "applied": 3,
        }.items()
    },
    "jedis_skipped": "no cluster",
}


def test_the_table_has_a_row_per_case_and_says_which_waits_were_given_up():
    table = chapter.hangs_table(FACTS)
    rows = table.splitlines()[2:]
    assert len(rows) == len(hangs.LETTUCE_CASES) + len(hangs.REDISSON_CASES), "no Jedis rows without a cluster"
    assert "still waiting at the bound (2,001 ms)" in rows[0] and "0 / 0 / 10" in rows[0]
    assert "still waiting" not in rows[2] and "10 / 0 / 0" in rows[2]
    assert "still waiting at the bound (2,002 ms)" in rows[-2]
    with_jedis = {k: v for k, v in FACTS.items() if k != "jedis_skipped"} | {
        f"jedis_{case}_{k}": v
        for case in hangs.JEDIS_CASES
        for k, v in {"ok": 0, "failed": 0, "hung": 2, "ms": 2000, "keys_written": 2}.items()
    }
    assert len(chapter.hangs_table(with_jedis).splitlines()) == 2 + len(rows) + len(hangs.JEDIS_CASES)


def test_the_summary_adds_the_bound_and_how_far_the_default_timeout_lies_beyond_it():
    run = JavaRun("ch08-hangs", {"size": 10, "modes": {}, "facts": FACTS})
    summary = chapter.hangs_summary(run, chapter.facts_summary(run))
    assert summary["bound_s"]["value"] == chapter.HANG_BOUND_S
    assert summary["lettuce_default_timeout_over_bound"]["value"] == 30
    assert summary["lettuce_unflushed_default_hung"]["text"] == "yes"
    assert summary["lettuce_unflushed_default_wait_ms"]["text"] == "2,001 ms"
