"""Chapter 4: what goes wrong with pipelines. Each pitfall as a workload whose symptom and fix can
be measured, plus the instruments the chapter reads them with (server time per command, the
slow log, a second client's latency, the bytes a mode sent)."""
from __future__ import annotations

import statistics
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

import matplotlib.pyplot as plt
import redis
from matplotlib.figure import Figure
from redis.backoff import NoBackoff
from redis.retry import Retry

from .. import observe, plots
from ..jbang import fact
from ..params import Size
from ..observe import command_stats
from ..results import md_table, quantity
from ..server import Endpoint, delete_lab_keys
from .claims import Claim, Published

PREFIX = "pipelab:ch04:"


def no_retry_client(endpoint: Endpoint, **kwargs) -> redis.Redis:
    """redis-py 8 retries connection errors and timeouts 10 times by default; this client does not."""
    return endpoint.client(retry=Retry(NoBackoff(), 0), **kwargs)


# --8<-- [start:lrem]
def build_list(r: redis.Redis, key: str, length: int, chunk: int = 10_000) -> None:
    # item:0 is the newest (head), item:<length-1> the oldest (tail), as with LPUSH-ed events.
    r.unlink(key)
    for start in range(0, length, chunk):
        r.rpush(key, *(f"item:{i}" for i in range(start, min(start + chunk, length))))


def drop_oldest_lrem(r: redis.Redis, key: str, length: int, count: int) -> None:
    # Remove the `count` oldest items by value. LREM with count 0 removes every occurrence,
    # so it reads the whole list for each command: O(N) however few items go.
    pipe = r.pipeline(transaction=False)
    for i in range(count):
        pipe.lrem(key, 0, f"item:{length - 1 - i}")
    assert pipe.execute() == [1] * count


def drop_oldest_ltrim(r: redis.Redis, key: str, count: int) -> None:
    # The same job by position: keep everything but the last element. LTRIM costs what it
    # removes (one element here), whatever the list's length.
    pipe = r.pipeline(transaction=False)
    for _ in range(count):
        pipe.ltrim(key, 0, -2)
    pipe.execute()
# --8<-- [end:lrem]


def restore_oldest(r: redis.Redis, key: str, length: int, count: int) -> None:
    """Put back the `count` oldest items the last drop removed (untimed set-up between repetitions)."""
    if r.llen(key) == length - count:
        r.rpush(key, *(f"item:{i}" for i in range(length - count, length)))
    assert r.llen(key) == length and r.lindex(key, -1) == f"item:{length - 1}".encode()


# --- instruments --------------------------------------------------------------------------

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


# --- the chapter's parameters, declared once (the notebook passes them to the Java examples) ---

LENGTHS = Size(full=[1_000, 10_000, 100_000, 1_000_000], quick=[1_000, 10_000, 100_000])
P = 100  # commands per LREM/LTRIM pipeline
REPEAT = Size(full=3, quick=1)
SLOWLOG_US = 1_000  # the slow log's threshold while the chapter runs (on a server the lab started)
N_IL = Size(full=20_000, quick=2_000)
TRIALS = Size(full=5, quick=3)
REPEAT_IL = Size(full=5, quick=2)
RCW_KEYS = {0: Size(full=5_000, quick=300), 1: Size(full=500, quick=100)}  # keys per RTT (ms)
REPEAT_RCW = Size(full=3, quick=1)
N_DROP = Size(full=20_000, quick=5_000)
CUT_MS = 100
BLPOP_TIMEOUTS = Size(full=[0.1, 0.25, 0.5], quick=[0.1, 0.2])
TIMEOUT_S = 0.05
DEFAULT_RETRIES = 10  # redis-py 8's Retry count when none is given (redis/_defaults.py)
LONG = 100_000  # elements of the list the slow pipeline's LREMs scan
N_FAST = Size(full=200_000, quick=100_000)
N_JAVA_TIMEOUT = Size(full=100_000, quick=50_000)  # either outlasts 25 ms many times over


def fact_table(title: str, facts: dict) -> str:
    return md_table([title, "value"], [[k, v] for k, v in facts.items()])


def yes_no(flag: bool) -> dict:
    return quantity(1 if flag else 0, "count", "yes" if flag else "no")


# --- LREM against LTRIM -----------------------------------------------------------------------

