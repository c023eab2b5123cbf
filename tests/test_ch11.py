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


def test_the_sync_cluster_pipe_splits_by_node_itself_and_keeps_the_order(ch11_run):
    s = summary("ch11/cluster")
    assert s["rs_sync_pipeline_outcome"]["text"] == "ok"
    ran = [value(s, f"rs_sync_node{i}_commands") for i in range(3)]
    assert all(n > 0 for n in ran) and sum(ran) == value(s, "n"), ran  # every master its share, once
    assert s["rs_sync_order_kept"]["text"] == "True"


def test_a_long_pipeline_fails_at_the_default_timeout_and_passes_with_a_longer_one(ch11_run):
    s = summary("ch11/timeout")
    rtts = [k.split("_")[0] for k in s if k.endswith("_first_failed")]
    assert "r0" in rtts, sorted(s)
    for r in rtts:
        failed, passed = value(s, f"{r}_first_failed"), value(s, f"{r}_last_passed")
        assert failed > passed, (r, failed, passed)  # the sweep grows and stops at the first failure
        assert "timed out" in s[f"{r}_error"]["text"].lower(), s[f"{r}_error"]
        assert 450 < value(s, f"{r}_failed_ms") < 10_000, "the default gives the whole pipeline about 500 ms"
        assert value(s, f"{r}_manager_first_failed") > 0, "ConnectionManager has the same default"
        assert value(s, f"{r}_long_ok") == 1 and value(s, f"{r}_long_ms") > 400
        assert value(s, f"{r}_server_ran") > 0, "the server ran SETs of the pipeline the caller gave up on"


def test_tcp_nodelay_as_read_back_from_each_clients_socket(ch11_run):
    s = summary("ch11/nodelay")
    text = {k: v["text"] for k, v in s.items() if k.endswith("_tcp_nodelay")}
    assert text["redisrs_multiplexed_tcp_nodelay"] == "off", text  # TcpSettings::default()
    assert text["fred_client_tcp_nodelay"] == "off", text  # fred keeps Linux's default
    assert text["redisrs_multiplexed_nodelay_tcp_nodelay"] == "on" and text["fred_client_nodelay_tcp_nodelay"] == "on"
    assert saved("ch11/curve")["summary"]["redisrs_manager_tcp_nodelay"]["text"] == "off"
    for pair in ("redisrs_nodelay", "fred_nodelay"):
        assert value(s, f"{pair}_gain_r0_c1") > 0.3, pair  # one by one on loopback: no write waits for an ACK
    assert value(s, "redis_rs_multiplexed_tcp_nodelay_on_r0_c1_cpr") < 1.1


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


def test_the_timeout_sweep_reads_as_the_first_failure_and_the_last_pass():
    facts = {"10000_outcome": "ok", "10000_ms": 12.0, "20000_outcome": "timed out", "20000_ms": 503.1,
             "first_failed": 20000, "last_passed": 10000, "manager_outcome": "timed out", "manager_ms": 501.0,
             "long_outcome": "ok", "long_ms": 900.0, "server_ran": 15000, "manager_first_failed": 20000}  # fmt: skip
    runs = {
        0.0: JavaRun("rust:timeout", {"facts": facts}),
        1.0: JavaRun("rust:timeout", {"facts": {"first_failed": 0}}),
    }
    s = ch11.timeout_summary(runs)
    assert (s["r0_first_failed"]["value"], s["r0_last_passed"]["value"]) == (20000, 10000)
    assert (
        s["r0_failed_ms"]["value"] == 503.1
        and s["r0_long_ok"]["value"] == 1
        and s["r0_manager_first_failed"]["value"] == 20000
    )
    assert s["r1_first_failed"]["value"] == 0 and "r1_long_ok" not in s, "nothing failed at 1 ms: no retry figures"
    table = ch11.timeout_table(runs)
    assert "| 0 ms | 10,000 | 20,000 | timed out | 503 ms | 20,000 | ok, 900 ms | 15,000 |" in table
    assert "| 1 ms | 0 | none |" in table
