"""Chapter 8: the traps that client defaults and connection state set, read from the results of the
notebook's quick run: each trap shows its consequence, and its fix removes it."""

from __future__ import annotations

import pytest

from pipelab.chapters import ch08 as chapter
from tests.conftest import saved


@pytest.fixture(scope="module")
def ch08(executed_notebooks):
    return executed_notebooks["08"]


def params(name: str) -> dict:
    return saved(name)["params"]


def test_a_stall_past_redis_pys_default_timeout_runs_the_pipeline_again_unless_retries_are_off(ch08):
    stalled = params("ch08/retries")["stalled"]
    defaults, off = stalled["defaults"], stalled["retries off"]
    assert chapter.SILENCE_S > chapter.DEFAULT_TIMEOUT_S
    assert defaults["runs"] >= 2 and defaults["outcome"] == "returned", defaults
    assert off["runs"] == 1 and off["outcome"] == "TimeoutError", off
    assert off["elapsed_s"] >= chapter.DEFAULT_TIMEOUT_S * 0.9, "the default timeout is what ended the wait"
    marker = stalled["retries off, marker in MULTI/EXEC"]
    assert marker["runs"] == 1 and marker["outcome"] == "returned", marker
    assert stalled["WATCH, Redis.transaction()"]["runs"] >= 2, "transaction() runs the function again on WatchError"


def test_every_default_retry_is_spent_when_every_attempt_times_out(ch08):
    blocked = params("ch08/retries")["blocked"]
    for client in ("default retries", "redis.asyncio, default retries"):
        assert blocked[client]["runs"] == chapter.DEFAULT_RETRIES + 1, (client, blocked[client])
        assert blocked[client]["outcome"] == "TimeoutError"
    for client in ("retries off", "redis.asyncio, retries off"):
        assert blocked[client]["runs"] == 1, (client, blocked[client])


def test_the_summary_reads_runs_from_counters():
    stalled = {
        name: {"runs": 2.0, "outcome": "returned", "elapsed_s": 5.5}
        for name in ("defaults", "retries off", "retries off, marker in MULTI/EXEC", "WATCH, Redis.transaction()")
    }
    blocked = {
        name: {"runs": 11.0, "outcome": "TimeoutError", "elapsed_s": 8.0}
        for name in ("default retries", "retries off", "redis.asyncio, default retries", "redis.asyncio, retries off")
    }
    summary = chapter.retries_summary(stalled, blocked, 100)
    assert summary["stall_defaults_runs"]["text"] == "2" and summary["block_async_runs"]["text"] == "11"
    assert summary["block_off_outcome"]["text"] == "TimeoutError"
    assert summary["default_worst_s"]["value"] == 55
    table = chapter.retries_table(stalled, blocked, 100)
    assert table.count("\n") == 2 + len(stalled) + len(blocked) - 1


def facts(name: str) -> dict:
    return params(name)


def test_lettuce_heap_grows_with_queued_commands_and_a_bounded_queue_refuses(ch08):
    f, summary = facts("ch08/lettuce"), saved("ch08/lettuce")["summary"]
    heaps = [summary[f"queue{i}_mb"]["value"] for i in (1, 2, 3)]
    sizes = [summary[f"queue{i}_n"]["value"] for i in (1, 2, 3)]
    assert 0 < heaps[0] < heaps[1] < heaps[2], (sizes, heaps)
    per_command = [mb / n for mb, n in zip(heaps, sizes)]
    assert max(per_command) < 1.5 * min(per_command), ("a queued command costs the same at any depth", sizes, heaps)
    assert f["default_request_queue_size"] == 2**31 - 1
    assert f["bounded_accepted"] == f["bounded_request_queue_size"] < f["bounded_offered"]
    assert f["bounded_refused"] == f["bounded_offered"] - f["bounded_accepted"]
    assert "exceeded" in f["bounded_error"] and 0 < f["bounded_heap_mb"] < heaps[2] / 3
    assert f["bounded_server_sets"] == f["bounded_accepted"], "what was refused never reached the server"


def test_lettuce_replays_in_flight_commands_whatever_the_replay_filter(ch08):
    f = facts("ch08/lettuce")
    if "replay_skipped" in f:
        pytest.skip(f["replay_skipped"])
    assert f["replay_default_duplicates"] > 0 and f["replay_replay_filter_duplicates"] > 0
    for fixed in ("no_reconnect", "reject"):
        assert f[f"replay_{fixed}_duplicates"] == 0, fixed
        assert f[f"replay_{fixed}_futures_failed"] == f["replay_incrs"], fixed
        assert f[f"replay_{fixed}_applied_first"] > 0, "a failed future is no proof the command did not run"


