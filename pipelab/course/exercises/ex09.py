"""Exercise 9, delete a pattern without stopping the server: SCAN with a COUNT and UNLINK in batches, never KEYS."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import redis

from ... import observe
from ...chapters.ch04.instruments import last_slowlog_id
from ...lab import Lab
from ...server import EmbeddedRedis, free_port
from .common import _call, _fail, _prefix, _solved, _values
from .ex08 import EX08_SCRIPTS

EX09_DOOMED = 100_000  # keys under the pattern: enough that one command over all of them takes tens of ms
EX09_KEPT = 100_000  # keys beside it, under pipelab:ex09: too, half of them session-archive:*
EX09_BOUND_MS = 10.0  # no command of the reader's may run longer (Redis's own default for "slow")
EX09_KEYS_PER_TRIP = 10  # deleted keys per round trip, at least: SCAN COUNT 100 gives about 25, one DEL per key 1
EX09_SLOWLOG_US = 1_000  # the check's server logs every command over 1 ms, so it can name the longest
EX09_CLIENT = "pipelab-ex09-yours"  # the name of the reader's connections, as the slow log records them
_MORE_ARGS = re.compile(rb"\.\.\. \((\d+) more arguments\)$")  # the slow log keeps 31 arguments and counts the rest


def _pattern() -> str:
    return f"{_prefix(9)}session:*"


def _keyspace(n: int, m: int) -> tuple[list[str], list[str]]:
    """The pattern's keys, and those beside it: half of them would match the pattern without its last ':'."""
    doomed = [f"{_prefix(9)}session:{i}" for i in range(n)]
    kept = [f"{_prefix(9)}user:{i}" if i % 2 else f"{_prefix(9)}session-archive:{i}" for i in range(m)]
    return doomed, kept


def _seed(client: redis.Redis, keys: list[str], chunk: int = 1_000) -> None:
    pipe = client.pipeline(transaction=False)
    for start in range(0, len(keys), chunk):
        pipe.mset({key: key for key in keys[start : start + chunk]})  # each key holds its own name
    pipe.execute()


class _RoundTrips:
    """What the reader's client sent: one round trip per command sent alone or per pipeline, by name.
    Past the limit it stops the reader's function, so one DEL per key does not run for seconds."""

    def __init__(self, limit: int):
        self.limit, self.trips, self.by_name, self.stopped = limit, 0, Counter(), ""
        self._name, self._connecting = "", False

    def connection_class(self) -> type[redis.Connection]:
        trips = self

        class Counted(redis.Connection):
            def on_connect_check_health(self, *args, **kwargs):
                trips._connecting = True  # the handshake (HELLO, CLIENT SETNAME) is not the reader's
                try:
                    return super().on_connect_check_health(*args, **kwargs)
                finally:
                    trips._connecting = False

            def send_command(self, *args, **kwargs):
                trips._name = str(args[0]).split()[0].upper() if args else ""
                return super().send_command(*args, **kwargs)

            def send_packed_command(self, command, check_health=True):
                if not trips._connecting:
                    trips.sent(trips._name or "a pipeline")
                trips._name = ""
                return super().send_packed_command(command, check_health)

        return Counted

    def sent(self, name: str) -> None:
        self.trips += 1
        self.by_name[name] += 1
        if self.limit and self.trips > self.limit:
            self.stopped = self.problem(self.trips, stopped=True)
            raise _fail(9, self.stopped)

    def problem(self, trips: int, stopped: bool = False) -> str:
        """Why the reader's function takes too many round trips, from what it sent most."""
        done = "had made" if stopped else "made"
        scans = self.by_name["SCAN"]
        if scans >= trips - scans:
            return (
                f"delete_matching {done} {trips:,} round trips, {scans:,} of them a SCAN, for {EX09_DOOMED:,} keys"
                + (", when the check stopped it" if stopped else "")
                + "; without a COUNT each SCAN walks about 10 buckets of the key table, so pass COUNT "
                "1000 to walk a thousand per call"
            )
        return (
            f"delete_matching {done} {trips:,} round trips, {trips - scans:,} of them not a SCAN (a DEL, an UNLINK "
            f"or a pipeline, about one per key), for {EX09_DOOMED:,} keys"
            + (", when the check stopped it" if stopped else "")
            + "; send each "
            "SCAN page's keys in one UNLINK, or queue one UNLINK per key on a pipeline and execute it every "
            "thousand keys"
        )


def _arguments(entry: dict) -> int:
    """How many arguments a slow log entry's command had, the cut ones included."""
    words = entry["command"].split(b" ... (")[0].split()
    more = _MORE_ARGS.search(entry["command"])
    return len(words) - 1 + (int(more[1]) if more else 0)


