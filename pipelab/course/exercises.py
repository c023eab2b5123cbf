"""The course kit's checks: one exercise per chapter (notebooks/exercises/), each run against the lab's
real Redis (chapter 5: the lab's Redis Cluster).

A check prints what it measured, ends with "Exercise N solved: <figure>" and returns its figures as a
dict. When the reader's function is wrong it raises NotSolved: one sentence on what is wrong and
where to look, shown by Jupyter without a traceback. Every key lives under pipelab:exNN:, and a check
deletes those keys, and only those, before and after it runs.
"""
from __future__ import annotations

import math
import random
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

import redis
from redis.crc import key_slot
from redis.exceptions import RedisClusterException, WatchError

from .. import observe
from ..chapters import ch04
from ..chapters.ch01 import delete_keys
from ..errors import LabError
from ..lab import Lab
from ..measure import Measurement, measure
from ..server import PREFIX, Endpoint, delete_lab_keys

# exercise: (the function the reader writes, its chapter, the section that explains it)
EXERCISES = {
    1: ("incr_all", 1, "10,000 PINGs, reproduced"),
    2: ("set_in_chunks", 2, "Throughput against depth"),
    3: ("sadd_pipeline", 3, "redis-py: encode everything, write everything, then read"),
    4: ("push_keep_latest", 4, "LREM against LTRIM: a pipeline does not make a command cheaper"),
    5: ("user_key", 5, "CROSSSLOT, and what hash tags cost"),
    6: ("get_all", 6, "Limits that cut a pipeline"),
    7: ("transfer", 7, "WATCH: optimistic transactions and pipelines"),
    8: ("charge", 8, "redis-py: a default timeout with default retries"),
}
MIN_SPEEDUP = 3.0  # ex01 and ex02: what pipelining must at least buy, even on a busy 2-core machine
REPEAT = 3


class NotSolved(LabError):
    """The reader's function does not do the exercise yet; str(err) says what to change."""

    def _render_traceback_(self) -> list[str]:
        # IPython shows these lines instead of a traceback: the sentence is the whole message.
        return [str(self)]


def _prefix(ex: int) -> str:
    return f"{PREFIX}ex{ex:02d}:"


def _where(ex: int) -> str:
    _, chapter, section = EXERCISES[ex]
    return f"chapter {chapter}, section '{section}'"


def _fail(ex: int, problem: str) -> NotSolved:
    return NotSolved(f"Exercise {ex} is not solved: {problem} ({_where(ex)}).")


def _call(ex: int, fn: Callable, *args):
    """The reader's function; its TODO (NotImplementedError) becomes the 'not solved yet' sentence."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise NotSolved(f"Exercise {ex} is not solved yet: fill in {EXERCISES[ex][0]} (see the TODO); "
                        f"{_where(ex)} explains it.") from None


@contextmanager
def _own_keys(lab: Lab, ex: int):
    """A client, with the exercise's keys deleted before and after (never anything else)."""
    with lab.client() as client:
        delete_lab_keys(client, _prefix(ex) + "*")
        try:
            yield client
        finally:
            delete_lab_keys(client, _prefix(ex) + "*")


@contextmanager
def _at_server(lab: Lab, *timed: str):
    """What the server did while the block ran: calls per command, µs per call of `timed`, socket reads."""
    counters = observe.Counters(lab.endpoint)
    seen: dict = {}
    try:
        with (observe.wire(lab.endpoint) as calls, ch04.server_time(lab.endpoint, *timed) as usec,
              counters.measure() as delta):
            yield seen
        seen.update(calls=calls, usec=usec, reads=int(delta.values["total_reads_processed"]))
    finally:
        counters.close()


def _values(client: redis.Redis, keys: list[str], chunk: int = 1000) -> list:
    pipe = client.pipeline(transaction=False)
    for start in range(0, len(keys), chunk):
        pipe.mget(keys[start:start + chunk])
    return [value for values in pipe.execute() for value in values]


def _timed(label: str, run: Callable, ops: int, setup: Callable) -> Measurement:
    m = measure(label, run, ops=ops, repeat=REPEAT, warmup=1, setup=setup)
    print(f"  {m}")
    return m


def _solved(ex: int, figure: str) -> None:
    print(f"Exercise {ex} solved: {figure}")


# --- 1. Pipeline the loop -------------------------------------------------------------------------

def check_ex01(lab: Lab, incr_all: Callable) -> dict:
    n = lab.size(full=10_000, quick=2_000)
    keys = [f"{_prefix(1)}piped:{i}" for i in range(n)]
    loop_keys = [f"{_prefix(1)}loop:{i}" for i in range(n)]
    with _own_keys(lab, 1) as client:
        # Right first, untimed: a wrong answer is reported before any timing is spent on it.
        replies = _call(1, incr_all, client, keys)
        if replies is None:
            raise _fail(1, "incr_all returned None; return the list that the pipeline's execute() gives back")
        replies = list(replies)
        if len(replies) != n:
            raise _fail(1, f"incr_all returned {len(replies):,} replies for {n:,} keys; queue one INCR per key "
                           "and return execute()'s list")
        wrong = next((i for i, r in enumerate(replies) if r != 1), None)
        if wrong is not None:
            raise _fail(1, f"reply {wrong} is {replies[wrong]!r}, but INCR on an empty key answers 1; return "
                           "execute()'s replies unchanged")
        stored = _values(client, keys)
        if any(v != b"1" for v in stored):
            raise _fail(1, f"after incr_all, {sum(v != b'1' for v in stored):,} of {n:,} keys do not hold 1; "
                           "INCR each key exactly once")
        print(f"{n:,} INCRs on empty keys: every reply is 1 and every key holds 1")

        def one_by_one():
            for key in loop_keys:
                client.incr(key)

        print(f"warm-up + {REPEAT} timed runs each, keys cleared before every run:")
        piped = _timed("incr_all (yours)", lambda: incr_all(client, keys), n,
                       setup=lambda: delete_keys(client, keys))
        loop = _timed("one INCR per round trip (the check's loop)", one_by_one, n,
                      setup=lambda: delete_keys(client, loop_keys))
    speedup = loop.median / piped.median
    print(f"  speed-up: {speedup:.1f}x (median against median; {MIN_SPEEDUP:.0f}x needed)")
    if speedup < MIN_SPEEDUP:
        raise _fail(1, f"incr_all took {piped.median * 1e3:.1f} ms against {loop.median * 1e3:.1f} ms for one INCR "
                       f"per round trip, a speed-up of {speedup:.1f}x where {MIN_SPEEDUP:.0f}x is needed; queue every "
                       "INCR on one pipeline(transaction=False) and call execute() once")
    _solved(1, f"{speedup:.1f}x faster than one INCR per round trip")
    return {"n": n, "pipeline_median_s": piped.median, "loop_median_s": loop.median, "speedup": speedup}


# --- 2. Chunk a big job ---------------------------------------------------------------------------

DEPTHS = (1, 10, 100, 1000)


class _ExecuteCounter:
    """Hands out the client's own pipelines, each recording how many commands every execute() sends
    (and, in `stacks`, which: each command's arguments)."""

    def __init__(self, client: redis.Redis):
        self.sizes: list[int] = []
        self.stacks: list[list[tuple]] = []
        self._pipeline = client.pipeline
        client.pipeline = self.pipeline  # on this instance only: the reader still gets a redis.Redis

    def pipeline(self, *args, **kwargs):
        pipe = self._pipeline(*args, **kwargs)
        execute = pipe.execute

        def counted_execute(*a, **kw):
            if len(pipe.command_stack):  # an empty execute() sends nothing
                self.sizes.append(len(pipe.command_stack))
                self.stacks.append([args for args, _ in pipe.command_stack])
            return execute(*a, **kw)

        pipe.execute = counted_execute  # chained calls (pipe.set(...).execute()) return this same object
        return pipe


