"""Chapter 2: the observation tools on a real server, then the notebook's claims in quick mode."""
from __future__ import annotations

from pipelab import observe, results
from pipelab.chapters import ch02
from tests.conftest import unavailable

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
            ch02.set_in_batches(r, 5000, depth)
        reads[depth] = delta.per_command("total_reads_processed")
    assert 0.8 <= reads[1] <= 1.2, reads
    assert reads[1] > reads[10] > reads[100] >= reads[1000], reads


def test_depth_100_is_at_least_3x_depth_1(lab):
    r = lab.client()
    one = lab.measure("d1", lambda: ch02.set_in_batches(r, 3000, 1), ops=3000, repeat=3)
    hundred = lab.measure("d100", lambda: ch02.set_in_batches(r, 30000, 100), ops=30000, repeat=3)
    assert hundred.ops_per_s >= 3 * one.ops_per_s, (one, hundred)


def test_strace_counts_the_servers_reads(lab):
    r = lab.client()
    pid = observe.local_server_pid(r)
    assert pid, "the session's embedded server is a local process"
    try:
        with observe.strace_count(pid) as calls:
            ch02.set_in_batches(r, 500, 1)
    except observe.StraceUnavailable as err:
        unavailable(str(err))
    assert calls.get("read", 0) >= 500 and calls.get("write", 0) >= 500


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
    assert batches["peak_omem_100k_one"]["value"] > batches["peak_omem_100k_batched"]["value"], \
        "the reply buffer of one 100k pipeline exceeds that of 10k batches"
    depth = results.load("ch02/depth")["summary"]
    assert depth["redispy_gain"]["value"] > 1 and depth["jedis_gain"]["value"] > 1
