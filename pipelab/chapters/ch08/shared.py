"""Chapter 8, section 6: one pipeline object shared by threads (redis-py) or coroutines
(redis.asyncio), against a pipeline per call and the shared one behind a lock. Each caller counts
the replies it got that belong to another caller and the exceptions it met; the server counts the
SETs that never ran and those that ran more than once. Jedis's Pipeline is measured the same way by
the ch08-jedis-shared example.

The harness only: the shared pipeline and its two fixes, for threads and for coroutines, are the
notebook's cell tagged code:shared, passed in by the notebook."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

import redis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff

from ...params import Size
from ...results import md_table, quantity
from ...server import PREFIX as LAB_PREFIX
from ..ch04 import no_retry_client
from ..ch07 import LoopThread

SHARED_PREFIX = LAB_PREFIX + "ch08:shared:"  # ch08.PREFIX + "shared:"; ch08/__init__.py imports this module

SHARED_THREADS = Size(full=8, quick=8)  # callers that share one pipeline
SHARED_ROUNDS = Size(full=20, quick=10)  # execute() calls per caller in a trial
SHARED_TRIALS = Size(full=5, quick=3)  # trials per mode: a race that shows in one could be luck
PAIRS = 5  # SET+GET pairs a caller queues before each execute()
SHARED_TIMEOUT_S = 0.5  # socket_timeout: a caller waiting for replies another caller read gives up soon

MODES = {
    "shared": "one pipeline, shared",
    "per_call": "a pipeline per call",
    "lock": "one pipeline behind a lock",
}
CASE_COUNTS = (
    "calls",
    "replies_expected",
    "own",
    "missing",
    "wrong",
    "issued",
    "lost",
    "extra_runs",
    "corrupt_values",
    "stray_keys",
)
FAULTS = ("wrong", "missing", "lost", "corrupt_values", "stray_keys")  # counts that make a trial faulty
CLIENTS = {"sync": "redis-py, threads", "async": "redis.asyncio, coroutines", "jedis": "Jedis, threads"}


def _batches(mode: str, trial: int, callers: int, rounds: int) -> list[list[list[str]]]:
    """Per caller, per round, the PAIRS keys it sets and gets; each key names its caller."""
    return [
        [[f"{SHARED_PREFIX}{mode}:{trial}:c{c}:r{r}:{i}" for i in range(PAIRS)] for r in range(rounds)]
        for c in range(callers)
    ]


def _outcome(call, keys):
    try:
        return call(keys)
    except Exception as err:  # the exception is the finding
        return err


async def _outcome_async(call, keys):
    try:
        return await call(keys)
    except Exception as err:  # the exception is the finding
        return err


def tally(batches: list[list[list[str]]], outcomes: list[list]) -> Counter:
    """What the callers saw: per execute() call, its own values that came back (own), those that did
    not (missing), values naming another caller's key (wrong) and exceptions by type."""
    seen = Counter()
    for caller_batches, caller_outcomes in zip(batches, outcomes):
        for keys, outcome in zip(caller_batches, caller_outcomes):
            seen["calls"] += 1
            if isinstance(outcome, Exception):
                seen[f"exception:{type(outcome).__name__}"] += 1
                outcome = []
            values = {v.decode() if isinstance(v, bytes) else v for v in outcome if isinstance(v, (str, bytes))}
            own = sum(key in values for key in keys)
            seen["own"] += own
            seen["missing"] += len(keys) - own
            seen["wrong"] += sum(1 for v in values if v.startswith(SHARED_PREFIX) and v not in keys)
    return seen


def _set_calls(r: redis.Redis) -> int:
    return r.info("commandstats").get("cmdstat_set", {}).get("calls", 0)


