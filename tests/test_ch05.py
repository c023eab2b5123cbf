"""Chapter 5: the directions on a Redis Cluster, read from the results of the notebook's quick run."""

from __future__ import annotations

import os

import psutil
import pytest
from redis.cluster import key_slot

from pipelab import Measurement
from pipelab.chapters import ch05 as chapter
from tests.conftest import saved


@pytest.fixture(scope="module")
def ch05(executed_notebooks):
    return executed_notebooks["05"]


def test_cross_slot_work_is_refused_and_hash_tags_are_accepted(ch05):
    crossslot = saved("ch05/crossslot")
    outcomes = crossslot["params"]["outcomes"]
    assert outcomes["cross-slot MULTI/EXEC on one master"].startswith("refused"), outcomes
    assert outcomes["cross-slot MSET on one master"].startswith("refused"), outcomes
    assert outcomes["hash-tagged MULTI/EXEC"].startswith("accepted"), outcomes
    assert crossslot["params"]["cross_written"] == 0, "a refused transaction writes nothing"
    assert crossslot["summary"]["slots"]["value"] == 16384
    spread = crossslot["params"]["spread"]
    assert max(spread["one tag for everything"].values()) == 100_000, "one tag: one master holds everything"
    assert max(spread["no hash tag"].values()) < 0.4 * 100_000, "no tag: the keys spread over the masters"


def test_pipelining_beats_one_by_one_on_the_cluster(ch05):
    sadd = saved("ch05/sadd")
    by = {(m.params["client"], m.params["where"], m.params["mode"]): m for m in sadd["measurements"]}
    assert by[("redis-py", "cluster", "pipeline")].median < by[("redis-py", "cluster", "one by one")].median
    for client in {c for c, _, _ in by} - {"redis-py"}:
        modes = {mode: m for (c, _, mode), m in by.items() if c == client}
        one = [m for mode, m in modes.items() if mode.startswith("one")]
        piped = [m for mode, m in modes.items() if not mode.startswith("one")]
        assert one and piped, (client, modes)
        assert min(m.median for m in piped) < one[0].median, (client, modes)
    usage = sadd["params"]["usage"]
    one_reads = sum(d["total_reads_processed"] for d in usage["redis-py|one by one"].values())
    pipe_reads = sum(d["total_reads_processed"] for d in usage["redis-py|pipeline"].values())
    assert pipe_reads * 10 < one_reads, "a pipeline costs each master far fewer reads"
    for node in usage["redis-py|pipeline"].values():
        assert node["sadd"] > 0, "every master took part"


def test_a_pipeline_survives_a_slot_moving(ch05):
    rows = {r["case"]: r for r in saved("ch05/moved")["params"]["rows"]}
    n = saved("ch05/moved")["params"]["n"]
    during = rows["during the migration (half the keys moved)"]
    after = rows["after the migration, old slot map"]
    assert during["ask"] > 0 and during["updated"] == n, during
    assert after["moved"] > 0 and after["updated"] == n, after


def test_the_notebook_stopped_its_cluster(ch05):
    base = int(os.environ["PIPELAB_CLUSTER_PORT"])  # conftest gives the notebook's cluster its own ports
    ports = {str(port) for port in range(base, base + 3)}
    leftovers = []
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        argv = proc.info["cmdline"] or []
        if proc.info["name"] == "redis-server" and "--port" in argv and argv[argv.index("--port") + 1] in ports:
            leftovers.append(proc.info)
    assert leftovers == [], f"orphan cluster nodes: {leftovers}"


def test_java_clients_on_the_cluster(ch05):
    sadd = saved("ch05/sadd")
    facts, n = sadd["params"]["java_facts"], sadd["params"]["n"]
    for one, piped in (
        ("jedis_one_by_one", "jedis_pipeline"),
        ("lettuce_one_by_one", "lettuce_pipeline"),
        ("redisson_one_by_one", "redisson_rbatch"),
    ):
        assert facts[f"{one}_server_reads"] >= n, "one by one: a socket read on the server per command"
        assert facts[f"{piped}_server_reads"] * 10 < n, f"{piped}: a few reads per master"
        assert facts[f"{piped}_masters_used"] == 3 and facts[f"{piped}_redirects"] == 0, facts


def test_java_clients_refuse_cross_slot_and_follow_or_not_a_moving_slot(ch05):
    moved = saved("ch05/moved")
    facts, n = moved["params"]["java_facts"], moved["params"]["n"]
    for case in ("jedis_crossslot", "lettuce_crossslot", "redisson_atomic_crossslot"):
        assert "CROSSSLOT" in facts[f"{case}_outcome"] and facts[f"{case}_keys_written"] == 0, facts
    for case in ("jedis_hashtag", "lettuce_hashtag", "redisson_atomic_hashtag"):
        assert facts[f"{case}_outcome"].startswith("ok") and facts[f"{case}_keys_written"] == 2, facts
    assert facts["redisson_atomic_two_masters_exec_calls"] == 2, "one MULTI/EXEC per master: not atomic across them"
    for client in ("jedis", "lettuce", "redisson"):
        assert facts[f"{client}_stable_keys_written"] == n
    # Jedis's ClusterPipeline does not follow redirections; Lettuce and Redisson do.
    assert facts["jedis_moved_keys_written"] == 0 and facts["jedis_moved_moved_replies"] == n
    assert facts["lettuce_moved_keys_written"] == n and facts["redisson_moved_keys_written"] == n
    assert facts["jedis_ask_keys_written"] < n <= facts["redisson_ask_keys_written"]
    assert facts["slot_back_on_owner"] is True


