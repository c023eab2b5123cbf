"""Injected RTT through a real toxiproxy: single commands obey 1/RTT, pipelines do not."""

from __future__ import annotations

from pipelab import taught
from pipelab.measure import timed
from pipelab.proxy import PROXY_NAME

ch01 = taught.load("01-round-trip-time")  # chapter 1's PING loops, as its notebook runs them


def test_single_command_throughput_at_5ms_is_near_the_1_over_rtt_bound(rtt_lab):
    with rtt_lab.rtt(5) as link:
        c = link.client()
        single = rtt_lab.measure("single", lambda: ch01.ping_one_by_one(c, 40), ops=40, repeat=3)
        piped = rtt_lab.measure("piped", lambda: ch01.ping_pipelined(c, 1000), ops=1000, repeat=3)
    bound = 1000 / 5
    # Never above the bound. Below it by what toxiproxy's timers overshoot on a busy VM (8.3 ms round
    # trips were seen, and 10-12 ms in a slow spell of the host), but not by a wait per command such
    # as a 40 ms delayed ACK, which would give 25 a second.
    assert 0.3 * bound <= single.ops_per_s <= 1.05 * bound, single
    assert piped.ops_per_s > 20 * bound, piped  # one RTT per batch of 1,000, not per command


def test_toxics_are_removed_when_the_rtt_block_ends(rtt_lab):
    with rtt_lab.rtt(2):
        assert len(rtt_lab.toxiproxy._call("GET", f"/proxies/{PROXY_NAME}/toxics")) == 2
    assert rtt_lab.toxiproxy._call("GET", f"/proxies/{PROXY_NAME}/toxics") == []


def test_half_a_millisecond_is_a_mean_between_0_and_1_ms(rtt_lab):
    # Half the 0.5 ms round trips wait on a 1 ms timer and half on none, so whatever a timer
    # overshoots, 0.5 ms lands midway between the bare proxy and 1 ms. The three settings take turns,
    # round by round, so that a slow spell of the host falls on all of them alike.
    settings = {"proxy": 0, "0.5": 0.5, "1": 1}
    fastest_ms = dict.fromkeys(settings, float("inf"))
    order = list(settings)
    for _ in range(7):
        for name in order:
            with rtt_lab.rtt(settings[name]) if settings[name] else rtt_lab.proxied() as link:
                c = link.client()
                ch01.ping_one_by_one(c, 30)  # warm: connect and fill the toxic's pipe untimed
                took_s = timed(lambda: ch01.ping_one_by_one(c, 300))
                fastest_ms[name] = min(fastest_ms[name], took_s / 300 * 1e3)
        order.append(order.pop(0))

    full_ms = fastest_ms["1"] - fastest_ms["proxy"]
    share = (fastest_ms["0.5"] - fastest_ms["proxy"]) / full_ms
    assert full_ms > 0.7, f"a 1 ms toxic added only {full_ms:.2f} ms per round trip ({fastest_ms})"
    # 0 would mean the jitter cancelled the latency; 1 that it was ignored or the toxic doubled.
    assert 0.25 <= share <= 0.75, f"0.5 ms added {share:.0%} of what 1 ms added ({fastest_ms})"
