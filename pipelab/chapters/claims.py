"""A chapter's claims: a figure the reader measures, beside the figure its source published.

Each chapter module declares PUBLISHED (what its sources printed, with where) and CLAIMS (which
results-file value answers each one). The notebook and the site print the same table from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import paths, results, stats
from . import module


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
    return list(getattr(module(chapter), "CLAIMS", []))


def result_names(chapter: str) -> list[str]:
    return sorted({c.result for c in chapter_claims(chapter)})


NOT_MEASURED = "–"
INTERVAL_NOTE = "95% interval, from the run's repetitions (bootstrap; see the method page)"


def _interval(text: str | None) -> str:
    return f'<br><small title="{INTERVAL_NOTE}">{text}</small>' if text else ""


# short: the Reference column beside it says what the figure looks like


def measured(name: str, key: str, base: Path | None = None) -> dict | None:
    """A claim's figure from one run's results (`base`), None when that run did not measure it."""
    figure = results.summary_value(name, key, base)
    return figure if figure and figure.get("value") is not None else None


def rows(chapter: str, base: Path | None = None, reference: Path | None = None) -> list[dict]:
    """Each claim's published figure beside the reader's run (`base`, build/results) and the reference
    run (`reference`, pipelab/reference_run). The ratio to the published figure is the reader's when they
    measured it, else the reference's; "ratio_of" says whose."""
    out = []
    for claim in chapter_claims(chapter):
        mine = measured(claim.result, claim.key, base)
        ref = measured(claim.result, claim.key, reference or paths.reference_dir())
        ratio_of, figure = ("yours", mine) if mine else ("reference", ref) if ref else (None, None)
        published = claim.published.value
        out.append(
            {
                "label": claim.label,
                "published": results.format_value(published, claim.unit),
                "source": claim.published.source,
                "yours": mine["text"] if mine else NOT_MEASURED,
                "yours_interval": mine.get("interval_text") if mine else None,
                "reference": ref["text"] if ref else NOT_MEASURED,
                "reference_interval": ref.get("interval_text") if ref else None,
                "against_reference": against(mine, ref),
                "ratio": figure["value"] / published if figure and figure["value"] and published else None,
                "ratio_of": ratio_of,
            }
        )
    return out


def against(mine: dict | None, ref: dict | None) -> str:
    """The reader's figure beside the reference's: within the noise of the two runs, or how far apart."""
    if not mine or not ref or not mine["value"] or not ref["value"]:
        return NOT_MEASURED
    factor = mine["value"] / ref["value"]
    shown = f"×{factor:.2g}" if factor >= 1 else f"÷{1 / factor:.2g}"
    apart = stats.overlap(mine.get("interval"), ref.get("interval"))
    if apart is None:
        return f"{shown} (no interval to judge by)"
    return "within noise" if apart else f"differs: {shown}, beyond both intervals"


def quick_mode(chapter: str, base: Path | None = None) -> bool:
    docs = (results.load(name, base) for name in result_names(chapter))
    return any(doc["environment"].get("quick_mode") for doc in docs if doc)


def markdown_table(chapter: str, base: Path | None = None, reference: Path | None = None) -> str:
    """The reader's figures beside the published ones and the reference machine's: the notebook's last
    table and the site's. Before the reader measures, the ratio column is the reference's, marked so."""
    lines = []
    if quick_mode(chapter, base):
        lines += [
            '!!! warning "Quick mode"',
            "    These figures come from a quick run with reduced sizes "
            "(the tests' mode); `make book` measures the full sizes.",
            "",
        ]
    lines += [
        "| Measurement | Published | Yours | Reference | Yours against reference | Yours ÷ published | Source |",
        "|---|---:|---:|---:|---|---:|---|",
    ]
    for row in rows(chapter, base, reference):
        yours = (
            NOT_MEASURED if row["yours"] == NOT_MEASURED else f"**{row['yours']}**" + _interval(row["yours_interval"])
        )
        ref = row["reference"] + _interval(row["reference_interval"])
        ratio = (
            NOT_MEASURED
            if row["ratio"] is None
            else f"{row['ratio']:.3g}" + (" (reference)" if row["ratio_of"] == "reference" else "")
        )
        lines.append(
            f"| {row['label']} | {row['published']} | {yours} | {ref} | {row['against_reference']} | {ratio} "
            f"| {row['source']} |"
        )
    return results.MarkdownText("\n".join(lines))