def test_the_key_layouts_spread_as_the_cluster_spec_says():
    layouts = chapter.key_layouts(3_000)
    assert all(k.startswith(chapter.PREFIX) for keys in layouts.values() for k in keys)
    slots = {name: {key_slot(k.encode()) for k in keys} for name, keys in layouts.items()}
    assert len(slots["one tag for everything"]) == 1
    assert len(slots[chapter.PER_USER]) == chapter.USERS and len(slots["no hash tag"]) > chapter.USERS


def test_the_crossslot_summary_and_spread_table():
    spread = {
        "no hash tag": {1: 340, 2: 330, 3: 330},
        chapter.PER_USER: {1: 400, 2: 300, 3: 300},
        "one tag for everything": {1: 1_000, 2: 0, 3: 0},
    }
    slots_used = {"no hash tag": 900, chapter.PER_USER: 100, "one tag for everything": 1}
    outcomes = {
        "cross-slot MULTI/EXEC on one master": "refused: CROSSSLOT",
        "cross-slot MSET on one master": "refused",
        "hash-tagged MULTI/EXEC": "accepted: [True, True]",
        "cross-slot transaction, redis-py RedisCluster": "refused by the client: RedisClusterException",
    }
    s = chapter.crossslot_summary(outcomes, 0, spread, slots_used, {1: 5461, 2: 5462, 3: 5461}, n=1_000)
    assert s["slots"]["value"] == 16384 and s["masters"]["value"] == 3 and s["tagged_tx"]["text"] == "accepted"
    assert s["one_tag_share"]["value"] == 100 and s["per_user_share"]["value"] == 40
    assert "| one tag for everything | 1 | 1,000 | 0 | 0 | 100% |" in chapter.spread_table(spread, slots_used, n=1_000)


def test_the_sadd_summary_compares_the_cluster_with_one_server():
    def m(client, where, mode, seconds):
        return Measurement(
            f"{client}, {where}, {mode}", 1_000, [seconds], {"client": client, "where": where, "mode": mode}
        )

    runs = [
        m("redis-py", "one server", "one by one", 1.0),
        m("redis-py", "one server", "pipeline", 0.05),
        m("redis-py", "cluster", "one by one", 1.2),
        m("redis-py", "cluster", "pipeline", 0.1),
        m("jedis", "cluster", "one by one", 0.9),
        m("jedis", "cluster", "pipeline", 0.03),
    ]
    usage = {
        ("redis-py", mode): {p: {"total_reads_processed": r, "total_connections_received": 1} for p in (1, 2, 3)}
        for mode, r in (("one by one", 400), ("pipeline", 5))
    }
    s = chapter.sadd_summary(runs, usage, 1_000, None)
    assert s["cluster_speedup"]["value"] == pytest.approx(12) and s["cluster_vs_single_pipe"]["value"] == pytest.approx(
        2
    )
    assert s["one_reads"]["value"] == 1_200 and s["pipe_conns"]["value"] == 3
    assert s["jedis_best_mode"]["text"] == "pipeline" and s["jedis_speedup"]["value"] == pytest.approx(30)
    assert "| jedis, cluster, pipeline | 30 ms | 30.0 |" in chapter.sadd_table(runs)


def _rows(name: str) -> dict:
    rows = saved(name)["params"]["rows"]
    assert "skipped" not in rows, rows  # the tests' cluster is the lab's own
    return {k: v for k, v in rows.items() if "skipped" not in v}


def test_a_lost_master_leaves_only_the_survivors_share_run(ch05):
    rows = _rows("ch05/lost")
    assert {"redis-py", "Jedis", "Lettuce"} <= rows.keys(), rows.keys()
    for name, x in rows.items():
        assert x["survivor_share"] <= x["survivors_ran"] <= 2 * x["survivor_share"], (name, x)
    assert rows["Jedis"]["replies_failed"] > 0, "the lost master's Responses throw"
    assert rows["Lettuce"]["outcome"].startswith("still waiting"), "Lettuce keeps them for its reconnect"
    if "rueidis" in rows:
        assert rows["rueidis"]["replies_failed"] > 0 and rows["rueidis"]["waited_ms"] < 2_000, rows["rueidis"]


def test_node_redis_fails_written_commands_with_the_socket_and_unwritten_ones_at_its_timeout(ch05):
    rows = _rows("ch05/lost")
    if "node-redis" not in rows:
        pytest.skip("Node is not installed here")
    x = rows["node-redis"]
    errors, at = x["errors"], x["errors_ms"]
    assert set(errors) <= {"Socket closed unexpectedly", "TimeoutError"}, errors
    assert errors.get("Socket closed unexpectedly", 0) > 0, "the commands written to the dead master fail with it"
    if "TimeoutError" in errors:  # part of the queue was unwritten: the 5,000 ms command timeout rejects it
        first, last = at["TimeoutError"]
        assert 4_900 <= first <= last < 7_000 and x["waited_ms"] < 7_000, (at, x["waited_ms"])
    else:
        assert x["waited_ms"] < 2_000, x