def _check_chunks(n: int, depth: int, returned, sizes: list[int]) -> None:
    want = math.ceil(n / depth)
    if sum(sizes) != n:
        raise _fail(2, f"at depth {depth} the pipelines sent {sum(sizes):,} commands for {n:,} keys; send one SET "
                       "per key, all through client.pipeline(...)")
    if max(sizes) > depth:
        raise _fail(2, f"at depth {depth} one execute() sent {max(sizes):,} commands; call execute() once a chunk "
                       f"holds depth commands ({depth:,} here), then queue the next chunk")
    if len(sizes) != want:
        raise _fail(2, f"at depth {depth} set_in_chunks ran {len(sizes):,} pipelines where {want:,} suffice; "
                       "fill each chunk up to depth before executing it")
    if returned != want:
        raise _fail(2, f"at depth {depth} set_in_chunks returned {returned!r} but executed {want:,} pipelines; "
                       "return how many times execute() ran")


def check_ex02(lab: Lab, set_in_chunks: Callable) -> dict:
    n = lab.size(full=20_000, quick=5_000)
    keys = [f"{_prefix(2)}{i}" for i in range(n)]
    value = "ex02-value"
    runs: dict[int, Measurement] = {}
    with _own_keys(lab, 2) as client, lab.client() as handed:
        counter = _ExecuteCounter(handed)
        for depth in DEPTHS:  # right at every depth first, untimed
            delete_keys(client, keys)
            counter.sizes.clear()
            returned = _call(2, set_in_chunks, handed, keys, value, depth)
            _check_chunks(n, depth, returned, counter.sizes)
            stored = _values(client, keys)
            if any(v != value.encode() for v in stored):
                raise _fail(2, f"at depth {depth}, {sum(v != value.encode() for v in stored):,} of {n:,} keys do "
                               "not hold the value; SET every key to `value`")
        print(f"{n:,} SETs at depths {', '.join(map(str, DEPTHS))}: every key holds the value, every execute() "
              "sent at most depth commands, and the count returned is right")
        print(f"warm-up + {REPEAT} timed runs per depth, keys cleared before every run:")
        for depth in DEPTHS:
            runs[depth] = measure(f"depth {depth}", lambda depth=depth: set_in_chunks(handed, keys, value, depth),
                                  ops=n, repeat=REPEAT, warmup=1, setup=lambda: delete_keys(client, keys))
    base = runs[1].ops_per_s
    gains = {depth: m.ops_per_s / base for depth, m in runs.items()}
    for depth, m in runs.items():
        print(f"  depth {depth:>5,}: {m.ops_per_s:>9,.0f} SETs/s, {gains[depth]:4.1f}x depth 1 "
              f"({math.ceil(n / depth):,} pipelines, {m.spread()})")
    if gains[100] < MIN_SPEEDUP:
        raise _fail(2, f"depth 100 ran only {gains[100]:.1f}x the SETs per second of depth 1 ({MIN_SPEEDUP:.0f}x "
                       "needed); look for work per key outside the pipeline, such as a round trip or a new "
                       "connection per command")
    _solved(2, f"depth 100 ran {gains[100]:.1f}x the SETs per second of depth 1")
    return {"n": n, "ops_per_s": {d: m.ops_per_s for d, m in runs.items()}, "gain": gains,
            "gain_at_100": gains[100]}


# --- 3. A pipeline, not a transaction ---------------------------------------------------------------