def test_lettuce_shared_connection_state_and_auto_flush_left_off(ch08):
    f = facts("ch08/lettuce")
    assert f["multi_shared_b_returned"] == "null" and f["multi_shared_b_applied"] is False
    assert f["multi_exec_b_applied"] is True and f["multi_dedicated_b_applied"] is True
    assert f["blpop_shared_get_ms"] > 10 * f["blpop_dedicated_get_ms"]
    assert f["pool_b2_outcome"].startswith("RedisCommandTimeoutException"), f["pool_b2_outcome"]
    assert f["pool_b2_ms"] >= 900 * f["pool_command_timeout_s"] and f["pool_b1_applied_when_b2_failed"] == 0
    assert f["pool_fixed_b2_value"] == "10" and f["pool_fixed_b2_ms"] < f["pool_b2_ms"] / 10
    assert f["sync_off_outcome"].startswith("RedisCommandTimeoutException") and f["sync_fixed_value"] == "x"


def test_a_pooled_jedis_connection_left_with_an_unsynced_pipeline_fails_the_next_borrower(ch08):
    f = facts("ch08/jedis")
    assert f["poison_b2_correct"] is False and f["poison_replies_behind"] == f["poison_b1_applied"] > 0
    assert f["poison_b2_key_value"] == "borrower-2", "the server is right; only the replies are off"
    assert f["pool_fix_b2_correct"] is True and f["pool_fix_replies_behind"] == 0
    assert f["jedispool_b2_correct"] is True, "the legacy JedisPool syncs on return"
    assert "Could not get a resource" in f["leak_b2_set"]


def test_an_unsynced_jedis_pipeline_has_sent_all_but_what_its_output_buffer_holds(ch08):
    f, summary = facts("ch08/jedis"), saved("ch08/jedis")["summary"]
    n, buffer = summary["n"]["value"], f["output_buffer_bytes"]
    assert buffer == 8192, "Jedis's RedisOutputStream default"
    for case in chapter.JEDIS_LEFT_BEHIND:
        unrun, set_bytes = summary[f"{case}_b1_unrun"]["value"], f[f"{case}_set_bytes"]
        # Flushed whenever the buffer filled: what did not run is the buffer's content, plus at most
        # one SET cut at its edge. More would mean nothing was flushed; none, that sync() ran.
        assert 0 < unrun and (unrun - 1) * set_bytes < buffer, (case, unrun, set_bytes)
        assert unrun * set_bytes < n * set_bytes / 2, (case, "most of the pipeline was sent before any sync")
    assert f["leak_b1_applied_after_close"] == n and f["poison_b1_applied"] == n


def test_the_jedis_summary_counts_the_sets_left_unrun():
    run = FakeRun(
        {
            "leak_b1_applied_while_lost": 897,
            "leak_set_bytes": 64,
            "poison_b1_applied_before_b2": 993,
            "poison_set_bytes": 66,
        },
        size=1000,
    )
    summary = chapter.jedis_summary(run)
    assert summary["leak_b1_unrun"]["value"] == 103 and summary["leak_b1_unrun_bytes"]["text"] == "6,592 bytes"
    assert summary["poison_b1_unrun_bytes"]["value"] == 7 * 66


def test_redis_py_8_does_not_fall_back_when_a_server_refuses_hello(ch08):
    cases = params("ch08/hello")
    for default in ("defaults", "async_defaults"):
        assert not cases[default]["connected"], cases[default]
        assert cases[default]["outcome"].startswith("ResponseError") and "HELLO" in cases[default]["outcome"]
    assert cases["resp2"]["connected"], cases["resp2"]
    assert saved("ch08/hello")["summary"]["default_protocol"]["value"] == 3


