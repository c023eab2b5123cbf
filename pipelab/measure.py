"""Timing done one way everywhere: warm up, repeat, keep every sample, report median and spread."""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field

from tqdm.auto import tqdm

from . import stats
from .paths import env_flag


@dataclass
class Measurement:
    label: str
    ops: int  # operations in one sample, so throughput = ops / seconds
    samples: list[float] = field(default_factory=list)  # seconds, one per repetition
    params: dict = field(default_factory=dict)
    warmup: list[float] = field(default_factory=list)  # seconds of the untimed warm-up calls, kept to show why
    stopped: str = ""  # why the repetitions stopped where they did (see measure)
    paired_with: str = ""  # the group of measurements taken in the same rounds (measure_interleaved)

    @property
    def calls(self) -> int:
        """How many times the work ran, warm-up included (server-side counters count them all)."""
        return len(self.samples) + len(self.warmup)

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95% interval of the median, in seconds (None under 3 samples)."""
        return stats.median_interval(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.median

    @property
    def per_op_us(self) -> float:
        return self.median / self.ops * 1e6

    def spread(self) -> str:
        return f"{_seconds(self.median)} (min {_seconds(self.min)}, max {_seconds(self.max)}, n={len(self.samples)})"

    def __str__(self) -> str:
        return f"{self.label}: {self.spread()}, {self.ops_per_s:,.0f} ops/s"

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "ops": self.ops,
            "samples_s": self.samples,
            "params": self.params,
            "median_s": self.median,
            "min_s": self.min,
            "max_s": self.max,
            "ops_per_s": self.ops_per_s,
            "warmup_s": self.warmup,
            "median_interval_s": self.interval,
            "stopped": self.stopped,
            "paired_with": self.paired_with,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Measurement:
        return cls(
            data["label"],
            data["ops"],
            list(data["samples_s"]),
            dict(data.get("params", {})),
            list(data.get("warmup_s", [])),
            data.get("stopped", ""),
            data.get("paired_with", ""),
        )


def _seconds(value: float) -> str:
    if value >= 1:
        return f"{value:.3f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.1f} µs"


def show_progress() -> bool:
    """Bars in a terminal or JupyterLab; none when the book build executes notebooks (it shows its own)."""
    return os.environ.get("PIPELAB_PROGRESS", "1") != "0"


def progress(iterable: Iterable, desc: str, total: int | None = None):
    if not show_progress():
        return iterable

    return tqdm(iterable, desc=desc, total=total, leave=False)


# How long repetitions go on: until every median's 95% interval is within ±TARGET, or the next round
# would take the extra rounds past the time the first ones took (at least EXTRA_FLOOR_S, at most
# EXTRA_CAP_S), or MAX_FACTOR × repeat rounds.
TARGET = 0.05
EXTRA_FLOOR_S = 0.3
EXTRA_CAP_S = 2.0
JAVA_WARMUP_MORE = 60  # rounds; the JIT settles later than CPython's caches (LabTiming.JIT_QUIET_S), within EXTRA_CAP_S
MAX_FACTOR = 4
WARMUP_MORE = 3


_FROZEN = [0]  # how many settled_heap blocks are open (they nest)


@contextmanager
def settled_heap():
    """For a block of timed calls: what the process holds already is frozen out of the collector's
    way (a full collection of a notebook kernel's heap takes about 90 ms), so the collection before
    each timed call (timed) walks only what the calls left; thawed when the outermost block ends."""
    if not _FROZEN[0]:
        gc.freeze()
    _FROZEN[0] += 1
    try:
        yield
    finally:
        _FROZEN[0] -= 1
        if not _FROZEN[0]:
            gc.unfreeze()


def timed(run: Callable[[], object]) -> float:
    """Seconds one call of `run` takes, starting from a collected heap: left alone, a full collection
    fell inside every other call of a 10,000-command pipeline and doubled it (33 ms and 97 ms).
    Inside settled_heap() the collection is cheap."""
    gc.collect()
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def adaptive() -> bool:
    """Quick mode (the tests') checks directions, not figures: exactly the asked-for rounds there."""
    return not env_flag("PIPELAB_QUICK")


def repeat_rule() -> str:
    """The rule above as the Java examples take it (PIPELAB_REPEAT_RULE): target, floor, cap, factor
    and warm-up rounds beyond the asked-for ones; "" in quick mode."""
    return f"{TARGET},{EXTRA_FLOOR_S},{EXTRA_CAP_S},{MAX_FACTOR},{JAVA_WARMUP_MORE}" if adaptive() else ""


def _settled(samples: list[float]) -> bool:
    width = stats.relative_half_width(stats.median_interval(samples), statistics.median(samples))
    return width is not None and width <= TARGET


# What ended the rounds short of the target, by the code Python's rounds and Java's (LabSupport
# #interleaved) both give: "" when every median settled.
STOP_CAUSES = {"time": "the time cap", "rounds": "the round cap", "asked": "the asked-for rounds"}


def stop_cause(samples: list[float], settled: bool, repeat: int) -> str:
    if settled:
        return ""
    if not adaptive():
        return "asked"
    return "rounds" if len(samples) >= MAX_FACTOR * repeat else "time"


def stop_reason(samples: list[float], cause: str) -> str:
    """The interval reached and, when short of the target, what ended the rounds (STOP_CAUSES)."""
    width = stats.relative_half_width(stats.median_interval(samples), statistics.median(samples))
    shown = "no interval" if width is None else f"±{width:.0%}"
    return f"interval {shown} after {len(samples)}" + (f": stopped by {STOP_CAUSES[cause]}" if cause else "")


# --8<-- [start:measure]
def measure(
    label: str,
    run: Callable[[], object],
    *,
    ops: int,
    repeat: int = 5,
    warmup: int = 1,
    setup: Callable[[], object] | None = None,
    **params,
) -> Measurement:
    """Time `run` at least `repeat` times after `warmup` calls whose times are kept apart (never in the
    median), then more while the median's 95% interval is wider than ±TARGET and time allows;
    `setup` runs before each call, untimed."""
    [result] = measure_interleaved({label: run}, ops=ops, repeat=repeat, warmup=warmup, setup=setup, **params)
    result.paired_with = ""
    return result


def measure_interleaved(
    runs: dict[str, Callable[[], object]],
    *,
    ops: int,
    repeat: int = 5,
    warmup: int = 1,
    setup: Callable[[], object] | None = None,
    **params,
) -> list[Measurement]:
    """Time several ways of doing the same work in rounds, A B A B ..., so that a slow moment of the
    machine falls on all of them alike and their ratio can be taken round by round."""
    group = " / ".join(runs)
    results = [Measurement(label, ops, params=dict(params), paired_with=group) for label in runs]

    def one_round(keep: bool) -> float:
        spent = 0.0
        for result, run in zip(results, runs.values()):
            if setup is not None:
                setup()
            elapsed = timed(run)
            spent += elapsed
            (result.samples if keep else result.warmup).append(elapsed)
        return spent

    with settled_heap():
        first_rounds_s = _rounds(one_round, warmup, repeat, group)
        per_round = first_rounds_s / max(repeat, 1)
        budget = min(max(first_rounds_s, EXTRA_FLOOR_S), EXTRA_CAP_S) if adaptive() else 0.0
        extra = 0.0
        while (
            not all(_settled(r.samples) for r in results)
            and extra + per_round <= budget
            and len(results[0].samples) < MAX_FACTOR * repeat
        ):
            extra += one_round(keep=True)
    cause = stop_cause(results[0].samples, all(_settled(r.samples) for r in results), repeat)
    for result in results:
        result.stopped = stop_reason(result.samples, cause)
    return results


def _rounds(one_round: Callable[[bool], float], warmup: int, repeat: int, group: str) -> float:
    """The warm-up rounds, then `repeat` timed ones; the seconds the timed ones took."""
    first_rounds_s = 0.0
    # Warm up until a round is no longer clearly faster than the one before (caches, JIT, connections),
    # at least `warmup` rounds (two, to compare) and at most WARMUP_MORE beyond them.
    warm = [one_round(keep=False) for _ in range(warmup)]
    more = WARMUP_MORE if adaptive() else 0
    while warmup and len(warm) < warmup + more and (len(warm) < 2 or warm[-1] < 0.9 * warm[-2]):
        warm.append(one_round(keep=False))
    for _ in progress(range(repeat), desc=group):
        first_rounds_s += one_round(keep=True)
    return first_rounds_s


# --8<-- [end:measure]
