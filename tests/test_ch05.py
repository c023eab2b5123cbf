"""Chapter 5: the directions on a Redis Cluster, read from the results of the notebook's quick run."""
from __future__ import annotations

import os

import psutil
import pytest

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
    for one, piped in (("jedis_one_by_one", "jedis_pipeline"), ("lettuce_one_by_one", "lettuce_pipeline"),
                       ("redisson_one_by_one", "redisson_rbatch")):
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
