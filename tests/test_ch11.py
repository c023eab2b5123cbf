"""Chapter 11: Rust's clients. Directions from the notebook's quick run, with tolerant bounds (skipped
where cargo is missing: the chapter then says so, which tests/test_rust.py holds); the tables and
summaries on made-up runs."""

from __future__ import annotations

import pytest

from pipelab import rust
from pipelab.chapters import ch11
from pipelab.jbang import JavaRun
from tests.conftest import saved


@pytest.fixture(scope="module")
def ch11_run(executed_notebooks):
    if why := rust.available():
        pytest.skip(f"no cargo here: {why}")
    return executed_notebooks["11"]


def summary(name: str) -> dict:
    return saved(name)["summary"]


def value(s: dict, key: str):
    assert key in s, f"no {key} among {sorted(s)[:20]}..."
    return s[key]["value"]


def test_redis_rs_pipelines_beat_one_by_one_and_arrive_in_few_reads(ch11_run):
    s = summary("ch11/explicit")
    for workload in ("ping", "sadd"):
        assert value(s, f"redis_rs_{workload}_speedup") > 3, workload  # 20x to 37x in quick runs
        assert value(s, f"redis_rs_{workload}_one_by_one_cmds_per_read") < 1.1
        assert value(s, f"redis_rs_{workload}_pipeline_cmds_per_read") > 50
    # MULTI and EXEC around the same commands: two more commands in the same reads.
    doc = saved("ch11/explicit")
    atomic = next(m for m in doc["measurements"] if m.label == "redis-rs ping atomic")
    assert atomic.params["commands"] == atomic.ops + 2


def test_one_connection_batches_concurrent_tasks_and_the_pool_never_does(ch11_run):
    s = summary("ch11/curve")
    for point in ("redis_rs_multiplexed_connection", "redis_rs_connectionmanager", "fred_one_client"):
        assert value(s, f"{point}_r0_c1_cpr") < 1.1, point  # one task: nothing to send beside its GET
        if f"{point}_r1_c256_cpr" in s:  # toxiproxy here: at 1 ms the tasks' GETs pile up by dozens
            assert value(s, f"{point}_r1_c256_cpr") > 10, point
    for callers in (1, 16, 256):
        assert value(s, f"fred_exclusivepool_r0_c{callers}_cpr") < 1.05, "a client per GET carries one command"
    if "fred_pool_gain_r1" in s:  # 6x in a quick run: one client carries 256 tasks at 1 ms, the pool does not
        assert value(s, "fred_pool_gain_r1") > 1.5


def test_redis_rs_refuses_a_pipeline_across_masters_and_the_hand_split_runs_it(ch11_run):
    s = summary("ch11/cluster")
    assert "CrossSlot" in s["rs_pipeline_outcome"]["text"]
    assert sum(value(s, f"rs_node{i}_commands") for i in range(3)) == 0, "refused before anything was sent"
    assert "CrossSlot" in s["rs_atomic_crossslot_outcome"]["text"] and value(s, "rs_atomic_crossslot_multis") == 0
    n = value(s, "n")
    assert sum(value(s, f"fred_node{i}_commands") for i in range(3)) == n
    assert all(value(s, f"fred_node{i}_commands") > 0 for i in range(3)), "fred sends each SET to its master"
    assert s["fred_order_kept"]["text"] == "True"
    assert value(s, "rs_split_speedup") > 3  # the hand split against one by one


def test_one_failing_command_and_what_each_way_of_sending_gives_the_caller(ch11_run):
    s = summary("ch11/cluster")
    # Across masters redis-rs sends nothing, with or without ignore_errors().
    assert value(s, "rs_plain_ran") == 0 and value(s, "rs_ignore_ran") == 0
    # In one slot every good command runs; the plain call is an error, ignore_errors() is not.
    for case in ("rs_plain_oneslot", "rs_ignore_oneslot", "rs_atomic", "fred_all", "fred_tryall"):
        assert value(s, f"{case}_ran") == ch11.cluster.GOOD_COMMANDS, case
        assert value(s, f"{case}_server_errors") == 1, case
    assert s["rs_plain_oneslot_outcome"]["text"] != "ok" and s["rs_ignore_oneslot_outcome"]["text"] == "ok"
    assert (value(s, "rs_ignore_oneslot_replies_ok"), value(s, "rs_ignore_oneslot_replies_failed")) == (3, 1)
    assert (value(s, "fred_tryall_replies_ok"), value(s, "fred_tryall_replies_failed")) == (3, 1)
    assert s["fred_all_outcome"]["text"] != "ok"


def test_a_lost_master_leaves_the_survivors_share_run_and_no_more(ch11_run):
    rows = saved("ch11/lost")["params"]["rows"]
    assert set(rows) == {"redis-rs", "fred"}, rows
    for name, row in rows.items():
        assert row["survivors_ran"] == row["survivor_share"], (name, row)
    # fred answers the whole pipeline with the connection's error at once; redis-rs keeps retrying.
    assert rows["fred"]["outcome"] != "ok" and rows["fred"]["waited_ms"] < 2_000
    assert rows["redis-rs"]["outcome"].startswith("still waiting")


# --------------------------------------------------------------------- made-up runs


def made_up_errors() -> JavaRun:
    facts = {
        f"{case}_{what}": got
        for case, _, _ in ch11.cluster.ERROR_CASES
        for what, got in (("ran", 3), ("outcome", "ok"))
    }
    facts |= {"rs_plain_outcome": "Received crossed slots in pipeline - Server(CrossSlot)", "rs_plain_ran": 0}
    facts |= {"fred_tryall_replies_ok": 3, "fred_tryall_replies_failed": 1, "fred_all_outcome": "ERR <addr> x"}
    return JavaRun("rust:cluster", {"size": 4, "facts": facts})


def test_the_errors_table_has_a_row_per_case_and_escapes_what_reads_as_a_tag():
    table = ch11.errors_table(made_up_errors())
    assert table.count("\n") == 1 + len(ch11.cluster.ERROR_CASES)
    assert "&lt;addr&gt;" in table and "<addr>" not in table
    assert "| fred | `try_all()`, keys on three masters | ok | 3 / 1 | 3 of 3 |" in table
    s = ch11.errors_summary(made_up_errors())
    assert s["rs_plain_ran"]["value"] == 0 and "CrossSlot" in s["rs_plain_outcome"]["text"]


def test_the_code_a_section_shows_is_its_examples_region_unindented():
    shown = ch11.rust_code("cluster", "redisrs-errors")
    assert shown.startswith("`node-go-rust-examples/rust/src/bin/cluster.rs`")
    body = shown.split("```rust\n", 1)[1]
    assert "ignore_errors()" in body and not body.startswith(" ") and "--8<--" not in body
    with pytest.raises(ValueError):
        ch11.rust_code("explicit", "no-such-region")
