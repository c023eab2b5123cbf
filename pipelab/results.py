"""Results files: one JSON per experiment under build/results/<chapter>/<name>.json."""

from __future__ import annotations

import json
from pathlib import Path

from . import stats
from .measure import Measurement
from .paths import results_dir

UNITS = {"x", "s", "ms", "us", "ops/s", "count", "list", "%", "bytes", "num"}


def quantity(value, unit: str, text: str | None = None, interval: tuple[float, float] | None = None) -> dict:
    """A named number for the prose: its value, its unit, the text the site prints and, for a measured
    figure, its 95% interval (stats.py)."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}")
    figure = {"value": value, "unit": unit, "text": text if value is not None and text else format_value(value, unit)}
    if interval is not None and value is not None:
        figure["interval"] = [interval[0], interval[1]]
        figure["interval_text"] = format_interval(interval[0], interval[1], unit)
    return figure


def with_interval(figure: dict | None, none: str = "–") -> str:
    """A figure's text with its 95% interval after it, "554 µs (249 µs – 830 µs)", where it has one."""
    if figure is None:
        return none
    return figure["text"] + (f" ({figure['interval_text']})" if figure.get("interval_text") else "")


def format_interval(lo: float, hi: float, unit: str) -> str:
    """Both bounds as the unit prints them, with three significant digits where that would print
    two different bounds the same ("0.300 µs – 0.320 µs", not "0.3 µs – 0.3 µs")."""
    low, high = format_value(lo, unit), format_value(hi, unit)
    if low == high and lo != hi and unit in SUFFIX:
        low, high = (f"{v:#.3g}{SUFFIX[unit]}" for v in (lo, hi))
    return f"{low} – {high}"


SUFFIX = {"x": "x", "us": " µs", "ms": " ms", "s": " s", "ops/s": " ops/s", "%": "%", "num": ""}
SCALES = {"s": 1.0, "ms": 1e3, "us": 1e6}


def median_figure(m: Measurement, unit: str = "s", *, per_op: bool = False) -> dict:
    """A measurement's median time (the whole job's, or per operation) with its interval."""
    scale = SCALES[unit] / (m.ops if per_op else 1)
    interval = m.interval
    return quantity(m.median * scale, unit, interval=interval and (interval[0] * scale, interval[1] * scale))


def rate_figure(m: Measurement) -> dict:
    """Operations per second at the median, with its interval (a slower bound is a lower rate)."""
    interval = m.interval
    return quantity(m.ops_per_s, "ops/s", interval=interval and (m.ops / interval[1], m.ops / interval[0]))


def ratio_figure(num: Measurement, den: Measurement, scale: float = 1.0) -> dict:
    """scale × median(num) / median(den), as a ratio ("x") with its interval, paired by round when
    both were taken in the same rounds (measure_interleaved). For a speed-up, num is the slow one;
    for a ratio of rates, pass the faster-is-smaller times and the ops: ratio_figure(one, two, two.ops / one.ops)."""
    paired = bool(num.paired_with) and num.paired_with == den.paired_with
    interval = stats.ratio_interval(num.samples, den.samples, paired=paired)
    return quantity(
        scale * num.median / den.median,
        "x",
        interval=interval and (scale * interval[0], scale * interval[1]),
    )


def format_value(value, unit: str) -> str:
    if value is None:
        return "not measured"
    if unit == "list":
        return ", ".join(f"{v:g}" for v in value)
    if unit == "%":
        return f"{value:.0f}%"
    if unit == "num":
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if unit == "bytes":
        for size, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if value >= size:
                return f"{value / size:.1f} {name}"
        return f"{value:.0f} bytes"
    if unit == "x":  # a ratio under 1 keeps two decimals: 0.52x, not 0.5x
        return f"{value:.1f}x" if value >= 1 else f"{value:.2f}x"
    if unit == "ops/s":
        return f"{value:,.0f} ops/s" if value >= 10 else f"{value:.2f} ops/s"
    if unit == "count":
        return f"{value:,}"
    if unit == "us":
        return f"{value:,.1f} µs"
    if unit == "ms":
        return f"{value:,.0f} ms" if value >= 100 else f"{value:,.2f} ms"
    if value >= 1 or value == 0:
        return f"{value:.3f} s"
    return format_value(value * 1e3, "ms") if value >= 1e-3 else format_value(value * 1e6, "us")


class MarkdownText(str):
    """Markdown that Jupyter renders as such when a notebook displays it."""

    def _repr_markdown_(self) -> str:
        return str(self)


