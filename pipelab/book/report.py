"""What the site prints from results files besides each chapter's claims (chapters.claims): the
environment a chapter was measured in, and how far the repetitions of every measurement spread."""
from __future__ import annotations

import statistics
from pathlib import Path

from .. import results
from ..chapters import claims
from ..measure import Measurement
from ..paths import results_dir
from ..results import md_table


ENV_FIELDS = [("server", "Server"), ("redis_version", "Version"), ("redis_py", "redis-py"), ("hiredis", "hiredis"),
              ("java_clients", "Java clients"), ("python", "Python"), ("cpu_count", "CPUs"),
              ("cpu_model", "CPU"), ("kernel", "Linux kernel"), ("toxiproxy", "RTT injection"),
              ("quick_mode", "Quick mode"), ("lock_sha256", "Python lock (uv.lock, SHA-256)"),
              ("measured_at", "Measured at")]


def environment_table(chapter: str, base: Path | None = None) -> str:
    names = claims.result_names(chapter)
    envs = [doc["environment"] for doc in (results.load(n, base) for n in names) if doc]
    if not envs:
        return "_Not measured yet: run `make book`._"
    merged: dict = {}
    for env in envs:
        for key, value in env.items():
            if key == "java_clients" and isinstance(value, dict):
                merged.setdefault(key, {}).update(value)
            else:
                merged.setdefault(key, value)
    lines = ["| Component | Version or value |", "|---|---|"]
    for key, title in ENV_FIELDS:
        value = merged.get(key)
        if isinstance(value, bool):
            value = "yes" if value else "no"
        elif isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items() if v) or None
        if value is not None:
            lines.append(f"| {title} | {value} |")
    return "\n".join(lines)


def _spread(m: Measurement) -> float:
    """(max − min) ÷ median: how far apart the repetitions of one measurement landed."""
    return (m.max - m.min) / m.median if m.median else 0.0


def _warmup_ratio(m: Measurement) -> float | None:
    return m.warmup[0] / m.median if m.warmup and m.median else None


def repeated_measurements(base: Path | None = None) -> list[tuple[str, Measurement]]:
    """Every measurement of the run with two or more repetitions, by results file."""
    root = base or results_dir()
    found = []
    for path in sorted(root.glob("*/*.json")):
        doc = results.load(path.relative_to(root).with_suffix("").as_posix(), base)
        found += [(doc["name"], m) for m in doc["measurements"] if len(m.samples) > 1]
    return found


def spread_tables(base: Path | None = None) -> str:
    """The method page's evidence: how much the repetitions of every measurement in the run disagreed."""
    found = repeated_measurements(base)
    if not found:
        return "_Not measured yet: run `make book`._"
    by_file: dict[str, list[Measurement]] = {}
    for name, m in found:
        by_file.setdefault(name, []).append(m)
    pct = lambda v: f"{v:.0%}"  # noqa: E731
    summary = []
    for name, ms in by_file.items():
        widest = max(ms, key=_spread)
        warm = [r for r in map(_warmup_ratio, ms) if r is not None]
        summary.append([name, len(ms), pct(statistics.median(map(_spread, ms))),
                        f"{pct(_spread(widest))} ({widest.label})",
                        f"{statistics.median(warm):.2f}x" if warm else "–"])
    every = [[name, m.label, len(m.samples), results.format_value(m.median, "s"), results.format_value(m.min, "s"),
              results.format_value(m.max, "s"), pct(_spread(m)),
              f"{_warmup_ratio(m):.2f}x" if _warmup_ratio(m) is not None else "–"] for name, m in found]
    spreads = sorted(_spread(m) for _, m in found)
    lines = [f"Your run holds {len(found)} measurements with repetitions. Half of them spread by "
             f"{pct(statistics.median(spreads))} or less from fastest to slowest repetition; the widest spread was "
             f"{pct(spreads[-1])}.", "",
             md_table(["Results file", "Measurements", "Median spread", "Widest spread",
                       "First warm-up ÷ median (median)"], summary), "",
             '??? info "Every measurement of your run"', ""]
    table = md_table(["Results file", "Measurement", "n", "Median", "Fastest", "Slowest", "Spread",
                      "First warm-up ÷ median"], every)
    lines += ["    " + line for line in table.splitlines()]
    return "\n".join(lines)