def test_ioredis_refuses_one_pipeline_over_several_masters(ch05):
    refusal = saved("ch05/lost")["params"]["refusal"]
    if "skipped" in refusal:
        pytest.skip(refusal["skipped"])
    assert "same slots allocation group" in refusal["outcome"], refusal
    assert refusal["masters"] > 1 and refusal["masters_ran"] == 0, "refused before anything was sent"


def test_the_lost_details_tell_written_from_unwritten_commands_and_show_the_refusal():
    socket, timeout = "Socket closed unexpectedly", "TimeoutError"
    split = {
        "replies_failed": 10,
        "errors": {socket: 7, timeout: 3},
        "errors_ms": {socket: [210, 212], timeout: [5010, 5090]},
    }
    refusal = {
        "outcome": "All keys in the pipeline should belong to the same slots allocation group",
        "masters": 3,
        "masters_ran": 0,
    }
    s = chapter.lost_details({"node-redis": split}, refusal)
    assert s["noderedis_socket_failed"]["value"] == 7 and s["noderedis_unwritten"]["value"] == 3
    assert (
        s["noderedis_timeout_ms"]["value"] == 5090 and "between 5,010 and 5,090 ms" in s["noderedis_timeout_ms"]["text"]
    )
    assert s["noderedis_other_failed"]["value"] == 0
    assert (
        s["ioredis_pipeline_masters_ran"]["value"] == 0 and s["ioredis_pipeline_outcome"]["text"] == refusal["outcome"]
    )
    all_written = {"replies_failed": 5, "errors": {socket: 4, "ECONNRESET": 1}, "errors_ms": {socket: [200, 201]}}
    s = chapter.lost_details({"node-redis": all_written}, {"skipped": "Node.js is not installed here."})
    assert s["noderedis_unwritten"]["value"] == 0 and "none" in s["noderedis_timeout_ms"]["text"]
    assert s["noderedis_other_failed"]["value"] == 1, "an error of neither kind is counted apart"
    assert s["ioredis_pipeline_outcome"]["text"] == "Node.js is not installed here."
    assert chapter.lost_details({}, {}) == {}


def test_evalsha_after_a_flushed_script_cache(ch05):
    rows = _rows("ch05/scripts")
    assert "blocked" in rows["redis-py"]["outcome"] and rows["redis-py"]["evalsha_ran"] == 0, "refused by redis-py"
    jedis = rows["Jedis"]
    assert jedis["noscript"] > 0 and jedis["replies_failed"] == jedis["noscript"], jedis
    glide = rows["GLIDE, invoke_script"]
    assert glide["replies_failed"] == 0 and glide["script_load"] > 0, "GLIDE loads the script and retries"
    assert rows["GLIDE, Batch of EVALSHA"]["noscript"] > 0
    if "ioredis" in rows:
        assert rows["ioredis"]["noscript"] == 0 and rows["ioredis"]["replies_failed"] == 0, rows["ioredis"]


def test_replica_reads_go_where_the_setting_says_and_can_be_stale(ch05):
    rows, n = _rows("ch05/replicas"), saved("ch05/replicas")["params"]["n"]
    for default in ("redis-py (default)", "Lettuce (default)", "go-redis (default)"):
        if default in rows:
            assert rows[default]["gets_replicas"] == 0 and rows[default]["stale_reads"] == 0, (default, rows[default])
    for replica_only in ("redis-py, RANDOM_REPLICA", "Lettuce, ReadFrom.REPLICA"):
        assert rows[replica_only]["gets_masters"] == 0 and rows[replica_only]["stale_reads"] == n, rows[replica_only]
    redisson = rows["Redisson (default)"]
    assert redisson["gets_replicas"] > 0 and redisson["stale_reads"] == 0, "a batch with a write stays on the master"
    if "go-redis, ReadOnly" in rows:
        readonly = rows["go-redis, ReadOnly"]
        assert readonly["gets_replicas"] > 0 and readonly["stale_reads"] == 0, readonly


def test_go_and_node_clients_under_a_moving_slot(ch05):
    rows, n = saved("ch05/redirects")["params"]["rows"], saved("ch05/redirects")["params"]["n"]
    if "go-redis|ask" in rows and "skipped" not in rows["go-redis|ask"]:
        assert rows["go-redis|ask"]["keys_updated"] == n and rows["go-redis|moved"]["keys_updated"] == n
        assert rows["go-redis|ask"]["ask"] > 0 and rows["go-redis|moved"]["moved"] > 0
    if "ioredis|ask" in rows and "skipped" not in rows["ioredis|ask"]:
        assert rows["ioredis|ask"]["replies_failed"] > 0, "a half-moved pipeline hands ioredis's callers ASK"
        assert rows["ioredis|moved"]["keys_updated"] == n
