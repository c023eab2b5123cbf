"""Chapter 9: bulk work, read from the results of the notebook's quick run (directions, with tolerant
bounds), plus the summary and table functions on made-up inputs, and redis-cli's summary line."""

from __future__ import annotations

import pytest

from pipelab.chapters import ch09 as chapter
from pipelab.chapters.ch09.delete import DeleteRun
from pipelab.chapters.ch09.load import CLI, ONE_PIPELINE, LoadRun
from pipelab.measure import Measurement
from tests.conftest import saved


@pytest.fixture(scope="module")
def ch09(executed_notebooks):
    return executed_notebooks["09"]


def summary(name: str) -> dict:
    return saved(name)["summary"]


def value(name: str, key: str):
    return summary(name)[key]["value"]


def test_batches_bound_what_the_client_holds_where_one_pipeline_does_not(ch09):
    # The server reads a pipeline 16 KB at a time and a SET's reply is 5 bytes: its buffers stay
    # small either way (CLIENT LIST); the client's own memory grows with what it sends at once.
    one = value("ch09/load", "one_pipeline_client_peak")
    batch = value("ch09/load", "pipeline_1k_per_batch_client_peak")
    assert one > 5 * batch, (one, batch)
    assert value("ch09/load", "pipeline_10k_per_batch_client_peak") < one


def test_redis_cli_pipe_reports_the_injected_errors_and_the_load_still_lands(ch09):
    s = summary("ch09/load")
    if "cli_errors" not in s:
        pytest.skip("redis-cli is not installed")
    n, bad = s["n"]["value"], s["bad_injected"]["value"]
    assert s["cli_errors"]["value"] == bad and s["cli_error_lines"]["value"] == bad
    assert s["cli_replies"]["value"] == n + bad
    assert s["cli_exit_code"]["value"] == 1
    assert s["cli_stored"]["value"] == n


def test_redis_py_raises_the_first_error_only_after_running_everything(ch09):
    s = summary("ch09/load")
    n, bad = s["n"]["value"], s["bad_injected"]["value"]
    assert s["py_raised"]["value"] == 1 and s["py_raise_stored"]["value"] == n
    assert s["py_errors_in_replies"]["value"] == bad and s["py_list_stored"]["value"] == n


def test_the_lua_delete_blocks_the_probe_longer_than_scan_and_unlink(ch09):
    s = summary("ch09/delete")
    assert s["lua_worst_ms"]["value"] > 2 * s["scan1000_unlink_worst_ms"]["value"], (
        s["lua_worst_ms"],
        s["scan1000_unlink_worst_ms"],
    )


def test_no_kept_key_is_touched_by_any_job(ch09):
    s = summary("ch09/delete")
    assert s["kept_min"]["value"] == s["n_kept"]["value"]
    c = summary("ch09/cluster")
    assert c["kept_after"]["value"] == c["n_kept"]["value"]
    assert c["min_per_node"]["value"] > 0, "every master held some of the pattern's keys"


def test_unlink_hands_big_hashes_to_the_background_and_del_does_not(ch09):
    s = summary("ch09/delete")
    assert s["scan1000_unlink_lazyfreed"]["value"] > 0
    assert s["scan1000_del_lazyfreed"]["value"] == 0
    assert s["scan1000_unlink_lazyfreed"]["value"] <= s["big_keys"]["value"], "only the hashes pass the threshold"


def test_on_valkey_del_and_expiry_free_big_hashes_in_the_background_too(ch09):
    s = summary("ch09/valkey")
    if "del_lazyfreed" not in s:
        pytest.skip("Valkey is not installed here")
    assert s["valkey_lazy_on"]["value"] == s["settings"]["value"], "Valkey 8.0 and later: every lazy-free setting on"
    big = s["big_keys"]["value"]
    for job in ("del", "unlink", "expire"):
        # Only the big hashes pass the lazy-free threshold; strings and short lists are freed at once.
        assert 0 < s[f"{job}_lazyfreed"]["value"] <= big, (job, s[f"{job}_lazyfreed"], big)
    assert s["kept_min"]["value"] == s["n_kept"]["value"]
    if s["lab_server"]["text"].startswith("Redis"):
        assert s["lab_lazy_user_del"]["text"] == "no" and s["lab_lazy_expire"]["text"] == "no"
        assert value("ch09/delete", "expire_lazyfreed") == 0, "Redis frees expired keys in the main thread"


