"""The reference run: one full book run's results, committed in pipelab/reference/, so the site reads
fully before the reader measures anything. `pipelab reference` copies build/results there and
writes its values into the Markdown for readers of the repository on GitHub; the site shows the
reader's own results wherever they exist, and the reference's, marked as such, elsewhere.
"""
from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import paths, results
from ..chapters.claims import NOT_MEASURED
from ..errors import LabError
from . import build, inputs

SOURCES = "sources.json"  # beside the chapters' folders: what each chapter's reference run was made from

# A figure in the prose. Bare: {{ ch01/ping-10k#python_speedup }}, in backticks for a code figure. As
# `pipelab reference` writes it: <span><!--{{ ch01/ping-10k#python_speedup }}-->17.6x</span>, where
# GitHub shows the reference's value and hides the comment (a span, unlike a comment, may open a line
# without ending the paragraph there); a code figure keeps its backticks around the value.
VALUE = re.compile(r"<span><!--\{\{\s*(?P<name>[\w/.-]+)#(?P<key>\w+)\s*\}\}-->"
                   r"(?P<code>`?)(?P<shown>.*?)(?P=code)</span>"
                   r"|(?P<bare_code>`?)\{\{\s*(?P<bare_name>[\w/.-]+)#(?P<bare_key>\w+)\s*\}\}(?P=bare_code)")


@dataclass(frozen=True)
class Marker:
    name: str  # results name, "ch01/ping-10k"
    key: str  # summary key
    code: bool  # shown as code

    def markdown(self, text: str) -> str:
        """`text` (a figure's text) as this marker shows it: a measured text may hold "|" (a list of
        results), which would split a table cell."""
        tick = "`" if self.code else ""
        text = text.replace("|", "\\|")
        return f"{tick}{text}{tick}"


def marker(match: re.Match) -> Marker:
    if match["name"]:
        return Marker(match["name"], match["key"], bool(match["code"]))
    return Marker(match["bare_name"], match["bare_key"], bool(match["bare_code"]))


def markers(markdown: str) -> list[Marker]:
    return [marker(match) for match in VALUE.finditer(markdown)]


def with_values(markdown: str, reference: Path | None = None) -> str:
    """Every figure marker of `markdown`, bare or written before, written again with the reference's
    value (NOT_MEASURED where it has none). Idempotent: a second pass changes nothing."""
    def write(match: re.Match) -> str:
        m = marker(match)
        figure = results.summary_value(m.name, m.key, reference or paths.reference_dir())
        return f"<span><!--{{{{ {m.name}#{m.key} }}}}-->{m.markdown(figure['text'] if figure else NOT_MEASURED)}</span>"
    return VALUE.sub(write, markdown)


def write_values(site: Path | None = None, reference: Path | None = None) -> list[Path]:
    """with_values over every Markdown file of the site's sources; the files it changed."""
    changed = []
    for md in sorted((site or paths.REPO / "site").rglob("*.md")):
        text = md.read_text()
        if (written := with_values(text, reference)) != text:
            md.write_text(written)
            changed.append(md)
    return changed


def shown(name: str) -> tuple[dict | None, bool]:
    """The results the site shows for `name`: the reader's own (build/results) when they exist, else
    the reference's. (document, True when it is the reference's); (None, False) with neither."""
    for base, is_reference in ((paths.results_dir(), False), (paths.reference_dir(), True)):
        if (doc := results.load(name, base)) is not None:
            return doc, is_reference
    return None, False


def provenance(environment: dict) -> str:
    """Where a reference figure comes from, e.g. "measured 2026-11-23 on AMD EPYC, 2 CPUs"."""
    when = f" {environment['measured_at'][:10]}" if environment.get("measured_at") else ""
    cpus = f", {environment['cpu_count']} CPUs" if environment.get("cpu_count") else ""
    return f"measured{when} on {environment.get('cpu_model') or 'an unrecorded CPU'}{cpus}"


def chapters() -> list[str]:
    """Every chapter's results folder ("ch01"), one per chapter notebook."""
    return [f"ch{notebook.name[:2]}" for notebook in build.notebooks()]


def publish(source: Path | None = None, target: Path | None = None) -> list[str]:
    """Copy every chapter's results files (JSON only; not the course's) from build/results (`source`)
    into the reference (`target`), replacing what was there; the names copied. Refuses, before
    touching the reference, a run that misses a chapter or was made in quick mode."""
    source, target = source or paths.results_dir(), target or paths.reference_dir()
    names = []
    for chapter in chapters():
        found = results.names(source, chapter)
        if not found:
            raise LabError(f"{source} holds no results of chapter {int(chapter[2:])}; `make reference` measures "
                           "every chapter.")
        names += found
    quick = [name for name in names if results.load(name, source)["environment"].get("quick_mode")]
    if quick:
        raise LabError(f"{results.path_for(quick[0], source)} comes from a quick run ({len(quick)} results files "
                       "do), and the reference needs the full sizes; `make reference` measures them.")
    for old in (p for p in target.iterdir() if p.is_dir()) if target.exists() else ():
        shutil.rmtree(old)
    for name in names:
        results.path_for(name, target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(results.path_for(name, source), results.path_for(name, target))
    (target / SOURCES).write_text(json.dumps(current_sources(), indent=1, sort_keys=True) + "\n")
    return names


def current_sources() -> dict:
    """{chapter: its sources' digests} as the working tree has them now."""
    return {f"ch{notebook.name[:2]}": inputs.sources(notebook) for notebook in build.notebooks()}


def stale_chapters(reference: Path | None = None) -> list[str]:
    """The chapters whose sources changed since the reference run was made (all, without a record)."""
    path = (reference or paths.reference_dir()) / SOURCES
    made_from = json.loads(path.read_text()) if path.exists() else {}
    return [chapter for chapter, digests in current_sources().items() if made_from.get(chapter) != digests]
