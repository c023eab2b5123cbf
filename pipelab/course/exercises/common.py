"""What every exercise check shares: the exercises' table, NotSolved, keys under pipelab:exNN:, timing and the verdict."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

import redis

from ... import observe
from ...chapters import ch04
from ...errors import LabError
from ...lab import Lab
from ...measure import Measurement, measure_interleaved
from ...server import PREFIX, delete_lab_keys

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
    9: ("delete_matching", 9, "Deleting or expiring by pattern"),
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
        raise NotSolved(
            f"Exercise {ex} is not solved yet: fill in {EXERCISES[ex][0]} (see the TODO); {_where(ex)} explains it."
        ) from None


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
        with (
            observe.wire(lab.endpoint) as calls,
            ch04.server_time(lab.endpoint, *timed) as usec,
            counters.measure() as delta,
        ):
            yield seen
        seen.update(calls=calls, usec=usec, reads=int(delta.values["total_reads_processed"]))
    finally:
        counters.close()


def _values(client: redis.Redis, keys: list[str], chunk: int = 1000) -> list:
    pipe = client.pipeline(transaction=False)
    for start in range(0, len(keys), chunk):
        pipe.mget(keys[start : start + chunk])
    return [value for values in pipe.execute() for value in values]


def _timed_in_turns(runs: dict[str, Callable], ops: int, setup: Callable, show: bool = True) -> list[Measurement]:
    """What a check compares, timed in rounds A B A B: a slow spell of the machine falls on both alike
    (timed one after the other, a quick run beside other work once saw a pipeline 2.4x where 3x was needed)."""
    out = measure_interleaved(runs, ops=ops, repeat=REPEAT, warmup=1, setup=setup)
    for m in out if show else ():
        print(f"  {m}")
    return out


def _solved(ex: int, figure: str) -> None:
    print(f"Exercise {ex} solved: {figure}")
