"""The reference run: one full book run's results, committed in pipelab/reference_run/, so the site reads
fully before the reader measures anything. `pipelab reference` copies build/results there and
writes its values into the Markdown for readers of the repository on GitHub; the site shows the
reader's own results wherever they exist, and the reference's, marked as such, elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

from .. import envinfo, paths, results, weather
from ..chapters.claims import NOT_MEASURED
from ..errors import LabError
from . import build, inputs, markers

SOURCES = "sources.json"  # beside the chapters' folders: what each chapter's reference run was made from
TIMINGS = "book/timings"  # how long the reference run's parts took, for the README and CONTRIBUTING.md
TEST_TIME = "test-time.json"  # in build/: the last whole `make test` (tests/conftest.py writes it)
BOOK_TIME = "book-time.json"  # in build/: the last run that measured every chapter at full size (record_time)


def with_values(markdown: str, reference: Path | None = None) -> str:
    """Every figure marker of `markdown`, bare or written before, written again with the reference's
    value (NOT_MEASURED where it has none). Idempotent: a second pass changes nothing."""

    def write(match: re.Match) -> str:
        marker = markers.value(match)
        figure = results.summary_value(marker.name, marker.key, reference or paths.reference_dir())
        return marker.written(figure["text"] if figure else NOT_MEASURED)

    return markers.VALUE.sub(write, markdown)


def write_values(site: Path | None = None, reference: Path | None = None) -> list[Path]:
    """with_values over every Markdown file of the site's sources, the README and CONTRIBUTING.md; the files
    it changed."""
    changed = []
    readme = [] if site else [paths.REPO / "README.md", paths.REPO / "CONTRIBUTING.md"]  # timings (TIMINGS)
    for md in sorted((site or paths.REPO / "site").rglob("*.md")) + readme:
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
    """Copy every chapter's results files (JSON only), and the course's when there are, from build/results (`source`)
    into the reference (`target`), replacing what was there; the names copied. Refuses, before
    touching the reference, a run that misses a chapter or was made in quick mode."""
    source, target = source or paths.results_dir(), target or paths.reference_dir()
    names = []
    for chapter in chapters():
        found = results.names(source, chapter)
        if not found:
            raise LabError(
                f"{source} holds no results of chapter {int(chapter[2:])}; `make reference` measures every chapter."
            )
        names += found
    quick = [name for name in names if results.load(name, source)["environment"].get("quick_mode")]
    if quick:
        raise LabError(
            f"{results.path_for(quick[0], source)} comes from a quick run ({len(quick)} results files "
            "do), and the reference needs the full sizes; `make reference` measures them."
        )
    made_from = {chapter: run_sources(chapter) for chapter in chapters()}
    for old in (p for p in target.glob("ch*") if p.is_dir()) if target.exists() else ():
        shutil.rmtree(old)
    for name in names:
        results.path_for(name, target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(results.path_for(name, source), results.path_for(name, target))
    (target / SOURCES).write_text(json.dumps(made_from, indent=1, sort_keys=True) + "\n")
    if (sky := results.path_for(weather.NAME, source)).exists():  # the machine's weather around the run
        results.path_for(weather.NAME, target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sky, results.path_for(weather.NAME, target))
    return names + publish_course(source, target)


def publish_course(source: Path | None = None, target: Path | None = None) -> list[str]:
    """The course's results (its timings and live demos, from `make course`) into the reference, so the
    trainer's page has figures before anyone runs anything; a quick run's are left out. The names copied."""
    source, target = source or paths.results_dir(), target or paths.reference_dir()
    names = [n for n in results.names(source, "course") if not results.load(n, source)["environment"].get("quick_mode")]
    for name in names:
        results.path_for(name, target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(results.path_for(name, source), results.path_for(name, target))
    return names


def _notebook(chapter: str) -> Path:
    return next(nb for nb in build.notebooks() if f"ch{nb.name[:2]}" == chapter)


def run_sources(chapter: str) -> dict:
    """What the chapter's last run in build/ was made from (its notebook, modules, the Java examples
    it ran, the lock), as the run recorded it; refused when no run recorded it."""
    last = inputs.last_run(_notebook(chapter))
    if last is None:
        raise LabError(
            f"No record of what chapter {int(chapter[2:])}'s last run was made from (build/inputs); "
            "`make reference` measures it and records it."
        )
    # "examples" and "toolchains": only a chapter with Node or Go examples records them; "taught": only one
    # that runs another notebook's cells (inputs.sources).
    parts = ("notebook", "python", "aliases", "java", "lock", "examples", "toolchains", "taught")
    return {part: last[part] for part in parts if part in last}


def current_sources(reference: Path | None = None) -> dict:
    """{chapter: its sources as the working tree has them now}, for the Java examples each chapter's
    reference run ran (none for a chapter it does not record)."""
    made_from = recorded_sources(reference)
    return {
        chapter: inputs.sources(_notebook(chapter), made_from.get(chapter, {}).get("aliases", []))
        for chapter in chapters()
    }


def recorded_sources(reference: Path | None = None) -> dict:
    path = (reference or paths.reference_dir()) / SOURCES
    return json.loads(path.read_text()) if path.exists() else {}


def stale_chapters(reference: Path | None = None) -> dict[str, list[str]]:
    """{chapter: what changed} for each chapter whose sources changed since the reference run was made
    (every chapter, without a record)."""
    made_from, now = recorded_sources(reference), current_sources(reference)
    stale = {chapter: inputs.changes(made_from.get(chapter, {}), sources) for chapter, sources in now.items()}
    return {chapter: changed for chapter, changed in stale.items() if changed}


def record_time(name: str, seconds: float, build_dir: Path | None = None, **extra) -> None:
    """How long the last whole run of a kind took, for the README (save_timings reads it): BOOK_TIME, a
    `make book` or `make reference` that measured every chapter at full size; TEST_TIME, a green `make
    test` of every test (tests/conftest.py, into the repository's build/, not the session's)."""
    target = (build_dir or paths.build_dir()) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    measured_at = datetime.now(UTC).isoformat(timespec="seconds")
    target.write_text(json.dumps({"seconds": round(seconds), **extra, "measured_at": measured_at}))


def _last(name: str) -> dict:
    return json.loads(path.read_text()) if (path := paths.build_dir() / name).exists() else {}


def unchanged_chapters(source: Path | None = None, target: Path | None = None) -> set[str]:
    """The chapters whose results files in build/results (`source`) are those the reference (`target`)
    already holds, byte for byte: publishing them again replaces nothing."""
    source, target = source or paths.results_dir(), target or paths.reference_dir()

    def files(root: Path, chapter: str) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((root / chapter).glob("*.json"))}

    return {chapter for chapter in chapters() if (made := files(source, chapter)) and made == files(target, chapter)}


def save_timings(
    site_s: float | None = None, target: Path | None = None, kept_chapters: set[str] = frozenset()
) -> Path:
    """The reference run's times as a results file (TIMINGS): each chapter's (recorded by its run; for
    `kept_chapters`, whose reference results were not replaced, the time of the run that made them), the
    last run on this machine that measured every chapter, the site when this command built it, and the
    last whole `make test`. The README's figures read it, like the prose's."""
    summary = {
        f"{chapter}_s": _whole_seconds(None if chapter in kept_chapters else _seconds(chapter))
        for chapter in chapters()
    }
    tests, whole = _last(TEST_TIME), _last(BOOK_TIME)
    book_s = whole.get("seconds")
    summary |= {
        "book_s": _whole_seconds(book_s),
        "site_s": _whole_seconds(site_s),
        "book_min": results.quantity(round(book_s / 60, 1) if book_s else None, "num"),
        "test_s": _whole_seconds(tests.get("seconds")),
    }
    # `make reference FROM_RESULTS=1` times nothing: what it did not time stays as the last run had it.
    last = results.load(TIMINGS, target or paths.reference_dir()) or {}
    before, dated = last.get("summary", {}), last.get("params", {})
    kept = sorted(key for key, figure in summary.items() if figure["value"] is None and key in before)
    summary |= {key: before[key] for key in kept}
    return results.save(
        TIMINGS,
        environment={"cpu_count": os.cpu_count(), "cpu_model": envinfo.cpu_model()},
        params={  # a time kept from the last run keeps its date
            "tests_measured_at": dated.get("tests_measured_at") if "test_s" in kept else tests.get("measured_at"),
            "book_measured_at": dated.get("book_measured_at") if "book_s" in kept else whole.get("measured_at"),
            "kept_from_the_last_run": kept,
        },
        summary=summary,
        base=target or paths.reference_dir(),
    )


def _seconds(chapter: str) -> float | None:
    """How long the chapter's last run took (first cell to last), as its run recorded it."""
    last = inputs.last_run(_notebook(chapter)) or {}
    return last.get("seconds")


def _whole_seconds(seconds: float | None) -> dict:
    return results.quantity(
        None if seconds is None else round(seconds), "s", None if seconds is None else f"{seconds:.0f} s"
    )