def measure_lrem(lab, lengths: list[int], repeat: int) -> tuple[list, list, int]:
    """Per length and way: the timed pipeline of P commands, then one observed run (server µs per
    call, server CPU, slow log, a second client's wait). Returns (measurements, rows, threshold)."""
    r = lab.client()
    key = PREFIX + "list"
    counters = observe.Counters(lab.endpoint)
    rows, runs = [], []
    with slowlog_threshold(r, SLOWLOG_US, allowed=lab.owned) as threshold_us:
        for length in lengths:
            build_list(r, key, length)
            for way in ("lrem", "ltrim"):
                job = ((lambda: drop_oldest_lrem(r, key, length, P)) if way == "lrem"
                       else (lambda: drop_oldest_ltrim(r, key, P)))
                restore = lambda: restore_oldest(r, key, length, P)  # noqa: E731
                runs.append(lab.measure(f"{way.upper()} ×{P}, list of {length:,}", job, ops=P, repeat=repeat,
                                        setup=restore, way=way, length=length))
                restore()
                last_id = last_slowlog_id(r)
                with server_time(lab.endpoint, way) as usec, counters.measure() as delta, Probe(lab.endpoint) as probe:
                    job()
                slow = slowlog_entries(r, last_id, key)
                restore()
                rows.append({"way": way, "length": length, "median_s": runs[-1].median, "usec_per_call": usec[way],
                             "server_cpu_pct": 100 * delta.server_cpu_s / delta.wall_s, "observed_wall_s": delta.wall_s,
                             "probe_worst_ms": probe.worst_s * 1e3, "probe_median_ms": probe.median_s * 1e3,
                             "slowlog": len(slow), "slowlog_max_us": max((e["duration"] for e in slow), default=0)})
        r.unlink(key)
    counters.close()
    r.close()
    return runs, rows, threshold_us


def lrem_table(rows: list, threshold_us: int) -> str:
    return md_table(["way", "list length", f"pipeline of {P} (median)", "server µs per call", "server CPU",
                     "second client's worst wait", f"slow log entries (> {threshold_us:,} µs)"],
                    [[x["way"].upper(), f"{x['length']:,}", f"{x['median_s'] * 1e3:,.2f} ms", f"{x['usec_per_call']:,.1f}",
                      f"{x['server_cpu_pct']:.0f}%", f"{x['probe_worst_ms']:,.1f} ms", x["slowlog"]] for x in rows])


@plots.draws("ch04/lrem")
def lrem_plot(doc: dict) -> Figure:
    rows, java_facts, p = doc["params"]["rows"], doc["params"]["java_facts"], doc["params"]["p"]
    lengths = sorted({x["length"] for x in rows})
    series = lambda way, key: [x[key] for x in rows if x["way"] == way]  # noqa: E731
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for way, color in (("lrem", plots.COLORS["one by one"]), ("ltrim", plots.COLORS["pipelined"])):
        ax1.plot(lengths, series(way, "usec_per_call"), "o-", color=color, label=f"{way.upper()} (redis-py run)")
        ax1.plot(lengths, [java_facts.get(f"{way}_usec_per_call_{n}") for n in lengths], "x:", color=color,
                 label=f"{way.upper()} (Jedis run)")
        ax2.plot(lengths, series(way, "probe_worst_ms"), "o-", color=color, label=way.upper())
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("list length (elements)")
        ax.legend()
    ax1.set_ylabel("server µs per command (INFO commandstats)")
    ax1.set_title("Cost of one command against list length")
    ax2.set_ylabel("worst PING latency, ms")
    ax2.set_title(f"What a second client waits while {p} run")
    fig.tight_layout()
    return fig


LREM_ALT = ("Two log-log line charts against list length: server microseconds per LREM grow in proportion to the "
            "length while LTRIM stays flat; a second client's worst PING latency grows the same way under LREM")