def md_table(header: list[str], rows: list[list]) -> MarkdownText:
    """A Markdown table of measured rows, for a notebook or a site page."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [
        "| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows
    ]  # "|" in a text stays in its cell
    return MarkdownText("\n".join(lines))


def path_for(name: str, base: Path | None = None) -> Path:
    return (base or results_dir()) / f"{name}.json"


def save(
    name: str,
    *,
    environment: dict,
    measurements: list[Measurement] = (),
    params: dict | None = None,
    summary: dict | None = None,
    notes: list[str] | None = None,
    plot_alt: str | None = None,
    base: Path | None = None,
) -> Path:
    """Write results/<name>.json (name like 'ch01/ping-10k'); returns the path."""
    path = path_for(name, base)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "name": name,
        "environment": environment,
        "params": params or {},
        "measurements": [m.to_dict() for m in measurements],
        "summary": summary or {},
        "notes": notes or [],
        "plot_alt": plot_alt,
    }
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return path


def load(name: str, base: Path | None = None) -> dict | None:
    path = path_for(name, base)
    if not path.exists():
        return None
    doc = json.loads(path.read_text())
    doc["measurements"] = [Measurement.from_dict(m) for m in doc.get("measurements", [])]
    return doc


def summary_value(name: str, key: str, base: Path | None = None) -> dict | None:
    doc = load(name, base)
    if doc is None:
        return None
    return doc["summary"].get(key)


def names(base: Path | None = None, chapter: str | None = None) -> list[str]:
    """Every results file's name ("ch01/ping-10k"), or one chapter's."""
    root = base or results_dir()
    return [p.relative_to(root).with_suffix("").as_posix() for p in sorted(root.glob(f"{chapter or '*'}/*.json"))]


FRAME_COLUMNS = [
    "chapter",
    "experiment",
    "measurement",
    "label",
    "ops",
    "sample",
    "seconds",
    "warmup",
    "server",
    "redis_version",
    "cpu_count",
    "quick_mode",
    "measured_at",
    "ops_per_s",
]


def measurements_frame(measurements, **columns):
    """Measurements (saved or not yet) as a tidy pandas DataFrame: one row per repetition, and per
    warm-up call (warmup=True), each measurement's parameters spread into param_* columns, and
    `columns` (e.g. chapter="ch02", experiment="depth") on every row."""
    import pandas as pd  # noqa: PLC0415  (only where a frame is asked for)

    rows = []
    for index, m in enumerate(measurements):
        for warm, samples in ((True, m.warmup), (False, m.samples)):
            for i, seconds in enumerate(samples):
                rows.append(
                    {
                        **columns,
                        "measurement": index,
                        "label": m.label,
                        "ops": m.ops,
                        "sample": i,
                        "seconds": seconds,
                        "warmup": warm,
                        **{f"param_{k}": v for k, v in m.params.items()},
                    }
                )
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame["ops_per_s"] = frame["ops"] / frame["seconds"]
    return frame


def results_frame(chapter: str | None = None, base: Path | None = None):
    """Every sample of every results file as one tidy pandas DataFrame (see measurements_frame), with
    the environment it was measured in. `chapter` ("ch02") keeps one chapter."""
    import pandas as pd  # noqa: PLC0415

    frames = []
    for name in names(base, chapter):
        doc = load(name, base)
        env = doc["environment"]
        chap, experiment = name.split("/", 1)
        frames.append(
            measurements_frame(
                doc["measurements"],
                chapter=chap,
                experiment=experiment,
                server=env.get("server") or "redis",
                redis_version=env.get("redis_version"),
                cpu_count=env.get("cpu_count"),
                quick_mode=bool(env.get("quick_mode")),
                measured_at=env.get("measured_at"),
            )
        )
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=FRAME_COLUMNS)


def summarize(frame, by=("label",)):
    """Median, fastest and slowest repetition per measurement (warm-up calls left out), with ops/s at
    the median and the spread (max − min) ÷ median; `by` names the columns that identify one."""
    timed = frame[~frame["warmup"]]
    grouped = timed.groupby(list(by), sort=False)
    out = grouped["seconds"].agg(n="count", median_s="median", min_s="min", max_s="max").reset_index()
    out["ops"] = grouped["ops"].first().values
    out["ops_per_s"] = out["ops"] / out["median_s"]
    out["spread"] = (out["max_s"] - out["min_s"]) / out["median_s"]
    first = frame[frame["warmup"] & (frame["sample"] == 0)].set_index(list(by))["seconds"]
    out["first_warmup_s"] = [first.get(key) for key in out.set_index(list(by)).index]
    return out