def test_a_cluster_pipeline_swallows_one_nodes_failure_and_resending_fixes_it(ch08):
    f, n = facts("ch08/jedis"), saved("ch08/jedis")["summary"]["n"]["value"]
    assert f["cluster_sync_threw"] == "nothing" and f["cluster_responses_empty"] == f["cluster_victim_sent"] > 0
    assert f["cluster_responses_ok"] + f["cluster_responses_empty"] == n
    assert "Please close pipeline" in f["cluster_response_error"] and "Error with connection" in f["cluster_logged"]
    assert f["cluster_fix_unanswered"] == 0 and f["cluster_fix_applied"] == n
    assert f["threads_per_pipeline_sync_then_close"] == 2 * f["sync_workers"]
    assert f["threads_per_pipeline_shared_pool"] == 0 == f["threads_per_pipeline_one_node"]


def test_redisson_resends_a_timed_out_batch_and_the_idempotent_write_absorbs_it(ch08):
    f = facts("ch08/redisson")
    n = f["stall_batch_incrs"]
    for mode in ("in_memory", "in_memory_atomic"):
        assert f[f"stall_{mode}_outcome"] == "ok" and f[f"stall_{mode}_counters_twice"] == n, mode
    assert f["fix_no_retry_incr_calls"] == n and f["fix_no_retry_outcome"].startswith("RedisResponseTimeout")
    assert f["fix_idempotent_outcome"] == "ok" and f["fix_idempotent_counters_twice"] == 0
    assert f["fix_idempotent_server_attempts"] >= 2, "the retry still ran; it changed nothing"
    assert f["small_batches_counters_twice"] == 0


def test_redisson_sync_needs_a_replica(ch08):
    f = facts("ch08/redisson")
    assert f["sync1_main_synced_slaves"] == 0 and f["sync1_main_outcome"] == "ok", "no error, nothing replicated"
    assert f["sync1_main_elapsed_ms"] >= 0.9 * f["sync_timeout_ms"]
    assert f["sync1_replicated_synced_slaves"] == 1 and f["sync1_replicated_elapsed_ms"] < f["sync_timeout_ms"] / 2
    assert "appendonly" in f["syncaof_1_1_main_outcome"] and f["syncaof_1_1_main_incr_calls"] == f["sync_batch_incrs"]


def test_a_spring_callback_that_calls_the_template_escapes_the_pipeline(ch08):
    f, n = facts("ch08/spring"), saved("ch08/spring")["summary"]["n"]["value"]
    assert f["escape_results"] == 0 and f["escape_sets_per_call"] == n
    assert f["escape_reads_per_call"] >= n, "one read per SET: no pipeline"
    # The fix pipelines: it waits for no reply in between, so it is faster (the prose's claim). Its server
    # reads are no evidence: Lettuce flushes every command, and how many SETs one read finds depends on how
    # soon the server reads (0.65 and 0.97 reads per SET in two quick runs, 0.62 in the reference). A
    # stalled machine only adds time to a round, and so does cold code, so each mode's fastest round,
    # warm-up included, is its cost: 4.8x apart in the reference, 2.7x in a quick run whose medians were
    # 1.2x apart (one of its two connection rounds took 514 ms, the other 144 ms). On a slowed host both
    # timed connection rounds of a quick run took 0.63-0.66 s, slower than its warm-up (0.26 s).
    fastest = {m.label: min(m.samples + m.warmup) for m in saved("ch08/spring")["measurements"]}
    assert f["connection_results"] == n and fastest["escape"] > 1.5 * fastest["connection"], fastest
    assert f["session_outer_results"] == n, "a SessionCallback binds the connection"


class FakeRun:
    def __init__(self, facts: dict, size: int = 10):
        self.facts, self.data, self.alias = facts, {"size": size, "modes": {}}, "fake"

    def measurements(self):
        return {}


def test_facts_become_figures_with_their_units():
    run = FakeRun(
        {
            "a_ms": 25,
            "b_ms": 1.5,
            "flag": True,
            "text": "OK",
            "c_s": 1,
            "d_mb": 4.25,
            "queued_500_heap_mb": 2.0,
            "queued_100_heap_mb": 1.0,
            "queued_1000_heap_mb": 3.5,
        }
    )
    summary = chapter.lettuce_summary(run)
    assert summary["a_ms"]["text"] == "25 ms" and summary["b_ms"]["text"] == "1.50 ms"
    assert summary["flag"]["text"] == "yes" and summary["text"]["text"] == "OK" and summary["c_s"]["text"] == "1 s"
    assert summary["d_mb"]["text"] == "4.25"
    assert [summary[f"queue{i}_n"]["value"] for i in (1, 2, 3)] == [100, 500, 1000]
    assert summary["queue3_mb"]["text"] == "3.5"