def lrem_summary(rows: list, threshold_us: int, java_facts: dict) -> dict:
    lengths = sorted({x["length"] for x in rows})
    first, last = lengths[0], lengths[-1]
    row = {(x["way"], x["length"]): x for x in rows}
    at = lambda way, length, key: row[(way, length)][key]  # noqa: E731
    growth = lambda way: at(way, last, "usec_per_call") / at(way, first, "usec_per_call")  # noqa: E731
    return {"p": quantity(P, "count"), "smallest": quantity(first, "count"), "largest": quantity(last, "count"),
            "lrem_usec_smallest": quantity(at("lrem", first, "usec_per_call"), "us"),
            "lrem_usec_largest": quantity(at("lrem", last, "usec_per_call"), "us"),
            "ltrim_usec_smallest": quantity(at("ltrim", first, "usec_per_call"), "us"),
            "ltrim_usec_largest": quantity(at("ltrim", last, "usec_per_call"), "us"),
            "lrem_growth": quantity(growth("lrem"), "x"), "ltrim_growth": quantity(growth("ltrim"), "x"),
            "length_growth": quantity(last / first, "x"),
            "lrem_pipeline_largest_ms": quantity(at("lrem", last, "median_s") * 1e3, "ms"),
            "ltrim_pipeline_largest_ms": quantity(at("ltrim", last, "median_s") * 1e3, "ms"),
            "lrem_over_ltrim_largest": quantity(at("lrem", last, "median_s") / at("ltrim", last, "median_s"), "x"),
            "lrem_cpu_largest": quantity(at("lrem", last, "server_cpu_pct"), "%"),
            "ltrim_cpu_largest": quantity(at("ltrim", last, "server_cpu_pct"), "%"),
            "probe_lrem_largest_ms": quantity(at("lrem", last, "probe_worst_ms"), "ms"),
            "probe_ltrim_largest_ms": quantity(at("ltrim", last, "probe_worst_ms"), "ms"),
            "probe_median_ms": quantity(statistics.median(x["probe_median_ms"] for x in rows), "ms"),
            "slowlog_lrem_largest": quantity(at("lrem", last, "slowlog"), "count"),
            "slowlog_ltrim_largest": quantity(at("ltrim", last, "slowlog"), "count"),
            "slowlog_lrem_max_us": quantity(at("lrem", last, "slowlog_max_us"), "us"),
            "slowlog_threshold_us": quantity(threshold_us, "us"),
            "java_lrem_usec_largest": quantity(java_facts.get(f"lrem_usec_per_call_{last}"), "us"),
            "java_ltrim_usec_largest": quantity(java_facts.get(f"ltrim_usec_per_call_{last}"), "us")}


# --- another client's commands inside a pipeline --------------------------------------------------

