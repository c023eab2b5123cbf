"""How sure a figure is: 95% bootstrap intervals for a median and for the ratio of two medians.

The samples are few (5 to 40) and skewed (a slow repetition is common, a fast outlier is not), so the
intervals come from resampling rather than from a normal approximation. The generator is seeded:
the same samples give the same interval on every run of the book.
"""

from __future__ import annotations

import numpy as np

LEVEL = 0.95
RESAMPLES = 2000
MIN_SAMPLES = 3  # fewer than this give no interval
_SEED = 20261125


def _bounds(values: np.ndarray) -> tuple[float, float]:
    tail = (1 - LEVEL) / 2 * 100
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)


def median_interval(samples) -> tuple[float, float] | None:
    """The 95% interval of the median of `samples`, or None for too few."""
    data = np.asarray(samples, dtype=float)
    if len(data) < MIN_SAMPLES:
        return None
    rng = np.random.default_rng(_SEED)
    picks = rng.integers(0, len(data), (RESAMPLES, len(data)))
    return _bounds(np.median(data[picks], axis=1))


def ratio_interval(num, den, *, paired: bool) -> tuple[float, float] | None:
    """The 95% interval of median(num) / median(den). Paired samples (taken in the same rounds, A B A B)
    are resampled by round, so what a round shared (a busy moment of the machine) cancels out."""
    a, b = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if min(len(a), len(b)) < MIN_SAMPLES:
        return None
    rng = np.random.default_rng(_SEED)
    picks_a = rng.integers(0, len(a), (RESAMPLES, len(a)))
    if paired and len(a) == len(b):
        picks_b = picks_a
    else:
        picks_b = rng.integers(0, len(b), (RESAMPLES, len(b)))
    return _bounds(np.median(a[picks_a], axis=1) / np.median(b[picks_b], axis=1))


def relative_half_width(interval: tuple[float, float] | None, centre: float) -> float | None:
    """Half the interval's width over the figure: 0.05 is ±5%."""
    if interval is None or not centre:
        return None
    return (interval[1] - interval[0]) / 2 / abs(centre)


def overlap(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool | None:
    """Whether two intervals share a point; None when either is unknown."""
    if a is None or b is None:
        return None
    return a[0] <= b[1] and b[0] <= a[1]
