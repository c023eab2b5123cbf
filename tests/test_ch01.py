"""Chapter 1: the round trip's cost on loopback, the RESP and handshake sections, and the chapter
module's summaries and plots on measurements made up for the test."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
import redis

from pipelab import Measurement, taught
from pipelab.chapters import ch01
from pipelab.server import EmbeddedRedis, free_port
from tests.conftest import beyond, document, saved

CELLS = taught.load("01-round-trip-time")  # the code the notebook teaches, as committed


def test_three_pings_in_one_write_get_three_pongs(lab):
    request, replies = CELLS.three_pings(lab.endpoint)
    assert request == b"*1\r\n$4\r\nPING\r\n" * 3
    assert replies == [b"+PONG"] * 3
    assert ch01.inline_ping(lab.endpoint) == b"+PONG"


def _commands(client: redis.Redis) -> int:
    return client.info("stats")["total_commands_processed"]


def test_the_workloads_send_exactly_their_commands(lab):
    r = lab.client()
    before = _commands(r)
    CELLS.ping_pipelined(r, 500)
    assert _commands(r) - before == 500 + 1  # the INFO we asked with counts once
    keys = CELLS.sadd_keys(300)
    CELLS.sadd_pipelined(r, keys)
    assert r.exists(*keys) == 300 and all(k.startswith("pipelab:") for k in keys)
    ch01.delete_keys(r, keys)
    assert r.exists(*keys) == 0


def test_pipelined_pings_are_at_least_3x_faster_on_loopback(executed_notebooks):
    summary = saved("ch01/ping-10k")["summary"]
    for client in ("python", "jedis"):
        assert summary[f"{client}_speedup"]["value"] >= 3, summary


def test_a_pipelined_handshake_gates_every_command_behind_it():
    with EmbeddedRedis(port=free_port(), password="pw") as server:
        replies = ch01.measure_handshakes(server, "pw", CELLS.handshake_pipelined)
    assert replies["auth"] == ["+OK"] + ["+PONG"] * ch01.HANDSHAKE_PINGS
    assert replies["hello"][0].startswith("a map of") and replies["hello"][1:] == ["+PONG"] * ch01.HANDSHAKE_PINGS
    for wrong in ("wrong_auth", "wrong_hello"):
        assert replies[wrong][0].startswith("-WRONGPASS")
        assert all(r.startswith("-NOAUTH") for r in replies[wrong][1:]), replies[wrong]
    summary = ch01.handshake_summary(replies)
    assert summary["auth_pongs"]["value"] == 3 and summary["wrong_auth_pongs"]["value"] == 0
    assert summary["wrong_hello_pings"]["text"] == "3 × -NOAUTH Authentication required."


def test_the_notebook_saved_the_handshake_and_every_experiment(executed_notebooks):
    assert saved("ch01/handshake")["summary"]["wrong_auth_pongs"]["value"] == 0
    ping = saved("ch01/ping-10k")["summary"]
    # Pipelining wins beyond the noise of the run: the low end of each speed-up's interval.
    assert beyond(ping["python_speedup"], 1) and beyond(ping["jedis_speedup"], 1), ping
    assert beyond(saved("ch01/sadd")["summary"]["jedis_speedup"], 1)


def runs(*medians, ops=100):
    return [Measurement(f"m{i}", ops, [m * 0.9, m, m * 1.2]) for i, m in enumerate(medians)]


def test_the_ping_and_sadd_summaries_divide_the_right_medians():
    ping = ch01.ping_summary(runs(1.0, 0.25, 0.8, 0.1))
    assert ping["python_speedup"]["value"] == pytest.approx(4.0)
    assert ping["jedis_speedup"]["value"] == pytest.approx(8.0)
    assert ping["jedis_pipelined_s"]["value"] == pytest.approx(0.1)
    sadd = ch01.sadd_summary(runs(2.0, 0.5, 1.0, 3.0, 0.6, ops=1000))
    assert sadd["jedis_speedup"]["value"] == pytest.approx(4.0)
    assert sadd["redisson_rbatch_us"]["value"] == pytest.approx(1.0 / 1000 * 1e6)
    assert sadd["jedis_one_by_one_us"]["value"] == pytest.approx(2.0 / 1000 * 1e6) and sadd["n"]["value"] == 1000


def test_the_sweep_summary_reads_each_rtt_and_the_proxy_hop():
    points = {
        rtt: tuple(Measurement(f"{mode} @ {rtt}", 10, [s]) for mode, s in (("single", t), ("piped", t / 50)))
        for rtt, t in ((0, 0.001), (1, 0.011), (5, 0.051))
    }
    proxy = Measurement("proxy", 10, [0.0015])
    summary = ch01.sweep_summary(points, proxy, None)
    assert summary["loopback_rtt_us"]["value"] == pytest.approx(100)
    assert summary["proxy_overhead_us"]["value"] == pytest.approx(50)
    assert summary["single_ops_at_1ms"]["value"] == pytest.approx(10 / 0.011)
    assert summary["single_ops_at_250ms"]["value"] is None
    assert summary["rtts"]["text"].startswith("0.10 ms (set 0), 1.10 ms (set 1)")
    assert len(ch01.sweep_runs(points, proxy, None)) == 7


def test_the_plots_draw_from_the_results_file_one_bar_per_run_and_one_line_per_mode(tmp_path):
    bars = ch01.ping_plot(document(tmp_path, "ch01/ping-10k", runs(1.0, 0.25, 0.8, 0.1), params={"n": 500}))
    assert len(bars.axes[0].patches) == 4 and "500 PINGs" in bars.axes[0].get_title()

    # "via_proxy": rtt > 0}
    def point(mode, rtt, s):
        return Measurement(f"{mode} @ {rtt}", 10, [s], {"mode": mode, "rtt_ms": rtt, "via_proxy": rtt > 0})

    points = {rtt: (point("single", rtt, 0.01 * (rtt + 1)), point("pipelined", rtt, 0.001)) for rtt in (0, 0.5, 5)}
    proxy = Measurement("single via the proxy", 10, [0.5], {"mode": "single", "rtt_ms": 0, "via_proxy": True})
    slow = (point("single", 250, 2.5), point("pipelined", 250, 0.25))
    doc = document(
        tmp_path,
        "ch01/rtt-sweep",
        ch01.sweep_runs(points, proxy, slow),
        params={"rtts_ms": [0, 0.5, 5], "depth": 1_000},
    )
    assert [[m.label for m in pair] for pair in ch01.sweep_points(doc).values()] == [
        [m.label for m in pair] for pair in points.values()
    ], "neither the proxy hop nor the 250 ms link"
    lines = ch01.sweep_plot(doc).axes[0].get_lines()
    assert len(lines) == 3  # single, pipelined, and the 1/RTT bound
    assert list(lines[0].get_xdata()) == [0, 0.5, 5] and lines[0].get_ydata()[0] == pytest.approx(10 / 0.01)
