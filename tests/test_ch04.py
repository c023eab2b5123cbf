"""Chapter 4: the direction of every pitfall, read from the results of the notebook's quick run."""

from __future__ import annotations

import pytest

from pipelab.chapters import ch04 as chapter
from pipelab.measure import Measurement
from pipelab.proxy import PROXY_NAME
from tests.conftest import document, saved, unavailable


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
        assert (
            by_mode["EVAL, pipelined"]["bytes_per_key"] > by_mode["SCRIPT LOAD + EVALSHA, pipelined"]["bytes_per_key"]
        )


def test_one_bad_command_leaves_the_others_applied(ch04):
    errors = saved("ch04/errors")
    rows = {(r["bad"], r["transaction"], r["raise_on_error"]): r for r in errors["params"]["rows"]}
    assert rows[("wrongtype", False, True)]["seen"].startswith("raises ResponseError")
    assert (
        "ResponseError" in rows[("wrongtype", False, False)]["seen"]
        and "raises" not in rows[("wrongtype", False, False)]["seen"]
    )
    assert all(r["later_ran"] for key, r in rows.items() if key[0] == "wrongtype"), "no rollback, no skipping"
    assert not rows[("arity", True, False)]["later_ran"], "EXECABORT: a queue-time error runs nothing"
    facts = errors["params"]["java_facts"]
    assert all(facts[f"{c}_later_commands_ran"] for c in ("jedis", "lettuce", "redisson", "spring")), facts


def test_go_and_node_clients_meet_the_same_bad_command(ch04):
    facts = saved("ch04/errors")["params"]["other_facts"]
    ran = {k: v for k, v in facts.items() if k.endswith("_later_commands_ran")}
    assert all(ran.values()), ran  # empty without Go and Node: those rows are then left out
    if "goredis_missing_key" in facts:
        assert "redis: nil" in facts["goredis_missing_key"], "Exec returns redis.Nil for a missing key"
    if "ioredis_error_surfaced" in facts:
        assert "resolved" in facts["ioredis_error_surfaced"], "ioredis's exec() does not reject"
        assert "rejected" in facts["noderedis_multi_error_surfaced"]


def test_go_and_node_retries_under_a_cut(ch04):
    doc = saved("ch04/drop")
    facts, n = doc["params"].get("other_facts", {}), doc["params"]["n"]
    if "goredis_drop_applied" in facts:
        assert facts["goredis_drop_applied"] > n, "go-redis sent the pipeline again"
        assert facts["goredis_noretry_drop_applied"] <= n
    if "noderedis_all_drop_applied" in facts:
        assert facts["noderedis_all_drop_applied"] <= n, "node-redis resends nothing it wrote"
        assert facts["ioredis_drop_applied"] > n, "ioredis resent the unanswered commands"


def test_ioredis_aborts_a_pipeline_cut_after_its_first_replies(ch04):
    doc = saved("ch04/drop")
    facts, n = doc["params"].get("other_facts", {}), doc["params"]["n"]
    if "ioredis_partial_drop_applied" not in facts:
        unavailable("no Node or no toxiproxy in this run")
    ok, failed = facts["ioredis_partial_drop_replies_ok"], facts["ioredis_partial_drop_replies_failed"]
    assert 0 < ok < n and ok + failed == n, facts
    assert "aborted" in facts["ioredis_partial_drop_outcome"], "the rest is rejected, not resent"
    # Nothing sent again: at most once each, and at least what was answered.
    assert ok <= facts["ioredis_partial_drop_applied"] <= n, facts
    assert facts["ioredis_drop_applied"] > n, "cut before any reply, the whole pipeline went again"


