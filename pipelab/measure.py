"""Timing done one way everywhere: warm up, repeat, keep every sample, report median and spread."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tqdm.auto import tqdm


@dataclass
class Measurement:
    label: str
    ops: int  # operations in one sample, so throughput = ops / seconds
    samples: list[float] = field(default_factory=list)  # seconds, one per repetition
    params: dict = field(default_factory=dict)
    warmup: list[float] = field(default_factory=list)  # seconds of the untimed warm-up calls, kept to show why

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
        }

    @classmethod
    def from_dict(cls, data: dict) -> Measurement:
        return cls(
            data["label"],
            data["ops"],
            list(data["samples_s"]),
            dict(data.get("params", {})),
            list(data.get("warmup_s", [])),
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
    """Time `run` `repeat` times after `warmup` calls whose times are kept apart (never in the median);
    `setup` runs before each call, untimed."""
    result = Measurement(label, ops, params=params)
    for i in progress(range(warmup + repeat), desc=label):
        if setup is not None:
            setup()
        start = time.perf_counter()
        run()
        elapsed = time.perf_counter() - start
        (result.samples if i >= warmup else result.warmup).append(elapsed)
    return result


# --8<-- [end:measure]
