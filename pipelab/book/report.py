"""What the site prints from results files besides each chapter's claims (chapters.claims): the
environment a chapter was measured in, and how far the repetitions of every measurement spread.
Each is the reader's run (`base`, build/results) when there is one, else the reference run's
(`reference`, pipelab/reference_run), which the table then says."""

from __future__ import annotations

from pathlib import Path

from .. import paths, results
from ..chapters import claims
from ..results import md_table
from .reference import provenance

ENV_FIELDS = [
    ("server", "Server"),
    ("redis_version", "Version"),
    ("mem_allocator", "Allocator"),
    ("io_threads", "io-threads"),
    ("redis_py", "redis-py"),
    ("hiredis", "hiredis"),
    ("valkey_glide", "Valkey GLIDE (Python)"),
    ("java_clients", "Java clients"),
    ("jvms", "JVM per example (collector, CPUs it saw)"),
    ("python", "Python"),
    ("cpu_count", "CPUs"),
    ("cpu_model", "CPU"),
    ("placement", "Placement"),
    ("probe", "Machine speed when saved (pipelab.probe)"),
    ("kernel", "Linux kernel"),
    ("toxiproxy", "RTT injection"),
    ("quick_mode", "Quick mode"),
    ("lock_sha256", "Python lock (uv.lock, SHA-256)"),
    ("measured_at", "Measured at"),
]


def _environments(chapter: str, base: Path) -> list[dict]:
    names = sorted(set(claims.result_names(chapter)) | set(results.names(base, chapter)))  # not all have claims
    return [doc["environment"] for doc in (results.load(n, base) for n in names) if doc]


def _placement(p: dict) -> str:
    cpus = [
        f"{side} on CPU {', '.join(map(str, p[key]))}"
        for side, key in (("clients", "client_cpus"), ("server", "server_cpus"))
        if p.get(key)
    ]
    idle = [f"idle CPUs: {p['cpu_idle']}"] if p.get("cpu_idle") else []
    return "; ".join([p.get("policy", ""), *cpus, *idle])


def environment_table(chapter: str, base: Path | None = None, reference: Path | None = None) -> str:
    lines = []
    envs = _environments(chapter, base or paths.results_dir())
    if not envs and (envs := _environments(chapter, reference or paths.reference_dir())):
        lines += [f"_The reference machine's environment ({provenance(envs[0])}): `make book` measures on yours._", ""]
    if not envs:
        return "_Not measured yet: run `make book`._"
    merged: dict = {}
    for env in envs:
        for key, value in env.items():
            if key in ("java_clients", "jvms") and isinstance(value, dict):
                merged.setdefault(key, {}).update(value)
            else:
                merged.setdefault(key, value)
    lines += ["| Component | Version or value |", "|---|---|"]
    for key, title in ENV_FIELDS:
        value = merged.get(key)
        if isinstance(value, bool):
            value = "yes" if value else "no"
        elif key == "placement" and isinstance(value, dict):
            value = _placement(value)
        elif key == "probe" and isinstance(value, dict):
            value = f"{value['cpu_loop_ms']:.1f} ms for a fixed CPU loop; {value['ping_us']:.0f} µs per PING one by one"
        elif key == "jvms" and isinstance(value, dict):
            value = "; ".join(f"{alias}: {jvm}" for alias, jvm in sorted(value.items())) or None
        elif isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items() if v) or None
        if value is not None:
            lines.append(f"| {title} | {value} |")
    return "\n".join(lines)


def spread_tables(base: Path | None = None, reference: Path | None = None) -> str:
    """The method page's evidence: how much the repetitions of every measurement in the run disagreed."""
    frame, whose, note = results.results_frame(base=base), "your run", ""
    if not len(frame):
        reference = reference or paths.reference_dir()
        frame, whose = results.results_frame(base=reference), "the reference machine's run"
        if len(frame):
            note = (
                f" ({provenance(results.load(results.names(reference)[0], reference)['environment'])}; "
                "`make book` measures yours)"
            )
    every = results.summarize(frame, by=("chapter", "experiment", "measurement", "label")) if len(frame) else frame
    every = every[every["n"] > 1] if len(every) else every
    if not len(every):
        return "_Not measured yet: run `make book`._"
    every = every.assign(
        file=every["chapter"] + "/" + every["experiment"], warm=every["first_warmup_s"] / every["median_s"]
    )

    def pct(v):
        return f"{v:.0%}"

    # NaN: no warm-up was kept
    def times(v):
        return "–" if v != v else f"{v:.2f}x"

    summary = []
    for name, group in every.groupby("file", sort=True):
        widest = group.loc[group["spread"].idxmax()]
        summary.append(
            [
                name,
                len(group),
                pct(group["spread"].median()),
                f"{pct(widest['spread'])} ({widest['label']})",
                times(group["warm"].median()),
            ]
        )
    rows = [
        [
            r.file,
            r.label,
            r.n,
            results.format_value(r.median_s, "s"),
            results.format_value(r.min_s, "s"),
            results.format_value(r.max_s, "s"),
            pct(r.spread),
            times(r.warm),
        ]
        for r in every.itertuples()
    ]
    lines = [
        f"{whose.capitalize()}{note} holds {len(every)} measurements with repetitions. Half of them spread by "
        f"{pct(every['spread'].median())} or less from fastest to slowest repetition; the widest spread was "
        f"{pct(every['spread'].max())}.",
        "",
        md_table(
            ["Results file", "Measurements", "Median spread", "Widest spread", "First warm-up ÷ median (median)"],
            summary,
        ),
        "",
        f'??? info "Every measurement of {whose}"',
        "",
    ]
    table = md_table(
        ["Results file", "Measurement", "n", "Median", "Fastest", "Slowest", "Spread", "First warm-up ÷ median"], rows
    )
    lines += ["    " + line for line in table.splitlines()]
    return "\n".join(lines)