def test_go_redis_resends_a_pipeline_whose_first_reply_is_retryable(ch04):
    facts = saved("ch04/errors")["params"]["other_facts"]
    if "tryagain_n" not in facts:
        unavailable("no Go in this run")
    n = facts["tryagain_n"]
    applied = facts["tryagain_goredis_applied"]
    assert applied >= 2 * n and applied % n == 0, f"the whole pipeline ran again: {applied} of {n}"
    assert "TRYAGAIN" in facts["tryagain_goredis_outcome"], "Exec still returns the error"
    for way in ("goredis_noretry", "goredis_last", "goredis_tx", "rueidis"):
        assert facts[f"tryagain_{way}_applied"] == n, (way, facts[f"tryagain_{way}_applied"])


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
    assert 0 < scenarios["SET (idempotent), cut, no retry"]["applied"] < n
    assert scenarios["SET (idempotent), blind retry"]["applied"] == n, "a blind retry of SETs leaves one run's state"


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


def test_a_java_timeout_is_not_a_failure_of_the_work(ch04):
    doc = saved("ch04/timeouts")
    f, size = doc["params"]["java_facts"], doc["summary"]["java_n"]["value"]
    assert f["redisson_timeout_no_retry_outcome"].startswith("RedisResponseTimeoutException"), f
    assert f["redisson_timeout_no_retry_applied"] > 0, "the server applied the batch the client gave up on"
    assert f["redisson_timeout_no_retry_set_calls"] == size, f
    # With Redisson's default retries the same batch may come back in time (then it ran once); each
    # time it does not, Redisson writes it again, so a final timeout means every attempt ran it.
    retried_calls, outcome = f["redisson_timeout_default_retry_set_calls"], f["redisson_timeout_default_retry_outcome"]
    if outcome.startswith("RedisResponseTimeoutException"):
        # Four whole attempts, and the last one as far as it got when Redisson gave up on it: nothing
        # at all, once, on a slowed host (800,000 SETs for a batch of 200,000).
        assert 4 * size <= retried_calls <= 5 * size, (
            f"4 retries after the first attempt, each re-sending the batch: {f}"
        )
    else:
        assert retried_calls >= size, f


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


def lrem_rows():
    rows = []
    for length, lrem_us in ((1_000, 30.0), (100_000, 3_000.0)):
        for way, usec in (("lrem", lrem_us), ("ltrim", 0.2)):
            rows.append(
                {
                    "way": way,
                    "length": length,
                    "median_s": usec * chapter.P / 1e6 + 1e-4,
                    "usec_per_call": usec,
                    "server_cpu_pct": 90.0 if way == "lrem" else 20.0,
                    "observed_wall_s": 0.1,
                    "probe_worst_ms": usec / 10,
                    "probe_median_ms": 0.1,
                    "slowlog": 100 if usec > 1_000 else 0,
                    "slowlog_max_us": usec,
                }
            )
    return rows


def test_lrem_grows_as_a_power_of_the_length_fitted_over_every_length_not_the_two_ends():
    """A smallest list that read 15 µs for 20 µs makes the ends 133x apart for 100x the list; the
    slope over all three lengths still reads close to O(N)."""
    rows = [
        dict(row, usec_per_call=usec)
        for row, usec in zip(lrem_rows() + lrem_rows()[:2], (15.0, 0.2, 2_000.0, 0.2, 200.0, 0.2), strict=True)
    ]
    for row, length in zip(rows[4:], (10_000, 10_000), strict=True):
        row["length"] = length
    runs = [Measurement(f"{x['way']} {x['length']}", chapter.P, [x["median_s"]], dict(x)) for x in rows]
    s = chapter.lrem_summary(runs, rows, 1_000, {})
    assert s["lrem_growth"]["value"] == pytest.approx(2_000 / 15) and s["length_growth"]["value"] == 100
    assert 0.9 < s["lrem_exponent"]["value"] < 1.1 and s["lrem_exponent"]["text"] == "1.06"


