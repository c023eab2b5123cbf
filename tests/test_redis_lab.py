"""The embedded Redis and the safety rules, on a real redis-server."""

from __future__ import annotations

import socket

import pytest

from pipelab.errors import LabError
from pipelab.lab import Session
from pipelab.server import EmbeddedRedis, check_ownership, delete_lab_keys, free_port, port_is_free

pytestmark = pytest.mark.redis  # starts real servers (or the lab) without the session's fixtures


def test_embedded_redis_listens_on_loopback_without_persistence_and_stops(other_redis):
    client = other_redis.endpoint.client()
    config = client.config_get("*")
    assert config["bind"] == "127.0.0.1"
    assert config["save"] == "" and config["appendonly"] == "no"
    port = other_redis.port
    other_redis.stop()
    assert other_redis.proc is None and port_is_free(port)


def test_a_taken_port_is_one_sentence(monkeypatch):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(LabError, match=f"Port {port} on 127.0.0.1 is in use"):
            EmbeddedRedis(port=port).start()


def test_foreign_keys_stop_the_lab_and_survive_it(other_redis):
    client = other_redis.endpoint.client()
    client.set("customer:1", "precious")
    client.set("pipelab:ch01:x", "ours")
    with pytest.raises(LabError, match="holds keys that are not the lab's"):
        check_ownership(client, other_redis.endpoint.url)
    check_ownership(client, other_redis.endpoint.url, allow_foreign=True)  # allowed: write beside them
    assert delete_lab_keys(client) == 1
    assert client.get("customer:1") == b"precious"
    with pytest.raises(ValueError):
        delete_lab_keys(client, "*")


def test_redis_url_with_foreign_keys_refuses_to_start(other_redis, monkeypatch):
    other_redis.endpoint.client().set("orders", "42")
    monkeypatch.setenv("REDIS_URL", other_redis.endpoint.url)
    with pytest.raises(LabError, match="not the lab's"):
        Session(with_proxy=False).start()
    assert other_redis.endpoint.client().get("orders") == b"42"


def test_redis_url_to_nowhere_is_one_sentence(monkeypatch):
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(LabError, match="Cannot reach Redis"):
        Session(with_proxy=False).start()


def test_asking_for_rtt_without_toxiproxy_is_one_sentence(session):
    from pipelab.lab import Lab

    lab = Lab(
        dict(session.describe(), toxiproxy_api=None, proxy_url=None, proxy_note="No toxiproxy: install Go ..."),
        quick=True,
    )
    with pytest.raises(LabError, match="Cannot inject 1 ms of RTT: No toxiproxy"):
        with lab.rtt(1):
            pass
