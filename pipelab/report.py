"""The reader's figures beside the published ones, built from results files (nothing typed by hand)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import published, results


@dataclass(frozen=True)
class Claim:
    label: str
    published_key: str | None  # a key of published.PUBLISHED, or None for a derived figure
    result: str  # results name, e.g. "ch01/ping-10k"
    key: str  # summary key in that result
    derived: float | None = None  # a published figure computed from published ones
    derived_from: str = ""  # where the figures it is computed from were published

    def published_value(self) -> float:
        return self.derived if self.derived is not None else published.value(self.published_key)

    def published_text(self, unit: str) -> str:
        return results.format_value(self.published_value(), unit)

    def source(self) -> str:
        if self.published_key:
            return published.PUBLISHED[self.published_key]["source"]
        return f"computed from {self.derived_from}"


CLAIMS: dict[str, list[Claim]] = {
    "ch01": [
        Claim("10,000 PINGs one by one (redis-py)", "ping_10k_unpipelined_s", "ch01/ping-10k", "python_unpipelined_s"),
        Claim("10,000 PINGs pipelined (redis-py)", "ping_10k_pipelined_s", "ch01/ping-10k", "python_pipelined_s"),
        Claim("Pipelining speed-up, 10,000 PINGs (redis-py)", None, "ch01/ping-10k", "python_speedup",
              derived=published.ping_speedup(), derived_from="redis.io's 1.185 s / 0.251 s"),
        Claim("Pipelining speed-up, 10,000 PINGs (Jedis)", None, "ch01/ping-10k", "jedis_speedup",
              derived=published.ping_speedup(), derived_from="redis.io's 1.185 s / 0.251 s"),
        Claim("100,000 SADD one by one (Jedis)", "vivo_jedis_one_by_one_ms", "ch01/sadd-100k", "jedis_one_by_one_ms"),
        Claim("100,000 SADD, Jedis Pipeline", "vivo_jedis_pipeline_ms", "ch01/sadd-100k", "jedis_pipeline_ms"),
        Claim("100,000 SADD, Redisson RBatch", "vivo_redisson_rbatch_ms", "ch01/sadd-100k", "redisson_rbatch_ms"),
        Claim("Time per SADD one by one (Jedis)", None, "ch01/sadd-100k", "per_command_us",
              derived=published.vivo_ms_per_command() * 1000, derived_from="vivo's 162,655 ms / 100,000"),
        Claim("Single requests/s at 250 ms RTT", "rtt_250ms_max_rps", "ch01/rtt-sweep", "single_ops_at_250ms"),
    ],
}


def rows(chapter: str, base: Path | None = None) -> list[dict]:
    out = []
    for claim in CLAIMS.get(chapter, []):
        mine = results.summary_value(claim.result, claim.key, base)
        unit = mine["unit"] if mine else published.PUBLISHED.get(claim.published_key, {}).get("unit", "x")
        if claim.key == "per_command_us":
            unit = "us"
        ratio = (mine["value"] / claim.published_value()) if mine and mine.get("value") else None
        out.append({"label": claim.label, "published": claim.published_text(unit), "source": claim.source(),
                    "yours": mine["text"] if mine else "not measured yet", "ratio": ratio})
    return out


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
    lines = ["| | |", "|---|---|"]
    for key, title in ENV_FIELDS:
        value = merged.get(key)
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items() if v) or None
        if value is not None:
            lines.append(f"| {title} | {value} |")
    return "\n".join(lines)