def _server_check(r: redis.Redis, prefix: str, batches, sets_before: int) -> Counter:
    """Issued SETs that never ran (their key is missing), extra runs (the server ran more SETs than the
    keys it holds), corrupt values and stray keys; then the trial's keys go."""
    keys = [key for caller in batches for batch in caller for key in batch]
    with r.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.exists(key)
        applied = sum(pipe.execute())
    runs = _set_calls(r) - sets_before
    # Keys whose value names another key, and keys under the trial's prefix no caller issued.
    corrupt = sum(v is not None and v != key for key, v in zip(keys, r.mget(keys)))
    issued = set(keys)
    stray = [k for k in r.scan_iter(match=prefix + "*", count=1000) if k not in issued]
    r.unlink(*keys, *stray)
    return Counter(
        issued=len(keys),
        lost=len(keys) - applied,
        extra_runs=max(0, runs - applied - len(stray)),
        corrupt_values=corrupt,
        stray_keys=len(stray),
    )


def _run_threads(run, batches) -> list[list]:
    outcomes = [[] for _ in batches]

    def caller(i: int) -> None:
        outcomes[i] = [_outcome(run, keys) for keys in batches[i]]

    threads = [threading.Thread(target=caller, args=(i,), name=f"ch08-shared-{i}") for i in range(len(batches))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


def _runner(mode: str, factories, r, pipe, lock):
    """The call one caller makes in `mode`, from the notebook's (shared, per_call, locked)."""
    shared, per_call, locked = factories
    return {"shared": lambda: shared(pipe), "per_call": lambda: per_call(r), "lock": lambda: locked(pipe, lock)}[mode]()


def _sync_trial(lab, mode: str, batches, threads) -> list[list]:
    r = no_retry_client(lab.endpoint, socket_timeout=SHARED_TIMEOUT_S)
    pipe = r.pipeline(transaction=False)
    try:
        return _run_threads(_runner(mode, threads, r, pipe, threading.Lock()), batches)
    finally:
        r.close()  # also drops the connections the shared pipeline left in an unknown state


async def _async_trial(lab, mode: str, batches, coroutines) -> list[list]:
    r = lab.endpoint.async_client(socket_timeout=SHARED_TIMEOUT_S, retry=AsyncRetry(NoBackoff(), 0))
    pipe = r.pipeline(transaction=False)
    run = _runner(mode, coroutines, r, pipe, asyncio.Lock())

    async def caller(keys_list):
        return [await _outcome_async(run, keys) for keys in keys_list]

    try:
        return list(await asyncio.gather(*(caller(b) for b in batches)))
    finally:
        try:
            await r.aclose()
        except Exception:  # a connection the shared pipeline broke may fail to close; it is dropped anyway
            pass


def measure_shared(lab, callers: int, rounds: int, trials: int, *, threads, coroutines) -> dict[str, dict[str, dict]]:
    """Per client (sync threads, asyncio coroutines) and MODES: the callers' tally and the server's
    counts summed over `trials`, and in how many trials anything went wrong. `threads` and `coroutines`
    are the notebook's (shared, per_call, locked) and (shared_async, per_call_async, locked_async): each
    takes the pipeline, the client, or the pipeline and a lock, and returns the call a caller makes."""
    control = lab.client(decode_responses=True)
    out: dict[str, dict[str, dict]] = {}
    with LoopThread() as loop:
        for client in ("sync", "async"):
            for mode in MODES:
                total, faulty = Counter(), 0
                for trial in range(trials):
                    batches = _batches(f"{client}:{mode}", trial, callers, rounds)
                    prefix = f"{SHARED_PREFIX}{client}:{mode}:{trial}:"
                    before = _set_calls(control)
                    if client == "sync":
                        outcomes = _sync_trial(lab, mode, batches, threads)
                    else:
                        outcomes = loop.run(_async_trial(lab, mode, batches, coroutines))
                    counts = tally(batches, outcomes) + _server_check(control, prefix, batches, before)
                    faulty += any(counts[k] for k in counts if k in FAULTS or ":" in k)
                    total += counts
                out.setdefault(client, {})[mode] = _as_case(total, trials, faulty)
    control.close()
    return out


def _as_case(total: Counter, trials: int, faulty: int) -> dict:
    exceptions = {k.split(":", 1)[1]: n for k, n in sorted(total.items()) if k.startswith("exception:")}
    return {
        "calls": total["calls"],
        "replies_expected": total["own"] + total["missing"],
        "own": total["own"],
        "missing": total["missing"],
        "wrong": total["wrong"],
        "exceptions": exceptions,
        "issued": total["issued"],
        "lost": total["lost"],
        "extra_runs": total["extra_runs"],
        "corrupt_values": total["corrupt_values"],
        "stray_keys": total["stray_keys"],
        "trials": trials,
        "trials_faulty": faulty,
    }


def java_cases(run) -> dict[str, dict]:
    """The ch08-jedis-shared example's facts (jedis_<mode>_<count>) as cases like measure_shared's."""
    f = run.facts
    cases = {}
    for mode in MODES:
        p = f"jedis_{mode}_"
        if p + "calls" not in f:
            continue
        exceptions = {}
        for part in filter(None, str(f.get(p + "exceptions", "")).split(", ")):
            name, _, n = part.rpartition(" ")
            exceptions[name] = int(n)
        cases[mode] = {k: f[p + k] for k in CASE_COUNTS if p + k in f} | {
            "exceptions": exceptions,
            "trials": f["trials"],
            "trials_faulty": f[p + "trials_faulty"],
        }
    return cases


def _exceptions_text(exceptions: dict) -> str:
    return ", ".join(f"{n:,} {name}" for name, n in exceptions.items()) or "none"


def shared_table(cases: dict[str, dict[str, dict]]) -> str:
    rows = [
        [
            CLIENTS[client],
            MODES[mode],
            f"{c['trials_faulty']} of {c['trials']}",
            f"{c['wrong']:,}",
            f"{c['missing']:,} of {c['replies_expected']:,}",
            _exceptions_text(c["exceptions"]),
            f"{c['lost']:,} of {c['issued']:,}",
            f"{c['extra_runs']:,}",
        ]
        for client, modes in cases.items()
        for mode, c in modes.items()
    ]
    return md_table(
        [
            "Client",
            "Pipeline",
            "Trials with a fault",
            "Replies naming another caller's key",
            "Own replies missing",
            "Exceptions",
            "SETs never run",
            "Extra SETs the server ran",
        ],
        rows,
    )


def shared_summary(cases: dict[str, dict[str, dict]], callers: int, rounds: int) -> dict:
    out = {
        "callers": quantity(callers, "count"),
        "rounds": quantity(rounds, "count"),
        "pairs": quantity(PAIRS, "count"),
        "socket_timeout_s": quantity(SHARED_TIMEOUT_S, "s", f"{SHARED_TIMEOUT_S:g} s"),
    }
    for client, modes in cases.items():
        for mode, c in modes.items():
            p = f"{client}_{mode}_"
            for k in CASE_COUNTS + ("trials",):
                out[p + k] = quantity(c[k], "count")
            out[p + "trials_faulty"] = quantity(c["trials_faulty"], "count")
            out[p + "exceptions"] = quantity(sum(c["exceptions"].values()), "count")
            out[p + "exception_types"] = quantity(0, "count", _exceptions_text(c["exceptions"]))
            # one number for "went wrong": misattributed or missing replies, exceptions, and SETs lost,
            # run again or mixed up on the server
            faults = sum(c[k] for k in FAULTS + ("extra_runs",)) + sum(c["exceptions"].values())
            out[p + "faults"] = quantity(faults, "count")
    return out


def measure_jedis_shared(lab, callers: int, rounds: int, trials: int):
    """ch08-jedis-shared on the lab's server: the same callers, rounds and trials as measure_shared."""
    return lab.java("ch08-jedis-shared", rounds, trials, 0, callers, PAIRS, round(SHARED_TIMEOUT_S * 1000))