def interleave_trials(lab, n: int, trials: int) -> dict:
    """B's entries that landed inside A's pipeline of n RPUSH, per trial: {transaction: [count, ...]}."""
    r = lab.client()
    log = PREFIX + "log"
    inside = {False: [], True: []}

    def run(a):
        for transaction in (False, True):
            for _ in range(trials):
                r.unlink(log)
                with Probe(lab.endpoint, command=lambda c, i: c.rpush(log, f"B:{i}")):
                    push_in_pipeline(a, log, n, transaction)
                inside[transaction].append(foreign_entries_inside(r.lrange(log, 0, -1)))
        r.unlink(log)

    if lab.rtt_available:
        # On loopback A's pipeline arrives almost at once; over a real network it takes a while.
        # A bandwidth toxic makes A's bytes take about 100 ms, the way a slower link would.
        with lab.faults() as faults:
            a = faults.link.client()
            a.ping()
            faults.add(("a-link", "bandwidth", "upstream", {"rate": max(1, n * 48 // 1024 * 10)}))
            run(a)
            a.close()
    else:
        run(r)
    r.close()
    return inside


def measure_transaction_cost(lab, n: int, repeat: int) -> tuple[list, dict, dict]:
    """A's pipeline and A's MULTI/EXEC timed alone, B's worst wait (median of runs) behind each,
    and what a 3-command transaction sent."""
    r = lab.client()
    log = PREFIX + "log"
    reset = lambda: r.unlink(log)  # noqa: E731
    runs, worst = [], {}
    for transaction in (False, True):
        label = "MULTI/EXEC" if transaction else "pipeline"
        runs.append(lab.measure(f"{n:,} RPUSH, {label}", lambda: push_in_pipeline(r, log, n, transaction), ops=n,
                                repeat=repeat, setup=reset, transaction=transaction))
        waits = []
        for _ in range(repeat):
            reset()
            with Probe(lab.endpoint) as probe:
                push_in_pipeline(r, log, n, transaction)
            waits.append(probe.worst_s)
        worst[transaction] = statistics.median(waits)
    reset()
    with observe.wire(lab.endpoint) as tx_wire:
        push_in_pipeline(r, log, 3, True)
    reset()
    r.close()
    return runs, worst, tx_wire


def interleave_table(inside: dict, runs: list, worst: dict, n: int) -> str:
    return md_table(["mode", "trials with B inside A", "B entries inside A (per trial)", f"time for {n:,} RPUSH",
                     "B's worst wait (median of runs)"],
                    [[name, sum(1 for x in inside[tx] if x), inside[tx], m.spread(), f"{worst[tx] * 1e3:.2f} ms"]
                     for name, tx, m in (("pipeline", False, runs[0]), ("MULTI/EXEC", True, runs[1]))])


def interleave_summary(inside: dict, runs: list, worst: dict, n: int, trials: int) -> dict:
    plain, multi = runs
    return {"n": quantity(n, "count"), "trials": quantity(trials, "count"),
            "pipeline_trials_interleaved": quantity(sum(1 for x in inside[False] if x), "count"),
            "multi_trials_interleaved": quantity(sum(1 for x in inside[True] if x), "count"),
            "pipeline_inside_max": quantity(max(inside[False]), "count"),
            "multi_inside_max": quantity(max(inside[True]), "count"),
            "pipeline_ms": quantity(plain.median * 1e3, "ms"), "multi_ms": quantity(multi.median * 1e3, "ms"),
            "multi_cost": quantity(multi.median / plain.median, "x"),
            "probe_pipeline_ms": quantity(worst[False] * 1e3, "ms"), "probe_multi_ms": quantity(worst[True] * 1e3, "ms")}


# --- read, compute, write ----------------------------------------------------------------------

RCW_MODES = {"round trips (GET, then SET)": rcw_round_trips, "two pipelines (not atomic)": rcw_two_pipelines,
             "EVAL per key": rcw_eval_each, "EVAL, pipelined": rcw_eval_pipelined,
             "SCRIPT LOAD + EVALSHA, pipelined": rcw_evalsha_pipelined}


def measure_rcw(lab, sizes: dict, repeat: int) -> tuple[list, list]:
    """Every read-compute-write mode at each RTT (ms) of `sizes` {rtt: keys}: time and bytes sent per key;
    each mode must leave the same values."""
    r = lab.client()
    runs, rows = [], []
    for rtt, n in sizes.items():
        keys = [f"{PREFIX}num:{i}" for i in range(n)]
        with lab.rtt(rtt) as link:
            c = link.client()
            for mode, run in RCW_MODES.items():
                m = lab.measure(f"{mode}, {rtt} ms", lambda: run(c, keys), ops=n, repeat=repeat,
                                setup=lambda: seed_numbers(r, keys), mode=mode, rtt_ms=rtt)
                seed_numbers(r, keys)
                before = net_input_bytes(r)
                run(c, keys)
                sent = net_input_bytes(r) - before
                assert r.mget(keys) == [str(collatz(1000 + i)).encode() for i in range(n)], mode  # same result
                runs.append(m)
                rows.append({"mode": mode, "rtt_ms": rtt, "n": n, "median_s": m.median, "us_per_key": m.per_op_us,
                             "bytes_per_key": sent / n})
            c.close()
        r.unlink(*keys)
    r.close()
    return runs, rows


def rcw_table(rows: list) -> str:
    return md_table(["mode", "RTT", "keys", "time (median)", "µs per key", "bytes sent per key"],
                    [[x["mode"], f"{x['rtt_ms']} ms", f"{x['n']:,}", f"{x['median_s'] * 1e3:,.1f} ms",
                      f"{x['us_per_key']:,.1f}", f"{x['bytes_per_key']:.0f}"] for x in rows])


@plots.draws("ch04/rcw")
def rcw_plot(doc: dict) -> Figure:
    rows = doc["params"]["rows"]
    rtts = sorted({x["rtt_ms"] for x in rows})
    fig, axes = plt.subplots(1, len(rtts), figsize=(12, 4.5), squeeze=False)
    for ax, rtt in zip(axes[0], rtts):
        sel = [x for x in rows if x["rtt_ms"] == rtt]
        colors = [plots.COLORS["one by one"] if "per key" in x["mode"] or "round" in x["mode"]
                  else plots.COLORS["pipelined"] for x in sel]
        plots.per_op_bars(ax, [x["mode"] for x in sel], [x["us_per_key"] for x in sel], colors,
                          xlabel="µs per key (median, log scale)",
                          title=("loopback" if rtt == 0 else f"{rtt} ms injected RTT") + f", {sel[0]['n']:,} keys")
    fig.tight_layout()
    return fig


RCW_ALT = ("Horizontal bar charts, log scale: microseconds per key for five ways to read, compute and write; "
           "the two round-trip modes are slowest, the pipelined script fastest")


def rcw_summary(rows: list) -> dict:
    def rcw(mode, rtt, key="us_per_key"):
        hit = [x[key] for x in rows if x["mode"] == mode and x["rtt_ms"] == rtt]
        return hit[0] if hit else None

    def speed(a, b, rtt):
        return rcw(a, rtt) / rcw(b, rtt) if rcw(a, rtt) and rcw(b, rtt) else None

    rt, two, each, evalp, sha = RCW_MODES
    return {"round_trips_us": quantity(rcw(rt, 0), "us"), "evalsha_us": quantity(rcw(sha, 0), "us"),
            "two_pipelines_us": quantity(rcw(two, 0), "us"), "eval_each_us": quantity(rcw(each, 0), "us"),
            "evalsha_speedup": quantity(speed(rt, sha, 0), "x"),
            "round_trips_us_rtt": quantity(rcw(rt, 1), "us"), "evalsha_us_rtt": quantity(rcw(sha, 1), "us"),
            "eval_each_us_rtt": quantity(rcw(each, 1), "us"), "evalsha_speedup_rtt": quantity(speed(rt, sha, 1), "x"),
            "eval_bytes": quantity(rcw(evalp, 0, "bytes_per_key"), "num"),
            "evalsha_bytes": quantity(rcw(sha, 0, "bytes_per_key"), "num"),
            "round_trip_bytes": quantity(rcw(rt, 0, "bytes_per_key"), "num")}


# --- one bad command in a pipeline ---------------------------------------------------------------

def bad_command_cases(r: redis.Redis) -> list:
    """What redis-py returns or raises for each bad command, with and without MULTI/EXEC and
    raise_on_error, and whether the INCR after the bad command ran."""
    bad_key, counter = PREFIX + "bad", PREFIX + "bad:counter"
    rows = []
    for bad in ("wrongtype", "arity"):
        for transaction in (False, True):
            for raise_on_error in (True, False):
                r.unlink(bad_key, counter)
                try:
                    out = pipeline_with_bad_command(r, bad_key, counter, transaction=transaction,
                                                    raise_on_error=raise_on_error, bad=bad)
                    seen = "results: " + ", ".join(type(x).__name__ if isinstance(x, Exception) else repr(x) for x in out)
                except Exception as err:  # noqa: BLE001  (what surfaces is the finding)
                    seen = f"raises {type(err).__name__}: {str(err)[:70]}"
                rows.append({"bad": bad, "transaction": transaction, "raise_on_error": raise_on_error, "seen": seen,
                             "later_ran": r.get(counter) == b"1"})
    r.unlink(bad_key, counter)
    return rows


def errors_table(rows: list) -> str:
    return md_table(["bad command", "MULTI/EXEC", "raise_on_error", "what redis-py returns", "INCR after it ran"],
                    [[x["bad"], x["transaction"], x["raise_on_error"], x["seen"], "yes" if x["later_ran"] else "no"]
                     for x in rows])


def errors_summary(rows: list, java_facts: dict) -> dict:
    def row(bad, transaction, raise_on_error):
        return next(x for x in rows if (x["bad"], x["transaction"], x["raise_on_error"]) == (bad, transaction, raise_on_error))

    java_clients = sorted({k.split("_")[0] for k in java_facts if k.endswith("_later_commands_ran")})
    plain = row("wrongtype", False, True)
    return {"redispy_later_ran": yes_no(plain["later_ran"]),
            "redispy_multi_later_ran": yes_no(row("wrongtype", True, True)["later_ran"]),
            "redispy_arity_multi_later_ran": yes_no(row("arity", True, False)["later_ran"]),
            "redispy_raise": quantity(0, "count", plain["seen"]),
            "later_ran_everywhere": quantity(sum(1 for c in java_clients if java_facts[f"{c}_later_commands_ran"])
                                             + plain["later_ran"], "count"),
            "clients_checked": quantity(len(java_clients) + 1, "count"),
            } | {f"{c}_{what}": quantity(0, "count", java_facts.get(f"{c}_{what}", "not reported"))
                 for c in ("jedis", "lettuce", "redisson", "spring") for what in ("error_surfaced", "results")}


# --- a connection cut halfway ------------------------------------------------------------------

def drop_scenarios(lab, n: int) -> dict:
    """The cut and lost-reply scenarios through toxiproxy: per scenario, what the client saw, what
    the server applied and the connections opened."""
    r = lab.client()
    counter, set_prefix = PREFIX + "drop:counter", PREFIX + "drop:set:"
    # Enough bandwidth for about a quarter of the pipeline before the reset.
    rate_kb_s = max(1, int(n * incr_command_bytes(counter) * 0.25 / 1024 / (CUT_MS / 1000)))
    cut = [("slow", "bandwidth", "upstream", {"rate": rate_kb_s}), ("cut", "reset_peer", "downstream", {"timeout": CUT_MS})]
    # Replies lost: the whole job reaches Redis and runs; every reply is dropped and the connection closes.
    lost = [("lost", "timeout", "downstream", {"timeout": CUT_MS})]
    count = lambda: int(r.get(counter) or 0)  # noqa: E731
    keys_set = lambda: sum(1 for _ in r.scan_iter(match=set_prefix + "*", count=1000))  # noqa: E731
    drop = {}

    def attempt(name, client_factory, job, *, blip=False, toxics=cut, applied=count):
        # Connect first (toxics would also cut the handshake), then put the toxics on, then run the job.
        conns0 = r.info("stats")["total_connections_received"]
        with lab.faults() as faults:
            c = client_factory(faults.link.endpoint)
            c.ping()
            faults.add(*toxics)
            timer = faults.clear_after(4 * CUT_MS / 1000) if blip else None  # ends well after the reset
            try:
                out = job(c)
                outcome = f"returned {len(out) if isinstance(out, list) else out}"
            except Exception as err:  # noqa: BLE001
                outcome = type(err).__name__
            if timer:
                timer.join()
        time.sleep(0.2)  # let the server finish what reached it
        drop[name] = {"outcome": outcome, "applied": applied(),
                      "connections": r.info("stats")["total_connections_received"] - conns0}
        c.close()

    def then(name, job, applied=count):  # the application re-sends the whole job on a good connection
        job(r)
        drop[name] = {"outcome": "returned", "applied": applied(), "connections": 0}

    incr = lambda c: incr_pipeline(c, counter, n)  # noqa: E731
    incr_tx = lambda c: incr_pipeline(c, counter, n, transaction=True)  # noqa: E731
    r.unlink(counter)
    attempt("cut, no retry", no_retry_client, incr)
    then("blind retry", incr)
    r.unlink(counter)
    attempt("redis-py's own retry, blip", lambda e: e.client(), incr, blip=True)
    r.unlink(counter)
    attempt("MULTI/EXEC, no retry", no_retry_client, incr_tx)
    then("MULTI/EXEC, then retry", incr_tx)
    r.unlink(counter)
    attempt("replies lost, MULTI/EXEC, redis-py's own retry, blip", lambda e: e.client(), incr_tx, blip=True, toxics=lost)
    r.unlink(counter)
    request = f"job-{time.time_ns()}"
    attempt("replies lost, MULTI/EXEC + marker, blip", no_retry_client,
            lambda c: incr_exactly_once(c, counter, n, request), blip=True, toxics=lost)
    r.unlink(counter, f"{PREFIX}request:{request}")
    sets = lambda c: set_pipeline(c, set_prefix, n)  # noqa: E731
    attempt("SET (idempotent), cut, no retry", no_retry_client, sets, applied=keys_set)
    then("SET (idempotent), blind retry", sets, applied=keys_set)
    delete_lab_keys(r, set_prefix + "*")
    r.close()
    return drop


def drop_table(drop: dict, n: int) -> str:
    return md_table(["scenario", "what the client saw", "applied on the server", f"÷ {n:,}", "connections"],
                    [[name, x["outcome"], f"{x['applied']:,}", f"{x['applied'] / n:.2f}", x["connections"]]
                     for name, x in drop.items()])


def drop_summary(drop: dict, n: int, java) -> dict:
    applied = lambda name: quantity(drop[name]["applied"] if name in drop else None, "count")  # noqa: E731
    retry = drop.get("redis-py's own retry, blip", {})
    return {"n": quantity(n, "count"), "cut_ms": quantity(CUT_MS, "ms"),
            "cut_applied": applied("cut, no retry"),
            "cut_share": quantity(100 * drop["cut, no retry"]["applied"] / n if drop else None, "%"),
            "blind_retry_applied": applied("blind retry"),
            "library_retry_applied": applied("redis-py's own retry, blip"),
            "library_retry_outcome": quantity(0, "count", retry.get("outcome", "–")),
            "library_retry_connections": quantity(retry.get("connections"), "count"),
            "tx_cut_applied": applied("MULTI/EXEC, no retry"),
            "tx_retry_applied": applied("MULTI/EXEC, then retry"),
            "lost_tx_library_retry_applied": applied("replies lost, MULTI/EXEC, redis-py's own retry, blip"),
            "lost_exactly_once_applied": applied("replies lost, MULTI/EXEC + marker, blip"),
            "idempotent_cut_applied": applied("SET (idempotent), cut, no retry"),
            "idempotent_retry_applied": applied("SET (idempotent), blind retry"),
            "jedis_cut_applied": fact(java, "pipeline_applied"),
            "jedis_blind_retry": fact(java, "blind_retry_counter"),
            "jedis_tx_applied": fact(java, "transaction_applied"),
            "jedis_tx_retry": fact(java, "transaction_retry_counter"),
            "lettuce_futures_ok": fact(java, "lettuce_futures_ok"),
            "lettuce_futures_failed": fact(java, "lettuce_futures_failed"),
            "lettuce_counter": fact(java, "lettuce_counter"),
            "lettuce_duplicates": fact(java, "lettuce_duplicates")}


# --- BLPOP in a pipeline -------------------------------------------------------------------------

def blocking_cases(lab, timeouts: list) -> list:
    """When the SETs before and after a BLPOP on an empty list became visible to another client."""
    r = lab.client()
    queue, mark = PREFIX + "queue", PREFIX + "mark"
    rows = []
    for transaction in (False, True):
        for timeout in timeouts:
            r.unlink(queue, f"{mark}:before", f"{mark}:after")
            seen = {}

            def watch(c, i):
                for name in ("before", "after"):
                    if name not in seen and c.exists(f"{mark}:{name}"):
                        seen[name] = time.perf_counter()

            with Probe(lab.endpoint, command=watch):
                start = time.perf_counter()
                out = pipeline_with_blpop(r, queue, mark, timeout, transaction=transaction)
                elapsed = time.perf_counter() - start
                time.sleep(0.01)
            rows.append({"transaction": transaction, "timeout_s": timeout, "elapsed_ms": elapsed * 1e3,
                         "before_ms": (seen["before"] - start) * 1e3, "after_ms": (seen["after"] - start) * 1e3,
                         "blpop_reply": repr(out[1])})
    r.unlink(queue, f"{mark}:before", f"{mark}:after")
    r.close()
    return rows


def blocking_table(rows: list) -> str:
    return md_table(["MULTI/EXEC", "BLPOP timeout", "pipeline took", "SET before visible at", "SET after visible at",
                     "BLPOP replied"],
                    [[x["transaction"], f"{x['timeout_s'] * 1e3:.0f} ms", f"{x['elapsed_ms']:.1f} ms",
                      f"{x['before_ms']:.1f} ms", f"{x['after_ms']:.1f} ms", x["blpop_reply"]] for x in rows])


def blocking_summary(rows: list) -> dict:
    longest = max((x for x in rows if not x["transaction"]), key=lambda x: x["timeout_s"])
    in_multi = max((x for x in rows if x["transaction"]), key=lambda x: x["timeout_s"])
    return {"timeout_ms": quantity(longest["timeout_s"] * 1e3, "ms"), "pipeline_ms": quantity(longest["elapsed_ms"], "ms"),
            "after_ms": quantity(longest["after_ms"], "ms"), "before_ms": quantity(longest["before_ms"], "ms"),
            "multi_ms": quantity(in_multi["elapsed_ms"], "ms")}


# --- a client timeout against a long pipeline ----------------------------------------------------

def timeout_cases(lab, n_fast: int) -> tuple[list, dict]:
    """A fast big pipeline, a slow one without and with redis-py's retries, and the slow one in
    batches, each under a TIMEOUT_S socket timeout; sized from the server's measured LREM cost."""
    r = lab.client()
    slow_list, counter = PREFIX + "long", PREFIX + "timeout:counter"
    build_list(r, slow_list, LONG)
    samples = []
    for _ in range(5):
        with server_time(lab.endpoint, "lrem") as usec:
            slow_pipeline(r, counter, slow_list, LONG, 5)
        samples.append(usec["lrem"] / 1e6)
    per_call_s = min(samples)  # the fastest the server did it: sizes below hold even on a quiet server
    slow_n = max(4, int(5 * TIMEOUT_S / per_call_s))  # about five timeouts' worth of server time
    batch = max(1, int(0.3 * TIMEOUT_S / max(samples)))  # under a third of a timeout even on a busy server
    rows = []

    def case(name, client, job, runs_expected=1, sends=2):
        r.unlink(counter)
        start = time.perf_counter()
        try:
            job(client)
            outcome = "ok"
        except Exception as err:  # noqa: BLE001
            outcome = type(err).__name__
        elapsed = time.perf_counter() - start
        time.sleep(slow_n * per_call_s * sends + 0.2)  # copies still queued on the server finish first
        # Each pipeline starts with an INCR: the counter says how many pipelines the server ran.
        rows.append({"case": name, "outcome": outcome, "elapsed_s": elapsed, "head_ran": int(r.get(counter) or 0),
                     "runs_expected": runs_expected})
        client.close()

    fast_keys = [f"{PREFIX}fast:{i}" for i in range(n_fast)]

    def fast_job(c):
        pipe = c.pipeline(transaction=False)
        pipe.incr(counter)
        for key in fast_keys:
            pipe.set(key, 1)
        pipe.execute()

    case(f"{n_fast:,} SET, one pipeline", lab.client(socket_timeout=TIMEOUT_S), fast_job)
    r.unlink(*fast_keys)
    slow = lambda c: slow_pipeline(c, counter, slow_list, LONG, slow_n)  # noqa: E731
    case(f"{slow_n} LREM, one pipeline, no retry", no_retry_client(lab.endpoint, socket_timeout=TIMEOUT_S), slow)
    case(f"{slow_n} LREM, one pipeline, redis-py's default retry", lab.client(socket_timeout=TIMEOUT_S), slow,
         sends=1 + DEFAULT_RETRIES)
    batched = lambda c: in_batches(lambda part: slow_pipeline(c, counter, slow_list, LONG, len(part)),  # noqa: E731
                                   list(range(slow_n)), batch)
    case(f"{slow_n} LREM in batches of {batch}", lab.client(socket_timeout=TIMEOUT_S), batched,
         runs_expected=-(-slow_n // batch))
    r.unlink(slow_list, counter)
    r.close()
    return rows, {"slow_n": slow_n, "batch": batch, "lrem_per_call_s": per_call_s, "timeout_s": TIMEOUT_S}


def timeout_table(rows: list) -> str:
    return md_table(["case", "outcome", "client time", "pipelines the server ran", "pipelines sent by the application"],
                    [[x["case"], x["outcome"], f"{x['elapsed_s']:.2f} s", x["head_ran"], x["runs_expected"]] for x in rows])


def timeout_summary(rows: list, sizing: dict, n_fast: int, java) -> dict:
    fast, slow_once, slow_retry, in_parts = rows
    return {"timeout_ms": quantity(TIMEOUT_S * 1e3, "ms"), "fast_n": quantity(n_fast, "count"),
            "fast_s": quantity(fast["elapsed_s"], "s"), "fast_outcome": quantity(0, "count", fast["outcome"]),
            "slow_n": quantity(sizing["slow_n"], "count"), "batch": quantity(sizing["batch"], "count"),
            "lrem_ms": quantity(sizing["lrem_per_call_s"] * 1e3, "ms"),
            "slow_outcome": quantity(0, "count", slow_once["outcome"]),
            "retry_head_ran": quantity(slow_retry["head_ran"], "count"),
            "retry_s": quantity(slow_retry["elapsed_s"], "s"),
            "batched_outcome": quantity(0, "count", in_parts["outcome"]),
            "java_n": quantity(java.data["size"], "count"),
            "redisson_timeout_ms": fact(java, "redisson_response_timeout_ms", "ms"),
            "redisson_once_outcome": fact(java, "redisson_timeout_no_retry_outcome"),
            "redisson_once_elapsed_ms": fact(java, "redisson_timeout_no_retry_elapsed_ms", "ms"),
            "redisson_once_applied": fact(java, "redisson_timeout_no_retry_applied"),
            "redisson_retry_outcome": fact(java, "redisson_timeout_default_retry_outcome"),
            "redisson_retry_set_calls": fact(java, "redisson_timeout_default_retry_set_calls"),
            "redisson_batch": fact(java, "redisson_small_batch_size"),
            "jedis_so_timeout_ms": fact(java, "jedis_so_timeout_ms", "ms"),
            "jedis_outcome": fact(java, "jedis_pipeline_outcome"),
            "lettuce_timeout_ms": fact(java, "lettuce_timeout_ms", "ms"),
            "lettuce_futures_ok": fact(java, "lettuce_one_flush_futures_ok"),
            "lettuce_applied": fact(java, "lettuce_one_flush_applied")}


# --- what the sources published, and the figures that answer them ---------------------------

PUBLISHED = {
    "lrem_growth_1k_to_1m": Published(1000.0, "x", "redis.io, LREM: time complexity O(N+M), N the list's length "
                                                   "(1k to 1M elements: 1000x)"),
    "ltrim_growth_1k_to_1m": Published(1.0, "x", "redis.io, LTRIM: time complexity O(N), N the elements removed "
                                                 "(one per command here)"),
    "multi_foreign_commands": Published(0, "count", "redis.io, Transactions: a request by another client is never "
                                                    "served in the middle of a transaction's execution"),
}
CLAIMS = [
    Claim("LREM server time per call, largest list ÷ 1,000 elements", "ch04/lrem", "lrem_growth", "x",
          PUBLISHED["lrem_growth_1k_to_1m"]),
    Claim("LTRIM server time per call, largest list ÷ 1,000 elements", "ch04/lrem", "ltrim_growth", "x",
          PUBLISHED["ltrim_growth_1k_to_1m"]),
    Claim("Another client's entries inside a MULTI/EXEC block (most in any trial)", "ch04/interleave",
          "multi_inside_max", "count", PUBLISHED["multi_foreign_commands"]),
]
