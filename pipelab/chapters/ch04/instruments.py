"""Chapter 4's instruments: what the sections observe on the server and on a second client."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

import redis

from ...observe import command_stats
from ...server import Endpoint


# --8<-- [start:instruments]
@contextmanager
def server_time(endpoint: Endpoint, *commands: str):
    """Microseconds the server spent per call of each of `commands` while the block ran."""
    reader = endpoint.client()
    before = command_stats(reader)
    out: dict[str, float | None] = {}
    try:
        yield out
    finally:
        after = command_stats(reader)
        reader.close()
        for name in commands:
            calls = after.get(name, (0, 0.0))[0] - before.get(name, (0, 0.0))[0]
            usec = after.get(name, (0, 0.0))[1] - before.get(name, (0, 0.0))[1]
            out[name] = usec / calls if calls else None


@contextmanager
def slowlog_threshold(client: redis.Redis, usec: int, allowed: bool):
    """Lower the slow log's threshold for the block and put it back; only on a server the lab
    started (`allowed`): on someone else's server the lab reads its setting and changes nothing."""
    current = int(client.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"])
    if not allowed:
        yield current
        return
    client.config_set("slowlog-log-slower-than", usec)
    try:
        yield usec
    finally:
        client.config_set("slowlog-log-slower-than", current)


def slowlog_entries(client: redis.Redis, after_id: int, key: str) -> list[dict]:
    """The slow log's entries newer than `after_id` for commands on `key`."""
    entries = client.slowlog_get(1024)
    return [
        e
        for e in entries
        if e["id"] > after_id and len(e["command"].split()) > 1 and e["command"].split()[1] == key.encode()
    ]


def last_slowlog_id(client: redis.Redis) -> int:
    newest = client.slowlog_get(1)
    return newest[0]["id"] if newest else -1


@dataclass
class Probe:
    """A second client issuing one command at a time while something else runs, timing each."""

    endpoint: Endpoint
    command: Callable[[redis.Redis, int], object] = staticmethod(lambda r, i: r.ping())
    latencies_s: list[float] = field(default_factory=list)

    def __post_init__(self):
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        r = self.endpoint.client()
        i = 0
        while not self._stop.is_set():
            t0 = time.perf_counter()
            self.command(r, i)
            self.latencies_s.append(time.perf_counter() - t0)
            i += 1
        r.close()

    def __enter__(self) -> Probe:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        time.sleep(0.02)  # the probe is connected and running before the work starts
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def worst_s(self) -> float:
        return max(self.latencies_s) if self.latencies_s else 0.0

    @property
    def median_s(self) -> float:
        return statistics.median(self.latencies_s) if self.latencies_s else 0.0


def net_input_bytes(client: redis.Redis) -> int:
    return int(client.info("stats")["total_net_input_bytes"])


# --8<-- [end:instruments]


def seed_numbers(r: redis.Redis, keys: list[str]) -> None:
    pipe = r.pipeline(transaction=False)
    for i, key in enumerate(keys):
        pipe.set(key, 1000 + i)
    pipe.execute()


def incr_command_bytes(key: str) -> int:
    """Bytes one INCR of `key` takes on the wire (RESP)."""
    return len(f"*2\r\n$4\r\nINCR\r\n${len(key)}\r\n{key}\r\n".encode())