def test_the_lrem_summary_table_and_plot_compare_the_smallest_and_largest_lists(tmp_path):
    rows = lrem_rows()
    runs = [
        Measurement(f"{x['way']} {x['length']}", chapter.P, [x["median_s"] * f for f in (0.9, 1.0, 1.1)], dict(x))
        for x in rows
    ]
    s = chapter.lrem_summary(runs, rows, 1_000, {"lrem_usec_per_call_100000": 2_900.0})
    lrem_ms, ltrim_ms = (x["median_s"] * 1e3 for x in rows[-2:])
    assert s["lrem_over_ltrim_largest"]["value"] == pytest.approx(lrem_ms / ltrim_ms)
    assert s["lrem_pipeline_largest_ms"]["interval"][0] < lrem_ms < s["lrem_pipeline_largest_ms"]["interval"][1]
    assert s["lrem_growth"]["value"] == pytest.approx(100) and s["ltrim_growth"]["value"] == pytest.approx(1)
    assert s["length_growth"]["value"] == 100 and s["slowlog_lrem_largest"]["value"] == 100
    assert s["lrem_exponent"]["value"] == pytest.approx(1), "100x the time for 100x the list"
    assert s["java_lrem_usec_largest"]["value"] == 2_900.0 and s["java_ltrim_usec_largest"]["value"] is None
    assert "| LREM | 100,000 |" in chapter.lrem_table(rows, 1_000)
    doc = document(
        tmp_path,
        "ch04/lrem",
        params={"rows": rows, "java_facts": {"lrem_usec_per_call_100000": 2_900.0}, "p": chapter.P},
    )
    lrem_redispy, lrem_jedis, *_ = chapter.lrem_plot(doc).axes[0].get_lines()
    assert list(lrem_redispy.get_ydata()) == [30.0, 3_000.0] and list(lrem_jedis.get_ydata())[1] == 2_900.0


def test_the_rcw_summary_reads_each_mode_at_each_rtt():
    modes = list(chapter.RCW_MODES)
    rows = [
        {
            "mode": mode,
            "rtt_ms": rtt,
            "n": 10,
            "median_s": 0.1,
            "us_per_key": us * (1 + 10 * rtt),
            "bytes_per_key": 100.0 - i,
        }
        for rtt in (0, 1)
        for i, (mode, us) in enumerate(zip(modes, (300, 280, 200, 20, 15)))
    ]
    s = chapter.rcw_summary(rows)
    assert s["evalsha_speedup"]["value"] == pytest.approx(20) and s["evalsha_us_rtt"]["value"] == pytest.approx(165)
    assert s["evalsha_bytes"]["value"] == 96.0


def test_the_error_and_drop_summaries_count_what_ran():
    rows = [
        {
            "bad": bad,
            "transaction": tx,
            "raise_on_error": roe,
            "seen": "raises ResponseError: WRONGTYPE",
            "later_ran": not (bad == "arity" and tx),
        }
        for bad in ("wrongtype", "arity")
        for tx in (False, True)
        for roe in (True, False)
    ]
    facts = {"jedis_later_commands_ran": True, "lettuce_later_commands_ran": True, "jedis_results": "OK | x"}
    s = chapter.errors_summary(rows, facts)
    assert s["later_ran_everywhere"]["value"] == 3 and s["clients_checked"]["value"] == 3
    assert s["redispy_arity_multi_later_ran"]["text"] == "no" and s["jedis_results"]["text"] == "OK | x"
    drop = {
        "cut, no retry": {"outcome": "ConnectionError", "applied": 500, "connections": 1},
        "blind retry": {"outcome": "returned", "applied": 2_500, "connections": 0},
    }
    d = chapter.drop_summary(drop, 2_000, None)
    assert d["cut_share"]["value"] == 25 and d["blind_retry_applied"]["value"] == 2_500
    assert d["library_retry_outcome"]["text"] == "–" and d["jedis_cut_applied"]["value"] is None
    assert "| cut, no retry | ConnectionError | 500 | 0.25 | 1 |" in chapter.drop_table(drop, 2_000)


def test_the_blocking_summary_takes_the_longest_timeout_of_each_mode():
    rows = [
        {
            "transaction": tx,
            "timeout_s": t,
            "elapsed_ms": t * 1e3 + 1,
            "before_ms": t * 1e3,
            "after_ms": t * 1e3,
            "blpop_reply": "None",
        }
        for tx in (False, True)
        for t in (0.1, 0.2)
    ]
    s = chapter.blocking_summary(rows)
    assert s["timeout_ms"]["value"] == pytest.approx(200) and s["pipeline_ms"]["value"] == pytest.approx(201)