def _max_reads(commands: int) -> int:
    """A pipeline's bytes arrive in a few dozen socket reads; one by one costs a read per command."""
    return max(10, commands // 10)


def check_ex03(lab: Lab, sadd_pipeline: Callable) -> dict:
    n = lab.size(full=10_000, quick=2_000)
    key = f"{_prefix(3)}set"
    tx_key = f"{_prefix(3)}transaction"
    members = [f"member:{i}" for i in range(n)]
    with _own_keys(lab, 3) as client:
        with _at_server(lab) as server:
            replies = _call(3, sadd_pipeline, client, key, members)
        calls = server["calls"]
        if calls.get("multi", 0) or calls.get("exec", 0):
            raise _fail(3, f"the server ran {calls.get('multi', 0)} MULTI and {calls.get('exec', 0)} EXEC: "
                           "redis-py's pipeline() is a transaction unless you pass transaction=False")
        replies = list(replies) if replies is not None else []
        if replies != [1] * n:
            raise _fail(3, f"sadd_pipeline returned {len(replies):,} replies for {n:,} members, not all 1; queue "
                           "one SADD per member and return execute()'s list")
        size = client.scard(key)
        if size != n or calls.get("sadd", 0) != n:
            raise _fail(3, f"the set holds {size:,} members after {calls.get('sadd', 0):,} SADDs for {n:,} "
                           "members; send one SADD per member")
        if server["reads"] > _max_reads(n):
            raise _fail(3, f"the server read its socket {server['reads']:,} times for {n:,} SADDs, about one "
                           "read per command; queue every SADD on one pipeline and call execute() once")
        print(f"{n:,} SADDs: replies all 1, SCARD {size:,}; the server ran {calls.get('sadd', 0):,} SADD, "
              f"0 MULTI, 0 EXEC in {server['reads']:,} socket reads")

        def transaction():
            pipe = client.pipeline(transaction=True)
            for member in members:
                pipe.sadd(tx_key, member)
            pipe.execute()

        print(f"warm-up + {REPEAT} timed runs each:")
        yours = _timed("sadd_pipeline (yours)", lambda: sadd_pipeline(client, key, members), n,
                       setup=lambda: client.unlink(key))
        tx = _timed("the same SADDs with transaction=True", transaction, n, setup=lambda: client.unlink(tx_key))
    ratio = tx.median / yours.median
    print(f"  the transaction took {ratio:.2f}x the time of your pipeline")
    _solved(3, f"{n:,} SADDs in a plain pipeline, no MULTI/EXEC; a transaction took {ratio:.2f}x its time")
    return {"n": n, "sadd_calls": calls.get("sadd", 0), "multi_calls": 0, "exec_calls": 0,
            "server_reads": server["reads"], "pipeline_median_s": yours.median,
            "transaction_median_s": tx.median, "transaction_ratio": ratio}


# --- 4. Keep the latest 100, cheaply ---------------------------------------------------------------

def check_ex04(lab: Lab, push_keep_latest: Callable) -> dict:
    n, keep = 5_000, 100
    key = f"{_prefix(4)}latest"
    items = [f"item:{i}" for i in range(n)]
    with _own_keys(lab, 4) as client:
        with _at_server(lab, "lpush", "ltrim") as server:
            _call(4, push_keep_latest, client, key, items, keep)
        calls = server["calls"]
        if calls.get("lrem", 0):
            raise _fail(4, f"push_keep_latest called LREM {calls['lrem']:,} times; LREM scans the list to find its "
                           "value, O(N) per call, so drop the oldest by position with LTRIM key 0 keep-1")
        got = client.lrange(key, 0, -1)
        want = [item.encode() for item in reversed(items[-keep:])]
        if got != want:
            head = ", ".join(v.decode() for v in got[:3])
            raise _fail(4, f"the list holds {len(got):,} items starting {head or 'nothing'}, not the newest {keep} "
                           f"newest first (item:{n - 1}, item:{n - 2}, ...); LPUSH each item, then keep 0..keep-1")
        if not calls.get("ltrim"):
            raise _fail(4, "push_keep_latest never called LTRIM; trim the list by position with LTRIM key 0 keep-1")
        if server["reads"] > _max_reads(n):
            raise _fail(4, f"the server read its socket {server['reads']:,} times for {n:,} items, about one read "
                           "per command; queue the LPUSHes and LTRIMs on one pipeline")
    usec = server["usec"]
    print(f"{n:,} items, keep {keep}: the list holds item:{n - 1} ... item:{n - keep}, newest first")
    print(f"  the server ran {calls.get('lpush', 0):,} LPUSH ({usec['lpush'] or 0:.2f} µs each), "
          f"{calls['ltrim']:,} LTRIM ({usec['ltrim']:.2f} µs each), 0 LREM, in {server['reads']:,} socket reads")
    _solved(4, f"{usec['ltrim']:.2f} µs per LTRIM on the server, and no LREM")
    return {"n": n, "keep": keep, "ltrim_calls": calls["ltrim"], "lrem_calls": 0, "ltrim_usec": usec["ltrim"],
            "lpush_usec": usec["lpush"], "server_reads": server["reads"]}


# --- 5. One slot per user -------------------------------------------------------------------------

FIELDS = ("profile", "cart", "sessions")
USERS = [f"user:{i}" for i in range(1000)]
SLOT_RANGES = ((0, 5460), (5461, 10922), (10923, 16383))  # three masters' equal shares, as redis-cli splits them
SHARE_BOUNDS = (0.20, 0.47)


def _slot(key: str) -> int:
    return key_slot(key.encode())


def _check_layout(keys: dict[str, list[str]]) -> list[float]:
    """Per-range share of the users, once every key is well formed and each user has one slot."""
    flat = [k for ks in keys.values() for k in ks]
    bad = next((k for k in flat if not isinstance(k, str)), None)
    if bad is not None:
        raise _fail(5, f"user_key returned {bad!r}, a {type(bad).__name__}; return a str")
    bad = next((k for k in flat if not k.startswith(_prefix(5))), None)
    if bad is not None:
        raise _fail(5, f"user_key returned {bad!r}; every key must start with {_prefix(5)!r}")
    if len(set(flat)) != len(flat):
        raise _fail(5, f"user_key gave {len(set(flat)):,} distinct keys for {len(flat):,} (user, field) pairs; "
                       "put both the user id and the field in the key")
    for user, ks in keys.items():
        for field, k in zip(FIELDS, ks):
            if user not in k or field not in k:
                raise _fail(5, f"user_key({user!r}, {field!r}) returned {k!r}; the key must contain the user id "
                               "and the field")
        slots = {_slot(k) for k in ks}
        if len(slots) > 1:
            raise _fail(5, f"{user}'s keys hash to {len(slots)} slots ({', '.join(map(str, sorted(slots)))}); wrap "
                           "the user id in a hash tag, e.g. pipelab:ex05:{user:42}:cart, so only it is hashed")
    user_slots = [_slot(ks[0]) for ks in keys.values()]
    if len(set(user_slots)) == 1:
        raise _fail(5, f"all {len(flat):,} keys hash to slot {user_slots[0]}, so one master would serve every user; "
                       "the hash tag should hold the user id only, e.g. pipelab:ex05:{user:42}:cart")
    shares = [sum(low <= s <= high for s in user_slots) / len(user_slots) for low, high in SLOT_RANGES]
    if not all(SHARE_BOUNDS[0] <= share <= SHARE_BOUNDS[1] for share in shares):
        listed = ", ".join(f"{100 * s:.0f}%" for s in shares)
        raise _fail(5, f"the users land unevenly on the three slot ranges ({listed}; {SHARE_BOUNDS[0]:.0%} to "
                       f"{SHARE_BOUNDS[1]:.0%} each expected); the hash tag should hold the whole user id, nothing "
                       "shared by many users")
    return shares


def _cluster_round_trip(lab: Lab, keys: dict[str, list[str]]) -> dict[int, int]:
    """One MSET and one MGET per user on the lab's cluster; MSET calls per master (by port)."""
    cluster = lab.cluster()
    rc = cluster.client()

    def mset_calls() -> dict[int, int]:
        out = {}
        for node in cluster.nodes:
            with node.client() as c:
                out[node.port] = observe.command_calls(c).get("mset", 0)
        return out

    def unlink_all() -> None:
        for ks in keys.values():
            rc.unlink(*ks)  # redis-py splits a multi-key UNLINK by slot; one slot per user here anyway

    try:
        unlink_all()
        before = mset_calls()
        written = {user: {k: f"{user}|{field}" for field, k in zip(FIELDS, ks)} for user, ks in keys.items()}
        try:
            for mapping in written.values():
                rc.mset(mapping)
            read = {user: rc.mget(list(mapping)) for user, mapping in written.items()}
        except (RedisClusterException, redis.ResponseError) as err:
            raise _fail(5, f"the cluster refused one user's MSET or MGET ({str(err)[:80]}); one user's keys must "
                           "share a slot, so hash the user id alone") from None
        after = mset_calls()
        for user, mapping in written.items():
            if read[user] != [v.encode() for v in mapping.values()]:
                raise _fail(5, f"reading {user}'s keys back with MGET gave {read[user]!r}; user_key must return "
                               "the same key for the same user and field every time")
    finally:
        unlink_all()
        rc.close()
    return {port: after[port] - before[port] for port in after}


def check_ex05(lab: Lab, user_key: Callable) -> dict:
    keys = {user: [_call(5, user_key, user, field) for field in FIELDS] for user in USERS}
    shares = _check_layout(keys)
    print(f"{len(USERS):,} users x {len(FIELDS)} fields: {len(USERS) * len(FIELDS):,} distinct keys, one slot per "
          f"user (e.g. {keys['user:42'][1]!r} -> slot {_slot(keys['user:42'][1])})")
    print("  users per slot range: " + ", ".join(f"{low}-{high}: {100 * s:.0f}%"
                                                 for (low, high), s in zip(SLOT_RANGES, shares)))
    users = USERS[:lab.size(full=200, quick=50)]
    per_master = _cluster_round_trip(lab, {user: keys[user] for user in users})
    used = sum(1 for n in per_master.values() if n)
    print(f"  on the cluster: one MSET and one MGET per user for {len(users)} users, no CROSSSLOT; MSETs per "
          "master: " + ", ".join(f":{port} {n}" for port, n in per_master.items()))
    _solved(5, f"one slot per user; the busiest slot range gets {100 * max(shares):.0f}% of the users, "
               f"{used} masters served the MSETs")
    return {"users": len(USERS), "range_shares": shares, "busiest_share": max(shares),
            "cluster_users": len(users), "mset_per_master": per_master, "masters_used": used}


# --- 6. Stay under the reply budget ----------------------------------------------------------------

EX06_SIZES = (1_000, 4_000, 16_000, 64_000, 100_000)  # value sizes, cycled over the keys
EX06_BUDGET = 256 * 1024  # bytes of values one execute() may ask for
EX06_LIMIT = "normal 512kb 0 0"  # the check's own server cuts a connection whose replies pass this


def _greedy_batches(sizes: list[int], budget: int) -> int:
    """How many pipelines filling each up to the budget, in key order, take: the fewest in order."""
    batches, used = 0, budget
    for size in sizes:
        if used + size > budget:
            batches, used = batches + 1, 0
        used += size
    return batches


def check_ex06(lab: Lab, get_all: Callable) -> dict:
    from ..chapters.ch04 import no_retry_client  # a retried pipeline would only be cut again  # noqa: PLC0415
    from ..server import EmbeddedRedis, free_port  # noqa: PLC0415

    n = lab.size(full=300, quick=120)
    keys = [f"{_prefix(6)}{i}" for i in range(n)]
    sizes = [EX06_SIZES[i % len(EX06_SIZES)] for i in range(n)]
    values = [(f"{i}:".encode() * size)[:size] for i, size in enumerate(sizes)]
    # A server of the check's own, so the limit is set on nothing else.
    with EmbeddedRedis(port=free_port(), args=["--client-output-buffer-limit", EX06_LIMIT]) as server, \
            server.endpoint.client() as admin, no_retry_client(server.endpoint) as handed:
        for start in range(0, n, 20):
            admin.mset(dict(zip(keys[start:start + 20], values[start:start + 20])))
        counter = _ExecuteCounter(handed)
        before = observe.command_calls(admin)
        cuts = int(admin.info("stats")["client_output_buffer_limit_disconnections"])
        try:
            got = _call(6, get_all, handed, keys, EX06_BUDGET)
        except redis.ConnectionError:
            cut = int(admin.info("stats")["client_output_buffer_limit_disconnections"]) - cuts
            raise _fail(6, f"the server closed the connection ({cut} output-buffer disconnection"
                           f"{'s' if cut != 1 else ''} in INFO stats): one execute() asked for more replies than "
                           f"`client-output-buffer-limit {EX06_LIMIT}` lets it queue; stop adding GETs to a pipeline "
                           f"before their values pass the budget") from None
        calls = {k: v - before.get(k, 0) for k, v in observe.command_calls(admin).items()}
    total = sum(sizes)
    print(f"{n:,} keys, {total / 2**20:.1f} MiB of values ({', '.join(f'{s:,}' for s in EX06_SIZES)} bytes, cycled); "
          f"budget {EX06_BUDGET // 1024} KiB of values per execute(); the check's server cuts at {EX06_LIMIT!r}")
    got = list(got) if got is not None else []
    if len(got) != n or any(g != v for g, v in zip(got, values)):
        wrong = next((i for i, (g, v) in enumerate(zip(got, values)) if g != v), min(len(got), n))
        raise _fail(6, f"get_all returned {len(got):,} values for {n:,} keys, the first wrong at position {wrong}; "
                       "return every key's value, as bytes, in the order of the keys")
    size_of = dict(zip(keys, sizes))
    piped = [[args[1] for args in stack if str(args[0]).upper() == "GET"] for stack in counter.stacks]
    piped = [batch for batch in piped if batch]
    if sum(map(len, piped)) < n or calls.get("get", 0) > n:
        raise _fail(6, f"the server ran {calls.get('get', 0):,} GETs of which {sum(map(len, piped)):,} came in "
                       f"pipelines, for {n:,} keys; send each key's GET once, in a pipeline (MGET counts as one "
                       "command with all its replies, so it does not help here)")
    biggest = max(sum(size_of[k] for k in batch) for batch in piped)
    if biggest > EX06_BUDGET:
        raise _fail(6, f"one execute() asked for {biggest:,} bytes of values, over the budget of {EX06_BUDGET:,}; "
                       "learn the sizes first (STRLEN, pipelined) and start a new pipeline before a GET would pass "
                       "the budget")
    fewest = _greedy_batches(sizes, EX06_BUDGET)
    if len(piped) > 2 * fewest:
        raise _fail(6, f"get_all used {len(piped):,} pipelines of GETs where {fewest:,} suffice; fill each pipeline "
                       "up to the budget before executing it")
    print(f"  {len(piped)} pipelines of GETs (the fewest in key order: {fewest}), the largest asking for "
          f"{biggest / 1024:.0f} KiB; STRLEN calls: {calls.get('strlen', 0):,}; no disconnection")
    _solved(6, f"{total / 2**20:.1f} MiB in {len(piped)} pipelines, none over {EX06_BUDGET // 1024} KiB of replies")
    return {"n": n, "bytes": total, "pipelines": len(piped), "fewest": fewest, "largest_batch_bytes": biggest,
            "strlen_calls": calls.get("strlen", 0)}


# --- 7. Move money without losing it --------------------------------------------------------------

EX07_ACCOUNTS = 10
EX07_BALANCE = 1_000
EX07_WRITERS = 4
EX07_AMOUNTS = (1, 10)
EX07_DEPOSIT = 1  # what the check pays into a source between the reader's read and write
EX07_DEPOSIT_EVERY = 4  # every 4th transfer of each writer gets a deposit
EX07_WRITES = frozenset({"SET", "MSET", "SETEX", "PSETEX", "SETNX", "MSETNX", "GETSET", "SETRANGE", "APPEND",
                         "INCR", "DECR", "INCRBY", "DECRBY", "INCRBYFLOAT", "DEL", "UNLINK", "GETDEL", "GETEX"})


def _text(arg) -> str:
    return arg.decode() if isinstance(arg, bytes) else str(arg)


@dataclass
class _Transfer:
    """One call of the reader's transfer, as the spy saw it reach the server."""

    src: str
    dst: str
    amount: int
    deposit_due: bool
    deposit_at: int | None = None  # index in execs of the EXEC that followed the check's deposit
    watches: list[frozenset] = field(default_factory=list)  # the keys of each WATCH
    execs: list[tuple[bool, frozenset]] = field(default_factory=list)  # (ran, keys watched when sent)
    result: object = None

    def blind_retry(self) -> bool:
        """An EXEC that ran with no WATCH at all after one that was aborted: the aborted writes sent again."""
        aborted = [i for i, (ran, _) in enumerate(self.execs) if not ran]
        return bool(aborted) and any(ran and not keys for ran, keys in self.execs[aborted[0] + 1:])

    def unguarded(self) -> frozenset | None:
        """The keys watched for an EXEC that ran without a WATCH on both accounts, if one did."""
        return next((keys for ran, keys in self.execs if ran and not {self.src, self.dst} <= keys), None)

    def forced_abort(self) -> bool:
        return self.deposit_at is not None and len(self.execs) > self.deposit_at and not self.execs[self.deposit_at][0]


class _TransferSpy:
    """Sees one handed client's commands from the inside (on this instance only: the reader still gets a
    redis.Redis): for each transfer, every WATCH's keys and every EXEC's fate. When a transfer is due a
    deposit, it pays EX07_DEPOSIT into the source from a connection of its own right before the transfer's
    first write or EXEC, the moment another client's write is the most dangerous."""

    def __init__(self, client: redis.Redis, depositor: redis.Redis):
        self.depositor = depositor
        self.call: _Transfer | None = None
        self._pipeline = client.pipeline
        self._direct = client.execute_command
        client.pipeline = self.pipeline
        client.execute_command = self.execute_command

    def begin(self, src: str, dst: str, amount: int, deposit: bool) -> _Transfer:
        self.call = _Transfer(src, dst, amount, deposit)
        return self.call

    def _before_write(self) -> None:
        call = self.call
        if call is not None and call.deposit_due and call.deposit_at is None:
            self.depositor.incrby(call.src, EX07_DEPOSIT)
            call.deposit_at = len(call.execs)

    def execute_command(self, *args, **options):
        if args and _text(args[0]).upper() in EX07_WRITES:
            self._before_write()
        return self._direct(*args, **options)

    def pipeline(self, *args, **kwargs):
        pipe = self._pipeline(*args, **kwargs)
        watched: set[str] = set()  # WATCH holds per connection, and a pipeline holds one while watching
        command, execute = pipe.execute_command, pipe.execute

        def spied_command(*a, **kw):
            name = _text(a[0]).upper()
            if name == "WATCH":
                keys = frozenset(_text(k) for k in a[1:])
                watched.update(keys)
                if self.call is not None:
                    self.call.watches.append(keys)
            elif name == "UNWATCH":
                watched.clear()
            elif name in EX07_WRITES and pipe.watching and not pipe.explicit_transaction:
                self._before_write()  # sent at once, outside MULTI
            return command(*a, **kw)

        def spied_execute(*a, **kw):
            sends_exec = (pipe.transaction or pipe.explicit_transaction) and bool(pipe.command_stack or pipe.watching)
            if sends_exec or any(_text(args[0]).upper() in EX07_WRITES for args, _ in pipe.command_stack):
                self._before_write()
            keys = frozenset(watched)
            watched.clear()  # EXEC, or the reset after a plain pipeline, ends every WATCH
            try:
                result = execute(*a, **kw)
            except WatchError:
                if self.call is not None:
                    self.call.execs.append((False, keys))
                raise
            if sends_exec and self.call is not None:
                self.call.execs.append((True, keys))
            return result

        pipe.execute_command, pipe.execute = spied_command, spied_execute
        return pipe


def _plan_transfers(writers: int, each: int, seed: int = 7) -> list[list[tuple[int, int, int]]]:
    """Each writer's transfers (source, destination, amount), random, yet no account's planned outflow passes
    its opening balance: every transfer can be paid in whatever order the writers run, so a refusal is a bug."""
    rng = random.Random(seed)
    out = [0] * EX07_ACCOUNTS
    plans: list[list[tuple[int, int, int]]] = [[] for _ in range(writers)]
    for _ in range(each):
        for plan in plans:
            while True:
                src, dst = rng.sample(range(EX07_ACCOUNTS), 2)
                amount = rng.randint(*EX07_AMOUNTS)
                if out[src] + amount <= EX07_BALANCE:
                    break
            out[src] += amount
            plan.append((src, dst, amount))
    return plans


def _balances(client: redis.Redis, keys: list[str]) -> list[int]:
    return [int(v) for v in client.mget(keys)]


def _check_refusals(client: redis.Redis, handed: redis.Redis, spy: _TransferSpy, transfer: Callable) -> None:
    """One writer first: a transfer the source cannot pay is refused and writes nothing; all it holds can go."""
    src, dst = f"{_prefix(7)}acct:0", f"{_prefix(7)}acct:1"
    for amount, want, after in ((EX07_BALANCE + 1, False, [EX07_BALANCE, EX07_BALANCE]),
                                (EX07_BALANCE, True, [0, 2 * EX07_BALANCE])):
        spy.begin(src, dst, amount, deposit=False)
        got = _call(7, transfer, handed, src, dst, amount)
        if not isinstance(got, bool):
            raise _fail(7, f"transfer returned {got!r}, not True or False; return True when the money moved and "
                           "False when the transfer was refused")
        held = _balances(client, [src, dst])
        if got and not want:
            raise _fail(7, f"transfer of {amount:,} from an account holding {EX07_BALANCE:,} returned True and left "
                           f"{held[0]:,} in it; return False, writing nothing, when the source would go negative")
        if want and not got:
            raise _fail(7, f"transfer refused to move {amount:,} out of an account holding exactly {EX07_BALANCE:,}; "
                           "refuse only when the source would go negative")
        if held != after:
            raise _fail(7, f"after transfer({src!r}, {dst!r}, {amount:,}) returned {got} the accounts hold "
                           f"{held[0]:,} and {held[1]:,} where {after[0]:,} and {after[1]:,} were expected; "
                           + ("a refusal writes nothing" if not got else "write the source's balance less the "
                              "amount and the destination's plus it"))
    print(f"  one writer: {EX07_BALANCE + 1:,} from {EX07_BALANCE:,} refused with nothing written; "
          f"{EX07_BALANCE:,} from {EX07_BALANCE:,} moved (0 and {2 * EX07_BALANCE:,})")


def _run_writers(lab: Lab, transfer: Callable, keys: list[str], plans) -> tuple[list[_Transfer], float]:
    """Every writer on a thread and a connection of its own, released together; their calls, and the seconds."""
    calls: list[_Transfer] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(plans) + 1)
    clients = [(lab.client(), lab.client()) for _ in plans]

    def writer(handed: redis.Redis, depositor: redis.Redis, plan) -> None:
        spy = _TransferSpy(handed, depositor)
        start.wait()
        try:
            for i, (src, dst, amount) in enumerate(plan):
                call = spy.begin(keys[src], keys[dst], amount, deposit=i % EX07_DEPOSIT_EVERY == 1)
                call.result = transfer(handed, keys[src], keys[dst], amount)
                calls.append(call)
        except BaseException as err:  # reported by the check, from its own thread
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(*pair, plan), daemon=True) for pair, plan in zip(clients, plans)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    for pair in clients:
        for c in pair:
            c.close()
    if errors:
        err = errors[0]
        hint = ("an aborted EXEC is redis-py's WatchError: catch it, then read again and retry"
                if isinstance(err, WatchError) else "fix that first")
        raise _fail(7, f"transfer raised {type(err).__name__} ({err}) while {len(plans)} writers ran; {hint}")
    return calls, seconds