def _too_long(entry: dict) -> str:
    """One sentence on the reader's command that ran past the bound, by what it was."""
    name = _name(entry)
    ms = entry["duration"] / 1000
    if name == "SCAN":
        count = re.search(rb"COUNT (\d+)", entry["command"], re.IGNORECASE)
        if count:
            return (
                f"one SCAN with COUNT {int(count[1]):,} ran for {ms:.1f} ms, over the {EX09_BOUND_MS:g} ms "
                "bound: a COUNT that large walks much of the keyspace in one command; COUNT 1000 keeps each "
                "call near a millisecond"
            )
    if name in ("UNLINK", "DEL"):
        return (
            f"one {name} of {_arguments(entry):,} keys ran for {ms:.1f} ms, over the {EX09_BOUND_MS:g} ms "
            "bound; delete the keys as SCAN returns them, a page (or about a thousand keys) per call, "
            "not all at once"
        )
    if name in EX08_SCRIPTS:
        return (
            f"one {name} ran for {ms:.1f} ms, over the {EX09_BOUND_MS:g} ms bound: a script is one command, "
            "and the server serves no other client until it returns; send SCAN and UNLINK from your client, "
            "a page at a time"
        )
    return f"one {name} ran for {ms:.1f} ms, over the {EX09_BOUND_MS:g} ms bound; keep every command shorter"


def _changed_beside(client: redis.Redis, kept: list[str]) -> tuple[int, str]:
    """How many of the keys beside the pattern lost their value or gained an expiry, and the first one."""
    values = _values(client, kept)
    pipe = client.pipeline(transaction=False)
    for key in kept:
        pipe.ttl(key)
    ttls = pipe.execute()
    wrong = [
        (key, "deleted" if value is None else "expiring" if ttl != -1 else "rewritten")
        for key, value, ttl in zip(kept, values, ttls)
        if value != key.encode() or ttl != -1
    ]
    return len(wrong), f"{wrong[0][0]!r} ({wrong[0][1]})" if wrong else ""


def _left(client: redis.Redis, keys: list[str], chunk: int = 1_000) -> int:
    pipe = client.pipeline(transaction=False)
    for start in range(0, len(keys), chunk):
        pipe.exists(*keys[start : start + chunk])
    return sum(pipe.execute())


@dataclass
class DeleteRun:
    """One call of the reader's function on a freshly seeded keyspace, and what the server saw of it."""

    returned: object
    seconds: float
    trips: int
    by_name: dict
    calls: dict  # calls per command, INFO commandstats
    slow: list  # the reader's slow log entries

    @property
    def longest(self) -> dict | None:
        return max(self.slow, key=lambda e: e["duration"], default=None)

    @property
    def over(self) -> list[dict]:
        """The reader's commands that ran past the bound."""
        return [e for e in self.slow if e["duration"] > EX09_BOUND_MS * 1000]

    @property
    def over_by_name(self) -> Counter:
        return Counter(_name(e) for e in self.over)

    def too_long(self) -> dict | None:
        """The longest command past the bound whose name ran past it on most of its calls: a command long by
        design is long on every call, and a busy machine pauses one call in many, not most."""
        over = self.over_by_name
        long = [e for e in self.over if 2 * over[_name(e)] > self.calls.get(_name(e).lower(), 0)]
        return max(long, key=lambda e: e["duration"], default=None)

    def paused(self) -> str:
        """The commands past the bound that were few among their name's calls, in words; "" when none."""
        over = self.over_by_name
        if not over or self.too_long() is not None:
            return ""
        by_name = sorted(over.items())  # by name, as Java's check lists them
        ran = ", ".join(f"{k:,} of {self.calls.get(name.lower(), 0):,} {name}s" for name, k in by_name)
        return f" ({ran} ran past the bound, and most calls did not: a busy machine paused them, not your code)"


def _name(entry: dict) -> str:
    return entry["command"].split()[0].decode().upper()


def _run(admin: redis.Redis, handed: redis.Redis, trips: _RoundTrips, delete_matching: Callable) -> DeleteRun:
    last_id = last_slowlog_id(admin)
    before = observe.command_calls(admin)
    trips.trips, trips.by_name = 0, Counter()
    start = time.perf_counter()
    returned = _call(9, delete_matching, handed, _pattern())
    seconds = time.perf_counter() - start
    if trips.stopped:  # the reader's code caught the check's stop and carried on
        raise _fail(9, trips.stopped)
    calls = {k: v - before.get(k, 0) for k, v in observe.command_calls(admin).items() if v > before.get(k, 0)}
    slow = [e for e in admin.slowlog_get(1024) if e["id"] > last_id and e.get("client_name") == EX09_CLIENT.encode()]
    return DeleteRun(returned, seconds, trips.trips, dict(trips.by_name), calls, slow)


