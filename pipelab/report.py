"""The reader's figures beside the published ones, built from results files (nothing typed by hand)."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from . import published, results
from .measure import Measurement
from .paths import results_dir


@dataclass(frozen=True)
class Claim:
    label: str
    result: str  # results name, e.g. "ch01/ping-10k"
    key: str  # summary key in that result
    unit: str  # of both figures, as results.format_value knows it
    published_key: str | None = None  # a key of published.PUBLISHED ...
    derived: float | None = None  # ... or a published figure computed from published ones
    derived_from: str = ""  # and where the figures it is computed from were published

    def published_value(self) -> float:
        return self.derived if self.derived is not None else published.value(self.published_key)

    def source(self) -> str:
        if self.published_key:
            return published.PUBLISHED[self.published_key]["source"]
        return f"computed from {self.derived_from}"


REDIS_IO_RATIO = "redis.io's 1.185 s / 0.251 s"
CLAIMS: dict[str, list[Claim]] = {
    "ch01": [
        Claim("10,000 PINGs one by one (redis-py)", "ch01/ping-10k", "python_unpipelined_s", "s",
              "ping_10k_unpipelined_s"),
        Claim("10,000 PINGs pipelined (redis-py)", "ch01/ping-10k", "python_pipelined_s", "s",
              "ping_10k_pipelined_s"),
        Claim("Pipelining speed-up, 10,000 PINGs (redis-py)", "ch01/ping-10k", "python_speedup", "x",
              derived=published.ping_speedup(), derived_from=REDIS_IO_RATIO),
        Claim("Pipelining speed-up, 10,000 PINGs (Jedis)", "ch01/ping-10k", "jedis_speedup", "x",
              derived=published.ping_speedup(), derived_from=REDIS_IO_RATIO),
        Claim("100,000 SADD one by one (Jedis)", "ch01/sadd-100k", "jedis_one_by_one_ms", "ms",
              "vivo_jedis_one_by_one_ms"),
        Claim("100,000 SADD, Jedis Pipeline", "ch01/sadd-100k", "jedis_pipeline_ms", "ms", "vivo_jedis_pipeline_ms"),
        Claim("100,000 SADD, Redisson RBatch", "ch01/sadd-100k", "redisson_rbatch_ms", "ms",
              "vivo_redisson_rbatch_ms"),
        Claim("Pipelining speed-up, 100,000 SADD (Jedis)", "ch01/sadd-100k", "jedis_speedup", "x",
              derived=published.vivo_pipeline_speedup(), derived_from="vivo's 162,655 ms / 504 ms"),
        Claim("Time per SADD one by one (Jedis)", "ch01/sadd-100k", "per_command_us", "us",
              derived=published.vivo_ms_per_command() * 1000, derived_from="vivo's 162,655 ms / 100,000"),
        Claim("Single requests/s at 250 ms RTT", "ch01/rtt-sweep", "single_ops_at_250ms", "ops/s",
              "rtt_250ms_max_rps"),
    ],
    "ch02": [
        Claim("Server read() calls per command, depth 1", "ch02/syscalls", "reads_per_cmd_depth1", "num",
              "reads_per_unpipelined_command"),
        Claim("Throughput at the plateau ÷ depth 1 (redis-py)", "ch02/depth", "redispy_gain", "x", "plateau_gain"),
        Claim("Throughput at the plateau ÷ depth 1 (Jedis)", "ch02/depth", "jedis_gain", "x", "plateau_gain"),
        Claim("Throughput at the plateau ÷ depth 1 (redis-benchmark)", "ch02/depth", "benchmark_gain", "x",
              "plateau_gain"),
        Claim("Time of one pipeline ÷ time in 10k batches (largest job)", "ch02/batches", "time_ratio", "x",
              "batch_time_ratio"),
    ],
    "ch03": [
        Claim("Redisson RBatch time ÷ Jedis Pipeline time, 100,000 SADD", "ch03/sadd", "redisson_vs_jedis", "x",
              derived=published.vivo_rbatch_over_pipeline(), derived_from="vivo's 1,399 ms / 504 ms"),
        Claim("JedisPool(8), 10 threads, ops/ms", "ch03/jmh", "pool8_10_loopback", "num", "jmh_pool8_10"),
        Claim("JedisPool(8), 50 threads, ops/ms", "ch03/jmh", "pool8_50_loopback", "num", "jmh_pool8_50"),
        Claim("One shared Lettuce connection, 10 threads, ops/ms", "ch03/jmh", "lettuce_10_loopback", "num",
              "jmh_lettuce_10"),
        Claim("One shared Lettuce connection, 50 threads, ops/ms", "ch03/jmh", "lettuce_50_loopback", "num",
              "jmh_lettuce_50"),
        Claim("Spring Data Redis on Lettuce, 50 threads, ops/ms", "ch03/jmh", "spring_50_loopback", "num",
              "jmh_spring_50"),
    ],
    "ch04": [
        Claim("LREM server time per call, largest list ÷ 1,000 elements", "ch04/lrem", "lrem_growth", "x",
              "lrem_growth_1k_to_1m"),
        Claim("LTRIM server time per call, largest list ÷ 1,000 elements", "ch04/lrem", "ltrim_growth", "x",
              "ltrim_growth_1k_to_1m"),
        Claim("Another client's entries inside a MULTI/EXEC block (most in any trial)", "ch04/interleave",
              "multi_inside_max", "count", "multi_foreign_commands"),
    ],
    "ch05": [
        Claim("Hash slots served by the cluster's masters", "ch05/crossslot", "slots", "count", "cluster_slots"),
        Claim("Slots used by 100,000 keys sharing one hash tag", "ch05/crossslot", "one_tag_slots", "count",
              "hash_tag_slots"),
        Claim("Pipelining speed-up, 100,000 SADD on the cluster (redis-py)", "ch05/sadd", "cluster_speedup", "x",
              derived=published.ping_speedup(), derived_from="redis.io's 1.185 s / 0.251 s for 10,000 PINGs on one server"),
    ],
}


def rows(chapter: str, base: Path | None = None) -> list[dict]:
    out = []
    for claim in CLAIMS.get(chapter, []):
        mine = results.summary_value(claim.result, claim.key, base)
        ratio = (mine["value"] / claim.published_value()) if mine and mine.get("value") and claim.published_value() else None
        out.append({"label": claim.label, "published": results.format_value(claim.published_value(), claim.unit),
                    "source": claim.source(), "ratio": ratio,
                    "yours": mine["text"] if mine and mine.get("value") is not None else "not measured yet"})
    return out


class MarkdownText(str):
    """Markdown that Jupyter renders as such when a notebook displays it."""

    def _repr_markdown_(self) -> str:
        return str(self)


def md_table(header: list[str], rows: list[list]) -> MarkdownText:
    """A Markdown table of a notebook's measured rows."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]  # "|" in a text stays in its cell
    return MarkdownText("\n".join(lines))


