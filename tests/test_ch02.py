"""Chapter 2: the observation tools on a real server, then the notebook's claims in quick mode."""

from __future__ import annotations

import os

import matplotlib
import pytest

from pipelab import Measurement, observe, placement, results, taught
from pipelab.chapters import ch02
from pipelab.lab import Lab
from tests.conftest import document, unavailable

matplotlib.use("Agg")


def set_in_batches(*args):
    """The notebook's code:depth cell, as the committed notebook runs it."""
    return taught.load("02-system-calls").set_in_batches(*args)


STRACE_SAMPLE = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 52.11    0.012000           2      5003           epoll_wait
 30.00    0.007000           1      5010         3 read
 17.89    0.004000           0      5000           write
------ ----------- ----------- --------- --------- ----------------
100.00    0.023000           1     15013         3 total
"""


def test_strace_summary_is_parsed_per_syscall():
    assert observe.parse_strace_summary(STRACE_SAMPLE) == {"epoll_wait": 5003, "read": 5010, "write": 5000}


def test_counters_subtract_their_own_info_calls(lab):
    counters = observe.Counters(lab.endpoint)
    with counters.measure() as idle:
        pass
    assert idle.values["total_commands_processed"] == 0 and idle.values["total_reads_processed"] == 0
    with counters.measure() as one:
        lab.client().ping()
    assert one.values["total_commands_processed"] >= 1  # the PING (and the new connection's handshake)
    counters.close()


def test_server_reads_per_command_fall_as_the_pipeline_deepens(lab):
    r = lab.client()
    counters = observe.Counters(lab.endpoint)
    reads = {}
    for depth in (1, 10, 100, 1000):
        with counters.measure() as delta:
            set_in_batches(r, 5000, depth)
        reads[depth] = delta.per_command("total_reads_processed")
    assert 0.8 <= reads[1] <= 1.2, reads
    assert reads[1] > reads[10] > reads[100] >= reads[1000], reads


def test_depth_100_is_at_least_3x_depth_1(lab):
    r = lab.client()
    one = lab.measure("d1", lambda: set_in_batches(r, 3000, 1), ops=3000, repeat=3)
    hundred = lab.measure("d100", lambda: set_in_batches(r, 30000, 100), ops=30000, repeat=3)
    assert hundred.ops_per_s >= 3 * one.ops_per_s, (one, hundred)


def test_strace_counts_the_servers_reads(lab):
    r = lab.client()
    pid = observe.local_server_pid(r)
    assert pid, "the session's embedded server is a local process"
    try:
        with observe.strace_count(pid) as calls:
            set_in_batches(r, 500, 1)
    except observe.StraceUnavailable as err:
        unavailable(str(err))
    # One read and one write per command. strace is stopped as the last reply arrives, so a busy
    # machine can lose a call at the end (499 writes of 500, once).
    assert calls.get("read", 0) >= 495 and calls.get("write", 0) >= 495, calls


def test_redis_benchmark_gives_a_rate_for_a_lab_key(lab):
    try:
        rps = observe.redis_benchmark(lab.endpoint, "SET", "pipelab:ch02:set", "xxx", depth=100, requests=20000)
    except observe.BenchmarkUnavailable as err:
        unavailable(str(err))
    assert rps > 0
    with lab.client() as client:
        assert client.keys("*") == [b"pipelab:ch02:set"], "redis-benchmark wrote only the lab's key"


def test_notebook_claims_hold(executed_notebooks):
    sys = results.load("ch02/syscalls")["params"]["per_command"]
    reads = [sys[d]["reads"] for d in sorted(sys, key=int)]
    assert reads == sorted(reads, reverse=True), "syscalls per command fall as depth rises"
    batches = results.load("ch02/batches")["summary"]
    assert batches["peak_omem_100k_one"]["value"] > batches["peak_omem_100k_batched"]["value"], (
        "the reply buffer of one 100k pipeline exceeds that of 10k batches"
    )
    depth = results.load("ch02/depth")["summary"]
    assert depth["redispy_gain"]["value"] > 1 and depth["jedis_gain"]["value"] > 1


def test_tls_costs_most_where_nothing_shares_it(executed_notebooks):
    """One server's plain and TLS ports, both clients at every depth: TLS adds more per SET one at a
    time than deep in a pipeline (a quick run must not show the reverse beyond its intervals: at depth 1
    it times a thousand SETs, where redis-py's cost of TLS once measured -2 µs), and the server's CPU per
    SET says the same."""
    doc = results.load("ch02/tls")
    if doc is None:  # no server with TLS here: the notebook said why
        unavailable("chapter 2's TLS section found no server built with TLS")
    summary, depths = doc["summary"], doc["params"]["depths"]
    assert doc["params"]["server"]["tls"].startswith("TLS"), doc["params"]["server"]
    labels = {m.label for m in doc["measurements"]}
    assert labels == {f"{c} {t} depth {d}" for c in ("redis-py", "Jedis") for t in ("plain", "TLS") for d in depths}
    low, high = min(depths), max(depths)
    for client in ("py", "jedis"):
        one, deep = (tls_extra_us(doc, client, depth) for depth in (low, high))
        assert one[1] > deep[0], f"{client}: TLS added {one} µs per SET at depth {low}, {deep} at {high}"
    assert summary[f"py_server_cpu_us_tls_d{low}"]["value"] > summary[f"py_server_cpu_us_tls_d{high}"]["value"]


TLS_LABELS = {"py": "redis-py", "jedis": "Jedis"}


def tls_extra_us(doc: dict, client: str, depth: int) -> list[float]:
    """What TLS added per SET, in µs, as low and high: the paired ratio's 95% interval times the plain
    time; a quick run's two rounds give no interval, so there, the widest its rounds allow (the slowest
    TLS round against the fastest plain one, and the reverse)."""
    summary = doc["summary"]
    pct, plain = summary[f"{client}_tls_extra_pct_d{depth}"], summary[f"{client}_us_plain_d{depth}"]["value"]
    if pct.get("interval"):
        return [p * plain / 100 for p in pct["interval"]]
    tls, plain = (
        next(m for m in doc["measurements"] if m.label == f"{TLS_LABELS[client]} {t} depth {depth}")
        for t in ("TLS", "plain")
    )
    return [1e6 * (tls.min - plain.max) / tls.ops, 1e6 * (tls.max - plain.min) / tls.ops]


def m(label, ops, seconds, **params):
    return Measurement(label, ops, [seconds * 0.9, seconds, seconds * 1.1], params)


def test_java_runs_the_chapters_depths_and_the_comparison_depth():
    assert ch02.java_depths([1, 4, 16]) == [1, 4, 16, 1_000]
    assert ch02.java_depths([1, 1_000, 4_096]) == [1, 1_000, 4_096]


def test_gain_is_the_best_rate_over_the_smallest_depths_rate():
    runs = {1: m("d1", 100, 1.0), 16: m("d16", 100, 0.05), 256: m("d256", 100, 0.08)}
    assert ch02.gain(runs) == pytest.approx(20.0)


def test_the_depth_summary_compares_jedis_with_redis_benchmark_at_1000():
    py = {1: m("py1", 100, 1.0), 4: m("py4", 100, 0.2)}
    cpu = {1: {"client": 0.5, "server": 0.2}, 4: {"client": 0.9, "server": 0.6}}
    jedis = {1: m("j1", 100, 0.5), 1_000: m("j1000", 100, 0.01)}
    bench = {1: m("b1", 100, 0.4), 1_000: m("b1000", 100, 0.005)}
    s = ch02.depth_summary(py, cpu, jedis, bench, {1: 0.3, 1_000: 0.95})
    assert s["redispy_gain"]["value"] == pytest.approx(5.0)
    assert s["redispy_client_cpu_at_peak"]["value"] == pytest.approx(90)
    share = s["jedis_share_of_benchmark_at_1000"]
    assert share["value"] == pytest.approx(50) and share["interval"][0] < 50 < share["interval"][1]
    assert s["jedis_bar_pct"]["value"] == ch02.JEDIS_BAR_PCT
    assert s["benchmark_server_cpu_at_1000"]["value"] == pytest.approx(95)
    assert s["depths"]["text"] == "1, 4"
    without = ch02.depth_summary(py, cpu, jedis, {}, {})
    assert without["benchmark_gain"]["value"] is None and without["jedis_share_of_benchmark_at_1000"]["value"] is None


def test_the_syscall_and_raw_summaries_read_the_right_rows():
    per_command = {1: {"reads": 1.0, "writes": 1.0, "n": 10}, 1_000: {"reads": 0.004, "writes": 0.002, "n": 10}}
    s = ch02.syscalls_summary(per_command, {})
    assert s["commands_per_read_depth1000"]["value"] == pytest.approx(250)
    assert s["strace_client_sends_depth1"]["value"] is None
    rows = {
        d: {
            "server read": 1 / d,
            "server write": 1 / d,
            "server epoll_wait": 1 / d,
            "client sendto": 1.0,
            "client recvfrom": 1.0,
        }
        for d in ch02.STRACE_DEPTHS
    }
    assert "| server read | 1.000 | 0.0010 |" in ch02.strace_table(rows)
    runs = {"one write": m("a", 10, 0.01), "many writes": m("b", 10, 0.03), "round trips": m("c", 10, 0.5)}
    raw = ch02.raw_summary(runs, {"one write": 0.01, "many writes": 0.2, "round trips": 1.0})
    assert raw["raw_many_vs_one"]["value"] == pytest.approx(3) and raw["raw_trips_vs_one"]["value"] == pytest.approx(50)


def test_the_batches_summary_takes_the_largest_job_and_100k():
    def peak(mem):
        return {"omem": mem, "tot_mem": mem * 2, "used_memory": mem}

    rows = {
        (s, mode): (m(f"{s} {mode}", s, s / 1e6), peak(s if mode == "one pipeline" else 1_000))
        for s in (1_000, 100_000, 1_000_000)
        for mode in ("one pipeline", "10k batches")
    }
    s = ch02.batches_summary(rows)
    assert s["largest_job"]["value"] == 1_000_000 and s["memory_ratio"]["value"] == pytest.approx(1_000)
    assert s["peak_omem_100k_one"]["value"] == 100_000 and s["time_ratio"]["value"] == pytest.approx(1.0)
    assert ch02.batches_params(rows)["sizes"] == [1_000, 100_000, 1_000_000]


def test_the_busy_loop_summary_gives_percentiles_in_microseconds(tmp_path):
    latencies = {"one by one": [50e-6] * 99 + [500e-6], "pipelined x100": [1e-6] * 100}
    switches = {"one by one": {"client": 1.0, "server": 1.0}, "pipelined x100": {"client": 0.01, "server": None}}
    s = ch02.busy_loop_summary(latencies, switches)
    assert s["p50_one_by_one_us"]["value"] == pytest.approx(50) and s["p99_one_by_one_us"]["value"] > 50
    assert s["p50_pipelined_us"]["value"] == pytest.approx(1) and s["ctx_server_pipelined"]["value"] is None
    histogram = ch02.busy_loop_histogram(latencies)  # what the results file keeps for the plot
    edges, filled = (
        histogram["edges_us"],
        {mode: {i: n for i, n in enumerate(counts) if n} for mode, counts in histogram["commands"].items()},
    )
    assert [(edges[i] <= us < edges[i + 1], n) for us, (i, n) in zip((50, 500), filled["one by one"].items())] == [
        (True, 99),
        (True, 1),
    ]
    assert list(filled["pipelined x100"].values()) == [100 * 100], "a pipelined sample counts its 100 commands"
    doc = document(tmp_path, "ch02/busy-loop", params={"depth": 100, "histogram": histogram})
    heights = [bar.get_height() for bar in ch02.busy_loop_plot(doc).axes[0].patches]
    assert sorted(h for h in heights if h) == [1, 99, 100 * 100]


def test_the_book_runs_every_depth_up_to_8192_in_every_client():
    full = ch02.DEPTHS.full
    assert full[0] == 1 and full[-1] == 8_192 and all(b == 2 * a for a, b in zip(full, full[1:]))
    assert ch02.java_depths(full) == sorted(full + [ch02.BENCH_DEPTH])  # Jedis and redis-benchmark get them all


def test_placement_moves_only_a_server_the_lab_started_and_puts_it_back(lab, session):

    placed = ch02.measure_placement(lab, 100, 3)
    if not placement.enabled():
        assert isinstance(placed, str)
        return
    held = placement.keep_cpus_awake()
    assert set(placed) == {"separate CPUs", "one CPU"} | ({ch02.busy_loop.ASLEEP} if held else set())
    assert placement.cpu_idle().startswith("polling") == held, "the request is held again after the halting rounds"
    assert all(len(m.samples) == 3 and m.paired_with == "placement" for m in placed.values())
    assert os.sched_getaffinity(lab.server_pid) == placement.server_cpus(), "the server is back on its CPU"
    summary = ch02.placement_summary(placed)
    assert summary["separate_vs_together"]["interval"], "the ratio carries its interval"
    assert ("asleep_vs_awake" in summary) == held
    foreign = Lab(dict(session.describe(), owned=False), quick=True)
    assert isinstance(ch02.measure_placement(foreign, 100, 3), str), "a server the lab did not start stays put"


def test_the_lab_records_where_each_side_ran(executed_notebooks):
    env = results.load("ch01/ping-10k")["environment"]
    assert env["placement"]["client_cpus"] and "policy" in env["placement"]
    if env["placement"]["policy"].startswith("server and clients"):
        assert set(env["placement"]["server_cpus"]).isdisjoint(env["placement"]["client_cpus"])