def _money(held: list[int], put_in: int, deposits: int) -> str:
    negative = sum(b < 0 for b in held)
    return (f"the accounts hold {sum(held):,} in all where {put_in:,} went in ({EX07_ACCOUNTS * EX07_BALANCE:,} and "
            f"the check's {deposits:,} deposit{'s' if deposits != 1 else ''})"
            + (f", and {negative} account{'s are' if negative != 1 else ' is'} negative" if negative else ""))


def _diagnose(calls: list[_Transfer], held: list[int], keys: list[str], server: dict) -> None:
    """The first thing wrong with the concurrent run, cause before consequence, as one NotSolved."""
    deposits = sum(c.deposit_at is not None for c in calls)
    put_in = EX07_ACCOUNTS * EX07_BALANCE + deposits * EX07_DEPOSIT
    money = _money(held, put_in, deposits)
    expected = [EX07_BALANCE] * EX07_ACCOUNTS
    index = {key: i for i, key in enumerate(keys)}
    for c in calls:
        if c.deposit_at is not None:
            expected[index[c.src]] += EX07_DEPOSIT
        if c.result is True:
            expected[index[c.src]] -= c.amount
            expected[index[c.dst]] += c.amount
    right = held == expected
    n = len(calls)
    writers = f"with {EX07_WRITERS} writers"

    odd = next((c for c in calls if not isinstance(c.result, bool)), None)
    if odd is not None:
        raise _fail(7, f"transfer returned {odd.result!r}, not True or False; return True when the money moved and "
                       "False when the transfer was refused")
    if not any(c.watches for c in calls) and not server.get("watch"):
        if right:
            raise _fail(7, "transfer moved the money right with no WATCH (on the server, in one command or script, "
                           "as the section recommends where it can); this exercise asks for the WATCH loop: WATCH "
                           "both accounts, read them, MULTI/EXEC, and retry when EXEC is aborted")
        if any(c.execs for c in calls) or server.get("exec"):
            raise _fail(7, f"transfer sent MULTI/EXEC but no WATCH, so no EXEC could abort: {writers} {money}; "
                           "MULTI only queues the writes, WATCH both accounts before reading them")
        raise _fail(7, f"transfer sent no WATCH: {writers} {money}; WATCH both accounts, read them, write in "
                       "MULTI/EXEC, and retry when EXEC is aborted")
    blind = [c for c in calls if c.blind_retry()]
    if blind:
        raise _fail(7, f"after an aborted EXEC transfer sent MULTI/EXEC again without a new WATCH and read "
                       f"({len(blind):,} times), writing balances computed before the abort: {money}; a retry starts "
                       "over from WATCH and the read")
    unguarded = [c for c in calls if c.unguarded() is not None]
    if unguarded:
        c = unguarded[0]
        seen = ", ".join(sorted(c.unguarded())) or "nothing"
        raise _fail(7, f"{len(unguarded):,} of {n:,} transfers ran EXEC without a WATCH on both accounts (from "
                       f"{c.src} to {c.dst} watched {seen}): {money}; a write to an unwatched account between the "
                       "read and EXEC is overwritten, so WATCH the source and the destination")
    ignored = [c for c in calls if c.result is True and c.execs and not c.execs[-1][0]]
    if ignored:
        raise _fail(7, f"{len(ignored):,} of {n:,} transfers returned True although their last EXEC was aborted, "
                       "so their money never moved; when EXEC is aborted (redis-py raises WatchError) read both "
                       "balances again and retry")
    refused = [c for c in calls if c.result is False]
    if refused:
        after_abort = sum(any(not ran for ran, _ in c.execs) for c in refused)
        why = (f"{after_abort:,} of them right after an aborted EXEC; an aborted EXEC is not a refusal: read both "
               "balances again and retry" if after_abort else "refuse only when the source's balance is below the "
               "amount")
        raise _fail(7, f"transfer returned False for {len(refused):,} of {n:,} transfers that the source could pay "
                       f"(the check plans each account's outflow within its balance), {why}")
    if server.get("watch", 0) < n:
        raise _fail(7, f"the server counted {server.get('watch', 0):,} WATCH calls for {n:,} transfers; each "
                       "transfer WATCHes its two accounts before reading them")
    done = sum(c.result is True for c in calls)
    if server.get("exec", 0) < done:
        raise _fail(7, f"the server counted {server.get('exec', 0):,} EXEC calls for {done:,} transfers that "
                       "returned True; write each transfer's two balances in MULTI/EXEC")
    if not right:
        wrong = next(i for i, (h, e) in enumerate(zip(held, expected)) if h != e)
        raise _fail(7, f"{money}, and the transfers that returned True do not explain the balances ({keys[wrong]} "
                       f"holds {held[wrong]:,} where {expected[wrong]:,} was expected); every retry reads both "
                       "balances again after its WATCH, and True means that the EXEC ran")


