"""A chapter's claims: a figure the reader measures, beside the figure its source published.

Each chapter module declares PUBLISHED (what its sources printed, with where) and CLAIMS (which
results-file value answers each one). The notebook and the site print the same table from them.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from .. import results


@dataclass(frozen=True)
class Published:
    """A figure quoted from a source, never measured here."""

    value: float
    unit: str
    source: str


def derived(value: float, unit: str, computed_from: str) -> Published:
    """A published figure computed from published ones (a ratio, a per-command time)."""
    return Published(value, unit, f"computed from {computed_from}")


@dataclass(frozen=True)
class Claim:
    label: str
    result: str  # results name, e.g. "ch01/ping-10k"
    key: str  # summary key in that result
    unit: str  # of both figures, as results.format_value knows it
    published: Published


def chapter_claims(chapter: str) -> list[Claim]:
    """CLAIMS of pipelab.chapters.<chapter> (e.g. "ch01"); none for a chapter without claims."""
    try:
        module = importlib.import_module(f"{__package__}.{chapter}")
    except ModuleNotFoundError:
        return []
    return list(getattr(module, "CLAIMS", []))


def result_names(chapter: str) -> list[str]:
    return sorted({c.result for c in chapter_claims(chapter)})


def rows(chapter: str, base: Path | None = None) -> list[dict]:
    out = []
    for claim in chapter_claims(chapter):
        mine = results.summary_value(claim.result, claim.key, base)
        published = claim.published.value
        ratio = mine["value"] / published if mine and mine.get("value") and published else None
        out.append({"label": claim.label, "published": results.format_value(published, claim.unit),
                    "source": claim.published.source, "ratio": ratio,
                    "yours": mine["text"] if mine and mine.get("value") is not None else "not measured yet"})
    return out


def quick_mode(chapter: str, base: Path | None = None) -> bool:
    docs = (results.load(name, base) for name in result_names(chapter))
    return any(doc["environment"].get("quick_mode") for doc in docs if doc)


def markdown_table(chapter: str, base: Path | None = None) -> str:
    """The reader's figures beside the published ones: the notebook's last table and the site's."""
    lines = []
    if quick_mode(chapter, base):
        lines += ["!!! warning \"Quick mode\"", "    These figures come from a quick run with reduced sizes "
                  "(the tests' mode); `make book` measures the full sizes.", ""]
    lines += ["| Measurement | Published | Yours | Yours ÷ published | Source |", "|---|---:|---:|---:|---|"]
    for row in rows(chapter, base):
        ratio = f"{row['ratio']:.3g}" if row["ratio"] is not None else "–"
        lines.append(f"| {row['label']} | {row['published']} | **{row['yours']}** | {ratio} | {row['source']} |")
    return results.MarkdownText("\n".join(lines))
