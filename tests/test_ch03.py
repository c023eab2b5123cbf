"""Chapter 3: each client's pipelined mode beats its one-by-one loop; Little's law at an injected RTT."""
from __future__ import annotations

import pytest

from pipelab import results
from tests.conftest import unavailable


@pytest.fixture(scope="module")
def sadd(executed_notebooks):
    return results.load("ch03/sadd")


def _loopback(doc):
    return [m for m in doc["measurements"] if m.params.get("rtt_ms") == 0 and m.ops == doc["params"]["n"]]


def test_every_client_has_a_pipelined_mode_faster_than_one_by_one(sadd):
    by_client: dict[str, dict[str, float]] = {}
    for m in _loopback(sadd):
        by_client.setdefault(m.params["client"], {})[m.params["mode"]] = m.median
    assert set(by_client) == {"redis-py", "Jedis", "Lettuce", "Spring Data Redis", "Redisson"}
    for client, modes in by_client.items():
        one = [t for mode, t in modes.items() if "one_by_one" in mode]
        piped = [t for mode, t in modes.items() if "one_by_one" not in mode]
        assert one and piped, client
        assert min(piped) < one[0], f"{client}: {modes}"


def test_the_wire_shows_what_each_mode_adds(sadd):
    wire = sadd["params"]["wire"]
    assert wire["redis-py|transaction"].get("multi") and wire["redis-py|transaction"].get("exec")
    assert not wire["redis-py|pipeline"].get("multi"), "a plain pipeline sends no MULTI"
    assert wire["Jedis|transaction"].get("multi") and wire["Jedis|transaction"].get("exec")
    skip = wire["Redisson|rbatch_skip_result"]
    assert any(name.startswith("client") for name in skip), f"skipResult() sends CLIENT REPLY: {skip}"


def test_littles_law_at_1ms_rtt(executed_notebooks, session):
    doc = results.load("ch03/jmh")
    rows = {(r["rtt_ms"], r["model"], r["threads"]): r["ops_per_ms"] for r in doc["params"]["rows"]}
    if not any(rtt == 1 for rtt, _, _ in rows):
        unavailable("no injected RTT in this run: " + session.proxy_note)
    bound_pool8 = 8 / 1.0  # eight connections, one command each in flight, per millisecond of RTT
    pool8 = rows[(1, "jedis_pool_8", 50)]
    lettuce = rows[(1, "lettuce_shared", 50)]
    assert 0.3 * bound_pool8 <= pool8 <= 1.05 * bound_pool8, pool8  # the proxy hop makes the real RTT longer
    # The shared connection keeps every waiting thread's command in flight, so it passes the pool's ceiling;
    # compared with the pool measured in the same run, as both share the run's CPU and proxy.
    assert lettuce > 1.25 * pool8, f"one shared connection with 50 threads: {lettuce} ops/ms, JedisPool(8): {pool8}"
