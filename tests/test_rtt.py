"""Injected RTT through a real toxiproxy: single commands obey 1/RTT, pipelines do not."""
from __future__ import annotations

from pipelab.chapters import ch01
from pipelab.proxy import PROXY_NAME


def test_single_command_throughput_at_5ms_is_near_the_1_over_rtt_bound(rtt_lab):
    with rtt_lab.rtt(5) as link:
        c = link.client()
        single = rtt_lab.measure("single", lambda: ch01.ping_one_by_one(c, 40), ops=40, repeat=3)
        piped = rtt_lab.measure("piped", lambda: ch01.ping_pipelined(c, 1000), ops=1000, repeat=3)
    bound = 1000 / 5
    assert 0.6 * bound <= single.ops_per_s <= 1.05 * bound, single
    assert piped.ops_per_s > 20 * bound, piped  # one RTT per batch of 1,000, not per command


def test_toxics_are_removed_when_the_rtt_block_ends(rtt_lab):
    with rtt_lab.rtt(2):
        assert len(rtt_lab.toxiproxy._call("GET", f"/proxies/{PROXY_NAME}/toxics")) == 2
    assert rtt_lab.toxiproxy._call("GET", f"/proxies/{PROXY_NAME}/toxics") == []


def test_half_a_millisecond_is_a_mean_between_0_and_1_ms(rtt_lab):
    with rtt_lab.proxied() as link:
        c = link.client()
        base = rtt_lab.measure("proxy", lambda: ch01.ping_one_by_one(c, 300), ops=300, repeat=3)
    with rtt_lab.rtt(0.5) as link:
        c = link.client()
        half = rtt_lab.measure("0.5", lambda: ch01.ping_one_by_one(c, 300), ops=300, repeat=3)
    added_ms = (half.per_op_us - base.per_op_us) / 1e3
    assert 0.2 <= added_ms <= 1.0, f"0.5 ms toxic added {added_ms:.2f} ms per round trip"
