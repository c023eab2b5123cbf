"""Chapter 9, the Jedis side (ch09-load, ch09-delete): directions read from the notebook's quick run, and the
tables and summaries on made-up runs."""

from __future__ import annotations

import pytest

from pipelab.chapters.ch09 import PATTERN, java
from pipelab.jbang import JavaRun
from tests.conftest import saved


@pytest.fixture(scope="module")
def ch09(executed_notebooks):
    return executed_notebooks["09"]


def test_jedis_reports_each_refused_command_in_its_response_and_stores_every_key(ch09):
    f = saved("ch09/java-load")["params"]
    bad = f["bad_commands"]
    assert bad > 0
    assert f["bad_sync_threw"] is False, "sync() does not throw for a refused command"
    assert f["bad_get_threw"] == bad and f["bad_get_message"] == "WRONGTYPE", f
    assert f["bad_return_all_exceptions"] == bad and f["bad_return_all_threw"] is False, f
    assert f["bad_return_all_replies"] == f["bad_keys_expected"] + bad, "one reply per command, refused or not"
    assert f["bad_keys_stored"] == f["bad_return_all_keys_stored"] == f["bad_keys_expected"], f


def test_a_big_mset_sits_whole_in_the_servers_client_memory_where_pipelines_do_not(ch09):
    f = saved("ch09/java-load")["params"]
    big, pipelined = max(java.BATCHES), [f"pipeline_{b}" for b in java.BATCHES] + ["one_pipeline"]
    # The server keeps an MSET's arguments until the whole command is in; a pipeline's SETs are small each.
    assert f[f"mset_{big}_peak_tot_mem_bytes"] > 5 * max(f[f"{m}_peak_tot_mem_bytes"] for m in pipelined), f
    # tot-mem also counts what a client holds at rest (its structure, its 16 KB reply buffer): less that,
    # the MSET added most of its arguments, the pipelines next to nothing.
    assert all(f[f"{m}_idle_tot_mem_bytes"] > 4096 for m in pipelined), f
    added = max(f[f"{m}_tot_mem_added_bytes"] for m in pipelined)
    assert added < 64 * 1024 and f[f"mset_{big}_tot_mem_added_bytes"] > max(10 * added, 256 * 1024), f
    for mode in pipelined:
        assert f[f"{mode}_watch_s"] >= f[f"{mode}_watched_s"] > 0, "the Watch covered the whole load"
        assert f[f"{mode}_probe_worst_ms"] >= f[f"{mode}_probe_p99_ms"] > 0


def test_every_jedis_way_deletes_the_pattern_and_leaves_the_kept_keys(ch09):
    f = saved("ch09/java-delete")["params"]
    assert f["pattern"] == PATTERN, "the example and the chapter module name the same keys"
    assert f["kept_after"] == f["kept"] > 0
    modes = [k.removesuffix("_deleted") for k in f if k.endswith("_deleted") and "_master" not in k]
    assert len(modes) == 2 * len(java.SCAN_COUNTS) + (0 if "cluster_skipped" in f else 3), modes
    assert all(f[f"{m}_deleted"] == f["doomed"] for m in modes), f
    small, large = min(java.SCAN_COUNTS), max(java.SCAN_COUNTS)
    # A COUNT ten times larger walks the same keyspace in about a tenth of the calls.
    assert f[f"pipelined_{small}_scan_calls"] > 5 * f[f"pipelined_{large}_scan_calls"], f
    assert f[f"variadic_{large}_unlink_commands"] <= f[f"variadic_{large}_scan_calls"]
    assert f[f"pipelined_{large}_unlink_commands"] == f["doomed"]


def test_on_the_cluster_each_master_gives_up_its_share_and_kept_keys_stay(ch09):
    f = saved("ch09/java-delete")["params"]
    if "cluster_skipped" in f:
        pytest.skip(f["cluster_skipped"])
    assert f["cluster_kept_after"] == f["kept"]
    for mode in ("nodes_per_slot", "nodes_per_key", "iteration"):
        per_master = [f[f"{mode}_master{i}_deleted"] for i in range(f["cluster_masters"])]
        assert sum(per_master) == f["doomed"] and min(per_master) > 0, (mode, per_master)
    # A page's keys scatter over a master's slots: one UNLINK per slot is more commands than pages, fewer than keys.
    assert f["nodes_per_slot_scan_calls"] < f["nodes_per_slot_unlink_commands"] < f["doomed"], f