def check_ex07(lab: Lab, transfer: Callable) -> dict:
    each = lab.size(full=300, quick=100)
    keys = [f"{_prefix(7)}acct:{i}" for i in range(EX07_ACCOUNTS)]
    plans = _plan_transfers(EX07_WRITERS, each)
    n = EX07_WRITERS * each
    print(f"{EX07_WRITERS} writers x {each:,} transfers of {EX07_AMOUNTS[0]} to {EX07_AMOUNTS[1]} between "
          f"{EX07_ACCOUNTS} accounts of {EX07_BALANCE:,} under {_prefix(7)}; before the first write of every "
          f"{EX07_DEPOSIT_EVERY}th transfer the check pays {EX07_DEPOSIT} into its source from another connection")
    with _own_keys(lab, 7) as client, lab.client() as handed, lab.client() as depositor:
        client.mset({key: EX07_BALANCE for key in keys})
        _check_refusals(client, handed, _TransferSpy(handed, depositor), transfer)
        client.mset({key: EX07_BALANCE for key in keys})
        with observe.wire(lab.endpoint) as server:
            calls, seconds = _run_writers(lab, transfer, keys, plans)
        held = _balances(client, keys)
    _diagnose(calls, held, keys, server)
    execs = sum(len(c.execs) for c in calls)
    aborted = sum(not ran for c in calls for ran, _ in c.execs)
    forced = sum(c.forced_abort() for c in calls)
    deposits = sum(c.deposit_at is not None for c in calls)
    print(f"  {n:,} transfers in {seconds:.2f} s ({n / seconds:,.0f}/s), all True; {sum(held):,} in the accounts, "
          f"as went in ({EX07_ACCOUNTS * EX07_BALANCE:,} and {deposits:,} deposits); lowest balance {min(held):,}; "
          "every balance is what the transfers and deposits make it")
    print(f"  EXECs: {execs:,}, of which {aborted:,} aborted ({forced:,} by the check's deposits, "
          f"{aborted - forced:,} by the other writers), each followed by a new WATCH and read")
    print(f"  the server counted {server.get('watch', 0):,} WATCH, {server.get('multi', 0):,} MULTI, "
          f"{server.get('exec', 0):,} EXEC")
    _solved(7, f"{n:,} transfers by {EX07_WRITERS} writers, {aborted:,} aborted EXECs retried, not one unit lost")
    return {"transfers": n, "seconds": seconds, "transfers_per_s": n / seconds, "execs": execs, "aborted": aborted,
            "forced_aborts": forced, "deposits": deposits, "total": sum(held), "lowest": min(held),
            "server_watch": server.get("watch", 0), "server_exec": server.get("exec", 0)}