def quick_mode(chapter: str, base: Path | None = None) -> bool:
    docs = (results.load(name, base) for name in sorted({c.result for c in CLAIMS.get(chapter, [])}))
    return any(doc["environment"].get("quick_mode") for doc in docs if doc)


def markdown_table(chapter: str, base: Path | None = None) -> str:
    lines = []
    if quick_mode(chapter, base):
        lines += ["!!! warning \"Quick mode\"", "    These figures come from a quick run with reduced sizes "
                  "(the tests' mode); `make book` measures the full sizes.", ""]
    lines += ["| Measurement | Published | Yours | Yours ÷ published | Source |", "|---|---:|---:|---:|---|"]
    for row in rows(chapter, base):
        ratio = f"{row['ratio']:.3g}" if row["ratio"] is not None else "–"
        lines.append(f"| {row['label']} | {row['published']} | **{row['yours']}** | {ratio} | {row['source']} |")
    return "\n".join(lines)


ENV_FIELDS = [("redis_version", "Redis"), ("redis_py", "redis-py"), ("hiredis", "hiredis"),
              ("java_clients", "Java clients"), ("python", "Python"), ("cpu_count", "CPUs"),
              ("cpu_model", "CPU"), ("kernel", "Linux kernel"), ("toxiproxy", "RTT injection"),
              ("quick_mode", "Quick mode"), ("measured_at", "Measured at")]


def environment_table(chapter: str, base: Path | None = None) -> str:
    names = sorted({c.result for c in CLAIMS.get(chapter, [])})
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