def check_ex09(lab: Lab, delete_matching: Callable) -> dict:
    n, m, pattern = EX09_DOOMED, EX09_KEPT, _pattern()
    doomed, kept = _keyspace(n, m)
    trips = _RoundTrips(limit=n // EX09_KEYS_PER_TRIP)
    # A server of the check's own: its slow log and counters hold the reader's commands and the check's alone.
    with (
        EmbeddedRedis(
            port=free_port(), args=["--slowlog-log-slower-than", str(EX09_SLOWLOG_US), "--slowlog-max-len", "1024"]
        ) as server,
        server.endpoint.client() as admin,
        redis.Redis(
            connection_pool=redis.ConnectionPool(
                connection_class=trips.connection_class(), client_name=EX09_CLIENT, **server.endpoint.client_kwargs()
            )
        ) as handed,
    ):
        _seed(admin, doomed + kept)
        print(
            f"{n:,} keys match {pattern!r}; {m:,} more lie beside it under {_prefix(9)} (half of them "
            f"{_prefix(9)}session-archive:*); the check's server logs every command over {EX09_SLOWLOG_US // 1000} ms"
        )
        run = _run(admin, handed, trips, delete_matching)
        changed, first = _changed_beside(admin, kept)
        if changed:
            raise _fail(
                9,
                f"{changed:,} of the {m:,} keys beside the pattern were touched, {first} first; MATCH exactly "
                f"the pattern you were given ({pattern!r}, the ':' included) and delete only the keys SCAN "
                "returns",
            )
        left = _left(admin, doomed)
        if left:
            raise _fail(
                9,
                f"{left:,} of the {n:,} keys matching {pattern!r} are still there; SCAN until the cursor comes "
                "back as 0, and delete every key each page returns, empty pages included",
            )
        if run.calls.get("keys"):
            worst = max((e["duration"] for e in run.slow if _name(e) == "KEYS"), default=None)
            ran = f", the longest for {worst / 1000:.1f} ms" if worst else ""
            raise _fail(
                9,
                f"KEYS ran {run.calls['keys']} time{'s' if run.calls['keys'] > 1 else ''}{ran}: it walks all "
                f"{n + m:,} keys in one command while every other client waits; walk them with SCAN and a "
                "COUNT (1000) instead, a page per call",
            )
        noise, runs = "", 1
        if run.too_long() is not None:
            # A command that is long by design is long every time; one that a busy machine paused is not.
            _seed(admin, doomed)
            again = _run(admin, handed, trips, delete_matching)
            if again.too_long() is not None:
                raise _fail(9, _too_long(max(run.too_long(), again.too_long(), key=lambda e: e["duration"])))
            noise = (
                f" (in a first run a {_name(run.too_long())} of {run.too_long()['duration'] / 1000:.1f} ms ran "
                "past the bound; a second run had no such command: the machine was busy, not your code)"
            )
            run, runs = again, 2
        paused = run.paused()
        noise += paused
        if run.trips > trips.limit:
            raise _fail(9, trips.problem(run.trips))
        if run.returned != n:
            raise _fail(
                9,
                f"delete_matching returned {run.returned!r} but deleted {n:,} keys; return the sum of what UNLINK "
                "replied (each reply is how many keys it removed)",
            )
    calls = run.calls
    longest_ms = run.longest["duration"] / 1000 if run.longest else None
    print(
        f"  deleted {n:,} keys in {run.seconds:.2f} s: {run.trips:,} round trips ({n / max(run.trips, 1):,.0f} keys "
        f"each), {calls.get('scan', 0):,} SCANs, {calls.get('unlink', 0):,} UNLINKs, {calls.get('del', 0):,} DELs, "
        "no KEYS; the longest command "
        + (f"{longest_ms:.1f} ms" if longest_ms else f"under {EX09_SLOWLOG_US // 1000} ms")
        + f"{noise}; the {m:,} keys beside the pattern untouched"
    )
    under = f"{longest_ms:.1f} ms" if longest_ms else f"{EX09_SLOWLOG_US // 1000} ms"
    _solved(
        9,
        f"{n:,} keys deleted in {run.trips:,} round trips, "
        + ("no command long by design" if paused else f"no command over {under}")
        + f" (bound {EX09_BOUND_MS:g} ms), {m:,} others untouched",
    )
    return {
        "doomed": n,
        "kept": m,
        "seconds": run.seconds,
        "round_trips": run.trips,
        "sent_by_name": run.by_name,
        "keys_per_round_trip": n / max(run.trips, 1),
        "longest_ms": longest_ms,
        "runs": runs,
        "calls": calls,
    }
