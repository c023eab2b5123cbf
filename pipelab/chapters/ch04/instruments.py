"""Chapter 4's instruments: what the sections observe on the server and on a second client."""
from __future__ import annotations

import statistics
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable
import redis

from ...observe import command_stats
from ...server import Endpoint
from .common import PREFIX


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
    return [e for e in entries if e["id"] > after_id and len(e["command"].split()) > 1
            and e["command"].split()[1] == key.encode()]


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

    def __enter__(self) -> "Probe":
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


# --8<-- [start:interleave]
def push_in_pipeline(r: redis.Redis, key: str, n: int, transaction: bool) -> None:
    # n RPUSH in one pipeline; transaction=True wraps them in MULTI ... EXEC.
    pipe = r.pipeline(transaction=transaction)
    for i in range(n):
        pipe.rpush(key, f"A:{i}")
    pipe.execute()


def foreign_entries_inside(entries: list[bytes]) -> int:
    # Another client's entries that landed between the pipeline's first and last entry.
    positions = [i for i, e in enumerate(entries) if e.startswith(b"A:")]
    return sum(1 for e in entries[positions[0]:positions[-1]] if not e.startswith(b"A:"))
# --8<-- [end:interleave]


# --8<-- [start:rcw]
def collatz(x: int) -> int:
    # The "compute" step: nothing Redis has a command for.
    return x // 2 if x % 2 == 0 else 3 * x + 1


COLLATZ_LUA = """
local x = tonumber(redis.call('GET', KEYS[1]))
if x % 2 == 0 then x = x / 2 else x = 3 * x + 1 end
redis.call('SET', KEYS[1], x)
return x
"""


def rcw_round_trips(r: redis.Redis, keys: list[str]) -> None:
    # Read, compute, write: two round trips per key, and the read must come back first.
    for key in keys:
        r.set(key, collatz(int(r.get(key))))


def rcw_two_pipelines(r: redis.Redis, keys: list[str]) -> None:
    # Every read in one pipeline, every write in another: two round trips in all, but a
    # write by someone else between the two is silently overwritten.
    reads = r.pipeline(transaction=False)
    for key in keys:
        reads.get(key)
    values = reads.execute()
    writes = r.pipeline(transaction=False)
    for key, value in zip(keys, values):
        writes.set(key, collatz(int(value)))
    writes.execute()


def rcw_eval_each(r: redis.Redis, keys: list[str]) -> None:
    # The computation moves into Redis: one round trip per key, the script's text every time.
    for key in keys:
        r.eval(COLLATZ_LUA, 1, key)


def rcw_evalsha_pipelined(r: redis.Redis, keys: list[str]) -> None:
    # SCRIPT LOAD once, then EVALSHA (40 hex digits instead of the text) for every key in one
    # pipeline: one round trip, and each key's read-compute-write is atomic.
    sha = r.script_load(COLLATZ_LUA)
    pipe = r.pipeline(transaction=False)
    for key in keys:
        pipe.evalsha(sha, 1, key)
    pipe.execute()


def rcw_eval_pipelined(r: redis.Redis, keys: list[str]) -> None:
    # One round trip too, but the script's text travels once per key.
    pipe = r.pipeline(transaction=False)
    for key in keys:
        pipe.eval(COLLATZ_LUA, 1, key)
    pipe.execute()
# --8<-- [end:rcw]


def seed_numbers(r: redis.Redis, keys: list[str]) -> None:
    pipe = r.pipeline(transaction=False)
    for i, key in enumerate(keys):
        pipe.set(key, 1000 + i)
    pipe.execute()


# --8<-- [start:bad]
def pipeline_with_bad_command(r: redis.Redis, key: str, counter: str, *, transaction: bool,
                              raise_on_error: bool, bad: str = "wrongtype"):
    # The second command fails: LPUSH on a string (WRONGTYPE, an error when it runs), or
    # LPUSH without a value (wrong number of arguments, an error before it can run).
    pipe = r.pipeline(transaction=transaction)
    pipe.set(key, "v")
    if bad == "wrongtype":
        pipe.lpush(key, "x")
    else:
        pipe.execute_command("LPUSH", key)
    pipe.incr(counter)
    pipe.get(key)
    return pipe.execute(raise_on_error=raise_on_error)
# --8<-- [end:bad]


# --8<-- [start:drop]
def incr_pipeline(r: redis.Redis, key: str, n: int, *, transaction: bool = False) -> list:
    # n INCR of one counter: the counter's value afterwards is the number the server applied.
    pipe = r.pipeline(transaction=transaction)
    for _ in range(n):
        pipe.incr(key)
    return pipe.execute()


def set_pipeline(r: redis.Redis, prefix: str, n: int) -> list:
    # The idempotent version of the same job: SET key:i 1 applied twice leaves the same state.
    pipe = r.pipeline(transaction=False)
    for i in range(n):
        pipe.set(f"{prefix}{i}", 1)
    return pipe.execute()


def incr_exactly_once(r: redis.Redis, key: str, n: int, request_id: str, attempts: int = 5) -> int:
    # A retry that cannot apply anything twice: MULTI/EXEC makes the job all or nothing, and a
    # marker written in the same transaction tells a retry whether an earlier attempt ran.
    # `r` must not retry by itself (no_retry_client). Returns the attempts it took.
    marker = f"{PREFIX}request:{request_id}"
    for attempt in range(1, attempts + 1):
        try:
            if r.exists(marker):
                return attempt  # the reply was lost, the work was not: nothing to re-send
            pipe = r.pipeline(transaction=True)
            for _ in range(n):
                pipe.incr(key)
            pipe.set(marker, 1, ex=3600)
            pipe.execute()
            return attempt
        except (redis.ConnectionError, redis.TimeoutError):
            time.sleep(0.05 * attempt)
    raise redis.ConnectionError(f"gave up after {attempts} attempts")
# --8<-- [end:drop]


def incr_command_bytes(key: str) -> int:
    """Bytes one INCR of `key` takes on the wire (RESP)."""
    return len(f"*2\r\n$4\r\nINCR\r\n${len(key)}\r\n{key}\r\n".encode())


# --8<-- [start:blocking]
def pipeline_with_blpop(r: redis.Redis, queue: str, marker: str, timeout_s: float, *, transaction: bool = False):
    # SET before, BLPOP on an empty list, SET after: the reply to the first SET and the
    # execution of the last wait for BLPOP to return (in MULTI, BLPOP does not block).
    pipe = r.pipeline(transaction=transaction)
    pipe.set(f"{marker}:before", 1)
    pipe.blpop([queue], timeout=timeout_s)
    pipe.set(f"{marker}:after", 1)
    return pipe.execute()
# --8<-- [end:blocking]


# --8<-- [start:timeout]
def slow_pipeline(r: redis.Redis, counter: str, key: str, length: int, count: int) -> list:
    # An INCR, then `count` LREM on a long list: the server works through all of them before
    # the replies go out, so the client's first read waits for the whole batch.
    pipe = r.pipeline(transaction=False)
    pipe.incr(counter)
    for i in range(count):
        pipe.lrem(key, 0, f"absent:{i}")
    return pipe.execute()


def in_batches(run, items: list, size: int) -> None:
    # The fix: batches small enough that each one's reply time stays under the timeout.
    for start in range(0, len(items), size):
        run(items[start:start + size])
# --8<-- [end:timeout]
