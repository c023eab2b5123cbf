"""Results files: one JSON per experiment under build/results/<chapter>/<name>.json."""
from __future__ import annotations

import json
from pathlib import Path

from .measure import Measurement
from .paths import results_dir

UNITS = {"x", "s", "ms", "us", "ops/s", "count", "list", "%", "bytes", "num"}


def figure(value, unit: str, text: str | None = None) -> dict:
    """A named number for the prose: its value, its unit and the text the site prints."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}")
    return {"value": value, "unit": unit, "text": text if value is not None and text else format_value(value, unit)}


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
    if unit == "x":
        return f"{value:.1f}x"
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


def path_for(name: str, base: Path | None = None) -> Path:
    return (base or results_dir()) / f"{name}.json"


def save(name: str, *, environment: dict, measurements: list[Measurement] = (), params: dict | None = None,
         summary: dict | None = None, notes: list[str] | None = None, figure_alt: str | None = None,
         base: Path | None = None) -> Path:
    """Write results/<name>.json (name like 'ch01/ping-10k'); returns the path."""
    path = path_for(name, base)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"name": name, "environment": environment, "params": params or {},
           "measurements": [m.to_dict() for m in measurements], "summary": summary or {}, "notes": notes or [], "figure_alt": figure_alt}
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
