"""Chapter 4: the direction of every pitfall, read from the results of the notebook's quick run."""
from __future__ import annotations

import pytest

from pipelab.chapters import ch04 as chapter
from pipelab.proxy import PROXY_NAME
from tests.conftest import saved, unavailable


@pytest.fixture(scope="module")
def ch04(executed_notebooks):
    return executed_notebooks["04"]


def test_lrem_grows_with_the_list_while_ltrim_stays_flat(ch04):
    lrem = saved("ch04/lrem")
    rows = {(r["way"], r["length"]): r for r in lrem["params"]["rows"]}
    small, large = min(lrem["params"]["lengths"]), max(lrem["params"]["lengths"])
    assert large >= 100 * small
    lrem_small, lrem_large = rows[("lrem", small)]["usec_per_call"], rows[("lrem", large)]["usec_per_call"]
    ltrim_small, ltrim_large = rows[("ltrim", small)]["usec_per_call"], rows[("ltrim", large)]["usec_per_call"]
    assert lrem_large >= 10 * lrem_small, (lrem_small, lrem_large)
    assert ltrim_large <= 3 * ltrim_small + 1, (ltrim_small, ltrim_large)  # whole microseconds per call
    # What others feel: the second client's worst wait under the LREM pipeline exceeds LTRIM's.
    assert rows[("lrem", large)]["probe_worst_ms"] > rows[("ltrim", large)]["probe_worst_ms"]
    assert rows[("lrem", large)]["median_s"] > 10 * rows[("ltrim", large)]["median_s"]


def test_another_client_interleaves_with_a_pipeline_but_not_with_multi_exec(ch04):
    inside = saved("ch04/interleave")["params"]["inside"]
    assert any(count > 0 for count in inside["False"]), f"never interleaved: {inside}"
    assert all(count == 0 for count in inside["True"]), f"entries inside a transaction: {inside}"
    wire = saved("ch04/interleave")["params"]["transaction_wire"]
    assert wire.get("multi") == 1 and wire.get("exec") == 1


def test_a_pipelined_script_beats_read_compute_write_round_trips(ch04):
    rows = saved("ch04/rcw")["params"]["rows"]
    for rtt in {r["rtt_ms"] for r in rows}:
        by_mode = {r["mode"]: r for r in rows if r["rtt_ms"] == rtt}
        round_trips = by_mode["round trips (GET, then SET)"]["median_s"]
        assert by_mode["SCRIPT LOAD + EVALSHA, pipelined"]["median_s"] < round_trips, rtt
        # EVAL carries the script's text on every call, EVALSHA only a digest.
        assert by_mode["EVAL, pipelined"]["bytes_per_key"] > by_mode["SCRIPT LOAD + EVALSHA, pipelined"]["bytes_per_key"]


def test_one_bad_command_leaves_the_others_applied(ch04):
    errors = saved("ch04/errors")
    rows = {(r["bad"], r["transaction"], r["raise_on_error"]): r for r in errors["params"]["rows"]}
    assert rows[("wrongtype", False, True)]["seen"].startswith("raises ResponseError")
    assert "ResponseError" in rows[("wrongtype", False, False)]["seen"] and "raises" not in rows[("wrongtype", False, False)]["seen"]
    assert all(r["later_ran"] for key, r in rows.items() if key[0] == "wrongtype"), "no rollback, no skipping"
    assert not rows[("arity", True, False)]["later_ran"], "EXECABORT: a queue-time error runs nothing"
    facts = errors["params"]["java_facts"]
    assert all(facts[f"{c}_later_commands_ran"] for c in ("jedis", "lettuce", "redisson", "spring")), facts


def test_a_dropped_pipeline_applied_part_of_its_commands(ch04, session):
    drop = saved("ch04/drop")
    scenarios, n = drop["params"]["scenarios"], drop["params"]["n"]
    if not scenarios:
        unavailable("no toxiproxy in this run: " + session.proxy_note)
    cut = scenarios["cut, no retry"]
    assert cut["outcome"] == "ConnectionError"
    assert 0 < cut["applied"] < n, cut
    assert scenarios["blind retry"]["applied"] == cut["applied"] + n, "the blind retry applied the first part twice"
    assert scenarios["redis-py's own retry, blip"]["applied"] > n, scenarios
    assert scenarios["MULTI/EXEC, no retry"]["applied"] == 0
    assert scenarios["MULTI/EXEC, then retry"]["applied"] == n
    assert scenarios["replies lost, MULTI/EXEC, redis-py's own retry, blip"]["applied"] >= 2 * n
    assert scenarios["replies lost, MULTI/EXEC + marker, blip"]["applied"] == n


def test_blpop_holds_back_everything_behind_it(ch04):
    rows = saved("ch04/blocking")["params"]["rows"]
    for row in rows:
        if row["transaction"]:
            assert row["elapsed_ms"] < 0.5 * row["timeout_s"] * 1e3, row  # no blocking inside MULTI
        else:
            assert row["after_ms"] >= 0.8 * row["timeout_s"] * 1e3, row  # the SET after waited for BLPOP
            assert row["before_ms"] < 0.5 * row["timeout_s"] * 1e3, row
            assert row["elapsed_ms"] >= 0.9 * row["timeout_s"] * 1e3, row


def test_a_per_read_timeout_trips_on_silence_and_batches_fix_it(ch04):
    fast, once, retried, batched = saved("ch04/timeouts")["params"]["rows"]
    assert fast["outcome"] == "ok" and fast["head_ran"] == 1, fast
    assert once["outcome"] == "TimeoutError" and once["head_ran"] == 1, once
    assert retried["head_ran"] > 1, f"redis-py's retry re-sent the pipeline: {retried}"
    assert batched["outcome"] == "ok" and batched["head_ran"] == batched["runs_expected"], batched


def test_faults_are_lifted_when_the_block_ends(rtt_lab):
    with rtt_lab.faults() as faults:
        faults.add(("cut", "reset_peer", "downstream", {"timeout": 50}))
        assert [t["name"] for t in rtt_lab.toxiproxy._call("GET", f"/proxies/{PROXY_NAME}/toxics")] == ["cut"]
    assert rtt_lab.toxiproxy._call("GET", f"/proxies/{PROXY_NAME}/toxics") == []


def test_slowlog_threshold_is_put_back_and_left_alone_on_a_foreign_server(lab):
    with lab.client() as client:
        before = client.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"]
        with chapter.slowlog_threshold(client, 123, allowed=True) as used:
            assert used == 123
            assert client.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"] == "123"
        assert client.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"] == before
        with chapter.slowlog_threshold(client, 123, allowed=False) as used:
            assert str(used) == before
            assert client.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"] == before


def test_java_clients_under_the_same_cut(ch04, session):
    drop = saved("ch04/drop")
    facts, n = drop["params"]["java_facts"], drop["params"]["n"]
    if not facts:
        unavailable("no toxiproxy in this run: " + session.proxy_note)
    assert 0 < facts["pipeline_applied"] < n, facts
    assert facts["pipeline_replies_received"] == 0
    assert facts["blind_retry_counter"] == facts["pipeline_applied"] + n
    assert facts["transaction_applied"] == 0 and facts["transaction_retry_counter"] == n
    # Lettuce re-sends what got no reply: the futures look fine, the counter says otherwise.
    assert facts["lettuce_duplicates"] > 0 and facts["lettuce_counter"] > n, facts