def made_up_load() -> JavaRun:
    modes = {"pipeline_1000": [0.02, 0.03], "mset_1000": [0.01, 0.02], "one_pipeline": [0.02, 0.02]}
    facts = {
        "value_bytes": 100,
        "bad_batch": 1000,
        "bad_commands": 3,
        "bad_sync_threw": False,
        "bad_get_threw": 3,
        "bad_get_exception": "JedisDataException",
        "bad_get_message": "WRONGTYPE",
        "bad_keys_expected": 1000,
        "bad_keys_stored": 1000,
        "bad_return_all_replies": 1003,
        "bad_return_all_exceptions": 3,
    }
    for i, mode in enumerate(modes):
        facts |= {
            f"{mode}_peak_qbuf_bytes": 1024 * i,
            f"{mode}_peak_omem_bytes": 2048 * i,
            f"{mode}_peak_tot_mem_bytes": 8192 * (i + 1),
            f"{mode}_idle_tot_mem_bytes": 8192,
            f"{mode}_tot_mem_added_bytes": 8192 * i,
            f"{mode}_rss_growth_bytes": 1 << 20,
            f"{mode}_probe_p99_ms": 1.5,
            f"{mode}_probe_worst_ms": 4.25,
            f"{mode}_watched_loads": 3 + i,
        }
    fields = {
        "pipeline_1000": {"way": "pipeline", "batch": 1000},
        "mset_1000": {"way": "mset", "batch": 1000},
        "one_pipeline": {"way": "pipeline", "batch": 1000},
    }
    data = {"size": 1000, "modes": modes, "facts": facts, "fields": fields, "clients": {"jedis": "8.0.2"}}
    return JavaRun("ch09-load", data)


def test_the_load_table_and_summary_read_the_facts():
    run = made_up_load()
    table = java.java_load_table(run)
    assert table.count("\n") == 2 + 3 - 1
    assert "MSET of 1,000 keys" in table and "One pipeline of everything" in table and "4.0 KiB" in table
    assert "1.50 / 4.25" in table
    s = java.java_load_summary(run)
    assert s["bad_sync_threw"]["text"] == "threw nothing" and s["bad_get_message"]["text"] == "WRONGTYPE"
    assert s["mset_1000_keys_per_s"]["value"] == pytest.approx(1000 / 0.015)
    assert s["one_pipeline_omem"]["text"] == "4.0 KiB" and s["jedis_version"]["text"] == "8.0.2"
    assert s["mset_1000_tot_mem"]["value"] == 16384 and s["mset_1000_tot_mem_added"]["value"] == 8192
    assert s["idle_tot_mem"]["value"] == 8192 and "| 16.0 KiB |" in table


def test_the_delete_table_and_summary_read_the_facts():
    modes = {"pipelined_100": [0.05], "variadic_100": [0.04], "iteration": [0.06]}
    facts = {"pattern": PATTERN, "doomed": 1000, "kept": 500, "kept_after": 500, "cluster_kept_after": 500}
    facts |= {"cluster_masters": 2, "cluster_count": 1000}
    for mode, unlinks in (("pipelined_100", 1000), ("variadic_100", 12), ("iteration", 1000)):
        facts |= {f"{mode}_scan_calls": 12, f"{mode}_unlink_commands": unlinks, f"{mode}_deleted": 1000}
    facts |= {"iteration_master0_deleted": 400, "iteration_master1_deleted": 600}
    facts |= {"nodes_per_slot_deleted": 1000, "nodes_per_slot_unlink_commands": 250}
    fields = {
        "pipelined_100": {"way": "pipelined", "count": 100, "where": "server"},
        "variadic_100": {"way": "variadic", "count": 100, "where": "server"},
        "iteration": {"way": "iteration", "count": 1000, "where": "cluster"},
    }
    run = JavaRun("ch09-delete", {"size": 1000, "modes": modes, "facts": facts, "fields": fields})
    table = java.java_delete_table(run)
    assert "SCAN COUNT 100, one UNLINK per page" in table and "400 / 600" in table
    assert table.count("\n") == 2 + 3 - 1
    s = java.java_delete_summary(run)
    assert s["iteration_master1_deleted"]["value"] == 600 and "pipelined_100_master0_deleted" not in s
    assert s["variadic_100_unlinks"]["value"] == 12 and s["pattern"]["text"] == PATTERN
    assert s["pipelined_100_ms"]["value"] == pytest.approx(50)
    assert s["nodes_per_slot_keys_per_unlink"]["text"] == "4"