def test_redis_cli_on_a_file_with_lf_line_ends_reports_an_error_and_runs_nothing(ch09):
    s = summary("ch09/load")
    if "lf_exit_code" not in s:
        pytest.skip("redis-cli is not installed")
    assert s["lf_exit_code"]["value"] != 0 and s["lf_stored"]["value"] == 0
    assert "Protocol error" in s["lf_stderr"]["text"], s["lf_stderr"]
    assert s["lf_summary_lines"]["value"] == 0, "the read fails before the summary line"
    assert "Waiting for the last reply" in s["lf_stdout"]["text"], "the file was sent whole, then the ECHO"


# --- on made-up inputs ------------------------------------------------------------------------


def test_parse_cli_summary_reads_the_last_summary_line():
    out = "All data transferred. Waiting for the last reply...\nLast reply received from server.\nerrors: 3, replies: 1003\n"
    assert chapter.parse_cli_summary(out) == (3, 1003)
    assert chapter.parse_cli_summary("no summary here") is None


def test_bad_commands_spread_over_the_load_and_refused_by_kind():
    bad = chapter.bad_commands(3, 1000)
    assert len(bad) == 3 and all(0 < i < 1000 for i in bad)
    assert [argv[0] for argv in bad.values()] == ["INCR", "LPUSH", "NOSUCHCOMMAND"]


def _watched(**over) -> dict:
    return {"peak_qbuf_bytes": [10], "peak_omem_bytes": [0], "peak_tot_mem_bytes": [100]} | {
        "rss_growth_bytes": [1 << 20],
        "probe_p99_ms": [0.5],
        **over,
    }


def test_load_summary_and_table_from_made_up_runs():
    run = LoadRun(1000, 100)
    for label, seconds in ((CLI, 0.01), ("pipeline, 1k per batch", 0.05), (ONE_PIPELINE, 0.1)):
        run.measurements[label] = Measurement(label, 1000, [seconds], params=_watched(), paired_with="g")
    run.client_peak = {"pipeline, 1k per batch": 1000, ONE_PIPELINE: 8000}
    bad = {
        "n": 1000,
        "bad": 3,
        CLI: {"summary": (3, 1003), "exit_code": 1, "error_lines": ["a", "b", "c"], "stored": 1000, "summary_line": ""},
        "redis-py raise_on_error=True": {"raised": "ResponseError: x", "errors_in_replies": None, "stored": 1000},
        "redis-py raise_on_error=False": {"raised": None, "errors_in_replies": 3, "first": "x", "stored": 1000},
    }
    lf = {"commands": 3, "exit_code": 1, "summary": None, "stdout": ["sent"], "stderr": ["ERR x", "y"], "stored": 0}
    s = chapter.load_summary(run, bad, lf)
    assert s["lf_stderr"]["text"] == "ERR x / y" and s["lf_summary_lines"]["value"] == 0
    assert "lf_exit_code" not in chapter.load_summary(run, bad), "no redis-cli, no LF figures"
    assert s["one_vs_batch_client_peak"]["value"] == 8.0
    assert s["one_vs_batch_time"]["value"] == pytest.approx(2.0)
    assert s["cli_vs_batch_time"]["value"] == pytest.approx(5.0)
    assert s["cli_rate"]["value"] == pytest.approx(100_000)
    assert s["cli_errors"]["value"] == 3 and s["py_errors_in_replies"]["value"] == 3
    table = chapter.load_table(run)
    assert "(another process)" in table and table.count("\n") == 1 + len(run.measurements)
    assert "raises" in chapter.bad_table(bad)