# --- 8. Charge once -------------------------------------------------------------------------------

EX08_AMOUNTS = (7, 12, 19, 25, 37)  # 100 in all: a balance that moved by 200 means the charge ran twice
EX08_HOLD_S = 6.0  # a silenced connection stays open this long (past redis-py's 5 s socket_timeout), then closes
EX08_BOUND_S = 20.0  # a call still running after this long is reported as hanging
EX08_WRITES = frozenset({"SET", "SETNX", "SETEX", "PSETEX", "GETSET", "MSET", "MSETNX", "APPEND", "INCR", "DECR",
                         "INCRBY", "DECRBY", "INCRBYFLOAT", "DEL", "UNLINK", "GETDEL", "GETEX", "EXPIRE", "HSET",
                         "HSETNX", "HINCRBY", "SADD", "LPUSH", "RPUSH", "ZADD"})
EX08_SCRIPTS = frozenset({"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"})


def _resp_commands(buf: bytearray) -> list[list[bytes]]:
    """The complete commands at the head of `buf`, removed from it; a command cut by the chunk stays."""
    out: list[list[bytes]] = []
    while buf:
        if buf[:1] != b"*":  # an inline command: one line of words
            end = buf.find(b"\r\n")
            if end < 0:
                break
            line = bytes(buf[:end])
            del buf[:end + 2]
            if line.split():
                out.append(line.split())
            continue
        end = buf.find(b"\r\n")
        if end < 0:
            break
        count, at, args = int(buf[1:end]), end + 2, []
        for _ in range(count):
            head = buf.find(b"\r\n", at)
            if head < 0:
                return out
            length = int(buf[at + 1:head])
            if len(buf) < head + 2 + length + 2:
                return out
            args.append(bytes(buf[head + 2:head + 2 + length]))
            at = head + 4 + length
        del buf[:at]
        if args:
            out.append(args)
    return out


def _written_keys(args: tuple[str, ...]) -> list[str]:
    """The keys a write or a script names (a script's KEYS), or none for any other command."""
    name = args[0].upper()
    if name in EX08_SCRIPTS and len(args) > 2 and args[2].isdigit():
        return list(args[3:3 + int(args[2])])
    if name in ("MSET", "MSETNX"):
        return list(args[1::2])
    return [args[1]] if name in EX08_WRITES and len(args) > 1 else []