def test_delete_summary_compares_lua_with_scan_and_takes_the_fewest_kept():
    run = DeleteRun(100, 50)
    labels = chapter.delete.delete_means(None, (100, 1000), *[None] * 4)  # the labels; no job runs
    for label in labels:
        run.measurements[label] = Measurement(label, 100, [0.1], paired_with="g")
        worst = 40.0 if label.startswith("Lua") else 4.0
        run.watches[label] = {"probe_worst_ms": worst, "probe_p99_ms": 1.0, "lazyfree_peak": 0, "lazyfreed": 0}
        run.kept[label] = 50
    run.kept["SCAN 100 + pipelined DEL"] = 49
    run.reclaim_s = {next(label for label in labels if "EXPIRE" in label): 1.5}
    s = chapter.delete_summary(run)
    assert s["lua_vs_scan_worst"]["value"] == pytest.approx(10.0)
    assert s["kept_min"]["value"] == 49
    assert s["expire_reclaim_s"]["value"] == 1.5
    assert {"scan100_unlink_s", "scan1000_del_s", "variadic_s", "lua_s", "expire_s"} <= set(s)
    assert "49 of 50" in chapter.delete_table(run)


def test_cluster_summary_counts_keys_per_master():
    report = {"n_doomed": 9, "n_kept": 3, "count": 1000, "s": 0.5, "per_node": {"a": 2, "b": 3, "c": 4}, "kept": 3}
    s = chapter.cluster_summary(report)
    assert (s["min_per_node"]["value"], s["max_per_node"]["value"], s["masters"]["value"]) == (2, 4, 3)
    assert s["rate"]["value"] == 18
    assert "9 in 0.500 s" in chapter.cluster_table(report)


def test_the_watch_summarizes_peaks_growth_and_the_probe():
    from pipelab.chapters.ch09.instruments import summarize

    first = {"used_memory": 1000, "used_memory_rss": 5000, "lazyfreed_objects": 2}
    timeline = [(10.0, 1500, 6000, 0, 2), (10.1, 3000, 9000, 4, 5), (10.2, 1200, 7000, 0, 7)]
    peaks = {"qbuf": 7, "omem": 9, "tot_mem": 30, "idle_tot_mem": 21}
    sampled = {"peaks": peaks, "timeline": timeline, "first": first}
    pings = [(9.9, 0.001), (10.05, 0.002), (10.21, 0.030), (11.0, 0.5)]  # the last one after the block
    r = summarize(sampled, pings, 10.0, 10.2)
    assert (r["peak_qbuf_bytes"], r["peak_omem_bytes"]) == (7, 9)
    assert (r["idle_tot_mem_bytes"], r["tot_mem_added_bytes"]) == (21, 9)
    assert r["rss_growth_bytes"] == 4000 and r["used_memory_growth_bytes"] == 2000
    assert r["lazyfree_peak"] == 4 and r["lazyfreed"] == 5
    assert r["probe_count"] == 2 and r["probe_worst_ms"] == pytest.approx(30.0)


def test_valkey_summary_and_table_compare_the_settings_and_count_the_background_frees():
    from pipelab.chapters.ch09.valkey import LAZY_SETTINGS, ValkeyRun, valkey_summary, valkey_table

    run = ValkeyRun(1000, 500, 1000)
    run.servers = {"lab": "Redis 8.2.3", "valkey": "Valkey 9.1.2"}
    run.config = {"lab": dict.fromkeys(LAZY_SETTINGS, "no"), "valkey": dict.fromkeys(LAZY_SETTINGS, "yes")}
    s = valkey_summary(run)
    assert "del_lazyfreed" not in s and s["lab_lazy_on"]["value"] == 0 and s["valkey_lazy_on"]["value"] == 6
    assert valkey_table(run).count("| no | yes |") == len(LAZY_SETTINGS)
    for label in chapter.valkey.valkey_means(None, None, 1000):
        run.jobs[label] = {"lazyfreed": 10, "s": 0.1, "reclaim_s": 1.2 if "EXPIRE" in label else None, "kept": 500}
    s = valkey_summary(run)
    assert {"del_lazyfreed", "unlink_lazyfreed", "expire_lazyfreed"} <= set(s) and s["big_keys"]["value"] == 10
    assert s["valkey_lazy_user_del"]["text"] == "yes" and s["lab_lazy_expire"]["value"] == 0
    assert "10 of 10 big hashes" in valkey_table(run) and "(+1.20 s to expire)" in valkey_table(run)