@dataclass
class _Link:
    """One connection through the check's proxy, and what the check did to it."""

    number: int
    fault: str | None = None  # "reply" or "request": what the proxy drops on it from the fault on
    fault_at: float | None = None
    closed_at: float | None = None
    closed_by: str | None = None  # "client" (it gave up), "check" (after EX08_HOLD_S), "server", "end"
    in_multi: bool = False
    sockets: tuple = ()


@dataclass(frozen=True)
class _Sent:
    """One command the reader's client sent through the proxy."""

    step: str
    link: int
    args: tuple[str, ...]
    in_multi: bool  # queued between MULTI and EXEC on its connection
    forwarded: bool


class _FaultProxy:
    """A TCP proxy on loopback in front of the lab's Redis, handed to the reader's function instead of it.
    Armed with a fault, it waits for the first command that writes the account (INCRBY, a script naming it,
    ...) and, on that connection only, drops from then on the replies ("reply": the server ran the commands,
    the client hears nothing) or the requests ("request": nothing more reaches the server). The connection
    stays open and silent until the client gives up on it, or EX08_HOLD_S, then the proxy closes it. Every
    other connection, and every later one, passes untouched. It records every command it sees.
    No toxiproxy (a laptop without Go has none), and one silenced connection makes the count exact:
    a resend meets a healthy connection and runs."""

    def __init__(self, target: Endpoint, account: str):
        self.target, self.account = target, account
        self.sent: list[_Sent] = []
        self.links: list[_Link] = []
        self.fired: _Link | None = None
        self._step, self._fault = "", None
        self._lock = threading.Lock()
        self._timers: list[threading.Timer] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.host, self.port = self._listener.getsockname()[:2]
        threading.Thread(target=self._accept, daemon=True, name="ex08-proxy").start()

    def __enter__(self) -> _FaultProxy:
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() below (close() alone may not)
        except OSError:
            pass
        self._listener.close()
        for timer in self._timers:
            timer.cancel()
        for link in list(self.links):
            self._close(link, "end")

    def arm(self, step: str, fault: str | None) -> None:
        with self._lock:
            self._step, self._fault, self.fired = step, fault, None

    def disarm(self) -> _Link | None:
        """No more faults; the connection the last one hit, if it hit one."""
        with self._lock:
            self._fault = None
            return self.fired

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # the listener closed: the check is over
                return
            try:
                upstream = socket.create_connection((self.target.host, self.target.port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()  # the reader's client sees a refused connection, as without the proxy
                continue
            with self._lock:
                link = _Link(len(self.links) + 1, sockets=(client, upstream))
                self.links.append(link)
            threading.Thread(target=self._requests, args=(link,), daemon=True).start()
            threading.Thread(target=self._replies, args=(link,), daemon=True).start()

    def _writes_account(self, args: tuple[str, ...]) -> bool:
        return self.account in _written_keys(args)

    def _requests(self, link: _Link) -> None:
        client, upstream = link.sockets
        pending = bytearray()
        while True:
            try:
                data = client.recv(65536)
            except OSError:
                data = b""
            if not data:
                self._close(link, "client")
                return
            pending += data
            commands = [tuple(a.decode("utf-8", "replace") for a in c) for c in _resp_commands(pending)]
            with self._lock:
                # Decided before the chunk is forwarded: no reply to it can slip through.
                if self._fault and self.fired is None and any(map(self._writes_account, commands)):
                    link.fault, link.fault_at, self.fired = self._fault, time.monotonic(), link
                    timer = threading.Timer(EX08_HOLD_S, self._close, (link, "check"))
                    timer.daemon = True
                    timer.start()
                    self._timers.append(timer)
                forward = link.fault != "request"
                for args in commands:
                    name = args[0].upper()
                    self.sent.append(_Sent(self._step, link.number, args, link.in_multi and name != "EXEC",
                                           forward))
                    if name == "MULTI":
                        link.in_multi = True
                    elif name in ("EXEC", "DISCARD"):
                        link.in_multi = False
            if forward:
                try:
                    upstream.sendall(data)
                except OSError:
                    self._close(link, "server")
                    return

    def _replies(self, link: _Link) -> None:
        client, upstream = link.sockets
        while True:
            try:
                data = upstream.recv(65536)
            except OSError:
                data = b""
            if not data:
                self._close(link, "server")
                return
            if link.fault is None:
                try:
                    client.sendall(data)
                except OSError:
                    self._close(link, "client")
                    return

    def _close(self, link: _Link, by: str) -> None:
        with self._lock:
            if link.closed_at is not None:
                return
            link.closed_at, link.closed_by = time.monotonic(), by
        for sock in link.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


@dataclass
class _Charge:
    """One call of the reader's charge through the proxy, and what the server's balance says about it."""

    step: str
    charge_id: str
    fault: str | None
    error: BaseException | None
    seconds: float
    hung: bool
    moved: int  # how much the balance moved during the call
    fired: _Link | None
    sent: list[_Sent]

    @property
    def runs(self) -> float:
        return self.moved / sum(EX08_AMOUNTS)

    def raised(self) -> str:
        text = " ".join(str(self.error).split())
        return f"{type(self.error).__name__} ({text[:90] + '...' if len(text) > 90 else text or 'no message'})"

    def sends(self, account: str) -> int:
        """On how many connections a write to the account reached the server."""
        return len({s.link for s in self.sent if s.forwarded and account in _written_keys(s.args)})

    def silence(self) -> str:
        """How the silenced connection ended, for the sentences below."""
        link = self.fired
        if link is None or link.closed_at is None:
            return "the connection whose replies went silent was still open"
        if link.closed_by == "client":
            return f"your client gave up on the silent connection after {link.closed_at - link.fault_at:.1f} s"
        return f"the check closed the silent connection after {EX08_HOLD_S:g} s, your client still waiting"


def _balance(client: redis.Redis, account: str) -> int:
    value = client.get(account)
    try:
        return int(value or 0)
    except ValueError:
        raise _fail(8, f"{account} holds {value!r}, not a whole number; INCRBY each amount into it") from None


def _charge(client: redis.Redis, proxy: _FaultProxy, charge: Callable, account: str, step: str, charge_id: str,
            fault: str | None) -> _Charge:
    """charge(proxy host, proxy port, account, charge_id, amounts) on a thread of its own, bounded."""
    before = _balance(client, account)
    first = len(proxy.sent)
    proxy.arm(step, fault)
    box: list[BaseException] = []

    def run() -> None:
        try:
            _call(8, charge, proxy.host, proxy.port, account, charge_id, list(EX08_AMOUNTS))
        except BaseException as err:  # noqa: BLE001 - reported below, from the check's thread
            box.append(err)

    worker = threading.Thread(target=run, daemon=True, name="ex08-charge")
    start = time.perf_counter()
    worker.start()
    worker.join(EX08_BOUND_S)
    seconds = time.perf_counter() - start
    fired = proxy.disarm()
    if box and isinstance(box[0], NotSolved):
        raise box[0]
    time.sleep(0.1)  # a resend still on the wire reaches the server before the balance is read
    return _Charge(step, charge_id, fault, box[0] if box else None, seconds, worker.is_alive(),
                   _balance(client, account) - before, fired, proxy.sent[first:])


def _check_keys(call: _Charge) -> None:
    outside = sorted({k for s in call.sent for k in _written_keys(s.args) if not k.startswith(_prefix(8))})
    if outside:
        raise _fail(8, f"charge wrote {outside[0]!r}, outside {_prefix(8)}; keep every key it writes, the marker "
                       f"too, under {_prefix(8)}, which the check deletes when it ends (delete {outside[0]!r} "
                       "yourself)")


def _charged_twice(call: _Charge, account: str) -> str:
    """Why a call that returned normally ran the charge more than once: the first cause that fits."""
    total = sum(EX08_AMOUNTS)
    due = (f"the server ran the charge {call.runs:g} times (the balance moved by {call.moved:,} where {total} was "
           "due)" if call.moved % total == 0 else f"part of the charge ran more than once (the balance moved by "
           f"{call.moved:,} where {total} was due; send all the INCRBYs together, in one MULTI/EXEC)")
    resend = (f"{call.silence()}, and the charge went again on a new connection ({call.sends(account)} connections "
              "carried it)")
    markers = [s for s in call.sent if s.args[0].upper() in EX08_WRITES
               and any(k != account for k in _written_keys(s.args))]
    if any(s.args[0].upper() in EX08_SCRIPTS for s in call.sent):
        return (f"{due}: {resend}, and your script charged each time it ran; let the script SET the marker with "
                "NX first and charge only when that succeeded, so that a second run changes nothing")
    if any(s.in_multi for s in markers):
        return (f"{due}: the marker is in the MULTI/EXEC with the INCRBYs, but a transaction has no 'if': "
                f"{resend}, where the SET NX failed and the INCRBYs ran; turn the client's retries off "
                "(retry=Retry(NoBackoff(), 0)) and look for the marker before each send yourself")
    if markers:
        return (f"{due}: the marker was written on its own, outside the MULTI/EXEC of the INCRBYs, and nothing "
                f"looked at it before the resend: {resend}; write it in the same MULTI/EXEC as the INCRBYs and "
                "look for it before each send")
    if any(s.args[0].upper() == "WATCH" and account in s.args[1:] for s in call.sent):
        return (f"{due}: under WATCH redis-py turns the lost EXEC reply into a WatchError, and Redis.transaction() "
                "ran your function again, which read the new balance and charged once more; WATCH guards what "
                "you read, not the charge: a marker keyed by charge_id, written with the INCRBYs, tells a second "
                "run that the work is done")
    return (f"{due}: {resend}; redis-py's default Retry does that, resending the whole pipeline after a timeout or "
            "a dropped connection up to 10 times (socket_timeout is 5 s when you set none), and so does any loop "
            "that sends again blindly; write a marker keyed by charge_id in the same MULTI/EXEC as the INCRBYs, "
            "turn the client's retries off (retry=Retry(NoBackoff(), 0)) and send again only when the marker is "
            "absent")


def _judge(call: _Charge, account: str) -> None:
    """The first thing wrong with one call, as one NotSolved; nothing when it charged as due."""
    total = sum(EX08_AMOUNTS)
    want = 0 if call.step == "again" else 1
    if call.hung:
        raise _fail(8, f"charge had not returned {EX08_BOUND_S:g} s after the call"
                       + (f" ({call.silence()})" if call.fired else "")
                       + "; bound every wait: a socket_timeout you choose, and a bounded number of attempts")
    if call.fault and call.fired is None:
        raise _fail(8, f"charge sent no write to {account} through the host and port it was handed (call "
                       f"{call.charge_id!r}); build the client from host and port on every call")
    if call.step == "plain":
        if call.error is not None:
            raise _fail(8, f"charge raised {call.raised()} with no fault at all; fix that first")
        if not call.sends(account):
            raise _fail(8, f"charge did not charge through the host and port it was handed (the check's proxy saw "
                           f"no write to {account}); build the client from them")
        if call.moved != total:
            raise _fail(8, f"with no fault, one call moved the balance by {call.moved:,} where {total} was due; "
                           "INCRBY each amount into the account once")
        return
    if call.step == "again":
        if call.error is not None:
            raise _fail(8, f"charge raised {call.raised()} when called again with charge_id {call.charge_id!r}, "
                           "already charged; return normally, charging nothing")
        if call.moved:
            raise _fail(8, f"calling charge again with charge_id {call.charge_id!r}, already charged, moved the "
                           f"balance by {call.moved:,}; look for the marker before charging, so that your "
                           "caller's retry is harmless too")
        return
    if call.error is not None:
        if call.step == "reply" and call.runs == 1:
            raise _fail(8, f"charge raised {call.raised()} after its replies went silent, although the server "
                           f"had run the charge once (the balance moved by {call.moved:,}): your caller cannot "
                           "tell whether to charge again; on a timeout, find out whether it ran (a marker written "
                           "in the same MULTI/EXEC as the INCRBYs) and return normally")
        if call.step == "request" and call.runs == 0:
            raise _fail(8, f"charge raised {call.raised()} when its request was lost before reaching the server "
                           "(the balance did not move): when a timeout leaves you unsure, look for the marker; "
                           "absent means the charge did not run, so send it again and return normally")
        raise _fail(8, f"charge raised {call.raised()} after the server had run the charge {call.runs:g} times; "
                       "run it exactly once and return normally")
    if call.runs == want:
        return
    if call.runs == 0:
        what = ("its request never reached the server" if call.step == "request"
                else "the server ran nothing it was sent")
        raise _fail(8, f"charge returned normally although {what}: the balance did not move; a timeout means "
                       "'unknown', not 'done': look for the marker and send the charge again when it is absent")
    raise _fail(8, _charged_twice(call, account))


def check_ex08(lab: Lab, charge: Callable) -> dict:
    e = lab.endpoint
    if e.password is not None or e.tls or e.db:
        raise LabError("Exercise 8 hands charge a bare host and port, and the lab's Redis needs a password, TLS "
                       "or a database other than 0; run it on the embedded lab (make lab without REDIS_URL).")
    account = f"{_prefix(8)}account:42"
    total = sum(EX08_AMOUNTS)
    with _own_keys(lab, 8) as client, _FaultProxy(e, account) as proxy:
        print(f"charge({', '.join(map(str, EX08_AMOUNTS))}) = {total} to {account}, through the check's proxy at "
              f"{proxy.host}:{proxy.port} in front of {e.host}:{e.port}; four calls:")
        calls = []
        for step, charge_id, fault, label in (
                ("plain", "order-1", None, "no fault"),
                ("reply", "order-2", "reply", "the replies to its first write to the account are dropped"),
                ("again", "order-2", None, "the same charge_id again, no fault"),
                ("request", "order-3", "request", "its first write to the account is dropped before the server")):
            call = _charge(client, proxy, charge, account, step, charge_id, fault)
            _check_keys(call)
            _judge(call, account)
            calls.append(call)
            silent = f"; {call.silence()}" if call.fired else ""
            print(f"  {len(calls)}. {label} ({charge_id}): the balance moved by {call.moved:,} "
                  f"({call.runs:g} x {total}){silent}; charge returned after {call.seconds:.2f} s")
    reply, request = calls[1], calls[3]
    gave_up = (reply.fired.closed_at - reply.fired.fault_at) if reply.fired and reply.fired.closed_at else None
    _solved(8, f"charged exactly once when its replies were lost (returned after {reply.seconds:.1f} s) and when "
               f"its request was lost ({request.seconds:.1f} s); the same charge_id again charged nothing")
    return {"total": total, "reply_lost_runs": reply.runs, "reply_lost_s": reply.seconds,
            "reply_lost_sends": reply.sends(account), "client_gave_up_s": gave_up,
            "request_lost_runs": request.runs, "request_lost_s": request.seconds,
            "request_lost_sends": request.sends(account), "repeat_moved": calls[2].moved,
            "closed_by": reply.fired.closed_by if reply.fired else None}
