"""The site's "Your run" page: the reader's run (build/results) beside the reference run, from the
results files alone; building it measures nothing.

The page's Markdown holds one block marker per section, <!-- pipelab:yourrun SECTION -->, for each
SECTION of SECTIONS; the hooks draw the scatter plot once per build (`draw`). Which figures pair up,
how far apart they are and whether that is beyond the noise is agreement.py's to say: this module
only shows it.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
from matplotlib.figure import Figure  # no pyplot: no global figure state to close after
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullFormatter

from .. import paths, plots, results, weather
from . import agreement, build, conditions, inputs, reference
from .report import ENV_FIELDS

PLOT = "your-run.png"  # under the site's figures/
NONE = "–"
TITLES = dict(ENV_FIELDS)  # the same row titles as each chapter's environment table


def _how(chapter: str = "ch03") -> str:
    return f"`make book` measures every chapter on your machine; `make book CHAPTER={int(chapter[2:])}` measures one."


def _runs() -> tuple[dict[str, dict], dict[str, dict]]:
    """(yours, the reference's): {results name: document} for every chapter results file."""
    return agreement.load(paths.results_dir()), agreement.load(paths.reference_dir())


def _chapter(name: str) -> str:
    return name.split("/")[0]


def _chapters_text(chapters: list[str]) -> str:
    """["ch01", "ch03", "ch05"] as "chapters 1, 3 and 5"."""
    numbers = [str(int(c[2:])) for c in chapters]
    if len(numbers) == 1:
        return f"chapter {numbers[0]}"
    return f"chapters {', '.join(numbers[:-1])} and {numbers[-1]}"


def _quick(run: dict[str, dict]) -> list[str]:
    """The results files measured in quick mode (reduced sizes: not comparable with a full run)."""
    return [name for name, doc in run.items() if (doc.get("environment") or {}).get("quick_mode")]


def _page(chapter: str) -> Path | None:
    return next(iter(sorted((paths.REPO / "site" / "chapters").glob(f"{chapter[2:]}-*.md"))), None)


def _title(chapter: str) -> str:
    """The chapter page's heading ("1. Round-trip time")."""
    page = _page(chapter)
    lines = page.read_text().splitlines() if page else []
    return next((line[2:].strip() for line in lines if line.startswith("# ")), _chapters_text([chapter]).capitalize())


def chapter_link(chapter: str, depth: int) -> str:
    """A Markdown link to the chapter's page, titled as its heading."""
    page = _page(chapter)
    return f"[{_title(chapter)}]({'../' * depth}chapters/{page.name})" if page else _title(chapter)


def _factor(pair: agreement.Pair) -> str:
    """Yours against the reference's: × when yours is the higher, ÷ when it is the lower."""
    size = f"{pair.factor:.2f}" if pair.factor < 10 else f"{pair.factor:.0f}"
    return f"×{size}" if pair.a["value"] >= pair.b["value"] else f"÷{size}"


def status(depth: int = 0) -> str:
    """What the page compares: the results there are, the chapters missing, and quick-mode files."""
    mine, ref = _runs()
    if not mine:
        lines = [
            '!!! info "No results of yours yet"',
            "    Your build holds no chapter results (`build/results/chNN/*.json`), so there is nothing of yours",
            "    to compare yet.",
            f"    {_how()} This page fills in at the end of that run (the last table below says how long each",
            "    chapter took on the reference machine).",
        ]
        if not ref:
            lines.append("    There is no reference run here either to compare with.")
        return "\n".join(lines)
    have = sorted({_chapter(name) for name in mine})
    found = agreement.pairs(mine, ref)
    within = sum(p.factor <= agreement.WITHIN for p in found)
    dates = sorted(d["environment"]["measured_at"][:10] for d in mine.values() if d["environment"].get("measured_at"))
    when = "" if not dates else f", measured {dates[0]}" + (f" to {dates[-1]}" if dates[-1] != dates[0] else "")
    lines = [f"Your run: {len(mine)} results files from {_chapters_text(have)}{when}."]
    if ref:
        first = ref[next(iter(ref))]["environment"]
        lines[0] += (
            f" The reference run ({reference.provenance(first)}) has {len(found)} figures in common with it; "
            f"{within} of them ({within / len(found):.0%}) are within ±{agreement.WITHIN - 1:.0%} of each other."
            if found
            else " It shares no figure with the reference run."
        )
    else:
        lines[0] += " There is no reference run here to compare it with."
    if missing := [c for c in reference.chapters() if c not in have]:
        lines += ["", f"No results of yours yet from {_chapters_text(missing)}. {_how(missing[0])}"]
    if quick := _quick(mine):
        by_chapter = {c: [n.split("/")[1] for n in quick if _chapter(n) == c] for c in sorted(map(_chapter, quick))}
        lines += [
            "",
            '!!! warning "Quick mode"',
            f"    {len(quick)} of your results files {'comes' if len(quick) == 1 else 'come'} from a quick run "
            "(reduced sizes, the tests' mode), so "
            "their figures are not comparable with the reference's full-size ones: "
            + "; ".join(f"{c}: {', '.join(names)}" for c, names in by_chapter.items())
            + ". The plot draws them as hollow rings, and `make book` measures them again at full size.",
        ]
    return "\n".join(lines)


def _alt(found: list[agreement.Pair]) -> str:
    within = sum(p.factor <= agreement.WITHIN for p in found)
    far = max(found, key=lambda p: p.factor)
    return (
        f"Scatter plot on log axes of {len(found)} figures, your run's (up) against the reference run's (across), "
        f"coloured by chapter, with the diagonal of equal values and a ±{agreement.WITHIN - 1:.0%} band around it, "
        f"and below it yours divided by the reference's for the same figures: {within} figures lie inside the band; "
        f"the farthest off is {far.name}#{far.key}, {far.a['text']} against {far.b['text']} ({_factor(far)})."
    )


def draw(target: Path) -> bool:
    """The scatter plot of every figure both runs have, written to `target` as a PNG; False (and no
    file) when there is nothing to compare. Below it, yours ÷ the reference's for the same figures:
    across the many decades the figures span, the ±15% band is a hairline."""
    mine, ref = _runs()
    found = agreement.pairs(mine, ref)
    if not found:
        return False
    quick = set(_quick(mine))
    values = [p.a["value"] for p in found] + [p.b["value"] for p in found]
    low, high = min(values) / 2, max(values) * 2
    far = min(max(1.5, 1.3 * max(p.factor for p in found)), 20)  # the ratio panel's reach, clipped beyond
    colours = matplotlib.colormaps["tab10"]
    with matplotlib.rc_context():
        plots.style()
        fig = Figure(figsize=(6.5, 7.5), layout="constrained")
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1.2])
        edge = [low, high]  # y = k·x is a straight line on log axes: its two ends draw it exactly
        top.fill_between(edge, [v / agreement.WITHIN for v in edge], [v * agreement.WITHIN for v in edge], color="0.8")
        top.plot(edge, edge, color="0.3", linewidth=0.8)
        bottom.axhspan(1 / agreement.WITHIN, agreement.WITHIN, color="0.8")
        bottom.axhline(1, color="0.3", linewidth=0.8)
        groups: dict[tuple, list[agreement.Pair]] = {}  # one scatter call per look: 900 calls take seconds
        for p in found:
            groups.setdefault((_chapter(p.name), p.factor > agreement.WITHIN, p.name in quick), []).append(p)
        for (chapter, out, hollow), group in groups.items():
            colour = colours(int(chapter[2:]) - 1)
            style = {  # outside the band: large and opaque, to stand out
                "s": 26 if out else 10,
                "alpha": 1 if out else 0.45,
                "facecolors": "none" if hollow else colour,
                "edgecolors": "black" if out and not hollow else colour,
                "linewidths": 1 if hollow else 0.5,
                "zorder": 3 if out else 2,
            }
            xs = [p.b["value"] for p in group]
            top.scatter(xs, [p.a["value"] for p in group], **style)
            bottom.scatter(xs, [min(max(p.a["value"] / p.b["value"], 1 / far), far) for p in group], **style)
        for ax in (top, bottom):
            ax.set_xscale("log")
            ax.set_yscale("log")
        top.set_xlim(low, high)
        top.set_ylim(low, high)
        bottom.set_ylim(1 / far, far)
        bottom.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        bottom.yaxis.set_minor_formatter(NullFormatter())
        top.set_ylabel("your figure (same unit)")
        bottom.set_ylabel("yours ÷ reference")
        bottom.set_xlabel("the reference run's figure (in its own unit)")
        handles = [
            Patch(color="0.8", label=f"within ±{agreement.WITHIN - 1:.0%}"),
            Line2D([], [], color="0.3", label="same value"),
        ]
        handles += [
            Line2D([], [], linestyle="", marker="o", color=colours(int(c[2:]) - 1), label=c)
            for c in sorted({_chapter(p.name) for p in found})
        ]
        handles.append(
            Line2D([], [], linestyle="", marker="o", color="0.6", markeredgecolor="black", label="outside the band")
        )
        if quick:
            handles.append(
                Line2D([], [], linestyle="", marker="o", markerfacecolor="none", color="0.3", label="quick mode")
            )
        # Upper left, above the diagonal's low end, is where points are rarest.
        top.legend(handles=handles, loc="upper left", fontsize=9, frameon=True, framealpha=0.85, edgecolor="none")
        target.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(target)
    return True


def plot(depth: int = 0) -> str:
    """The scatter plot (drawn by `draw` into the site's figures/), with its alt text."""
    found = agreement.pairs(*_runs())
    if not found:
        return "_No plot: it needs results of yours and of the reference run._"
    return f"![{_alt(found)}]({'../' * depth}figures/{PLOT})"


def beyond_groups() -> dict[str, list[agreement.Pair]]:
    """{chapter: its figures whose 95% intervals in the two runs are apart}, farthest apart first."""
    found = sorted((p for p in agreement.pairs(*_runs()) if p.beyond_noise), key=lambda p: -p.factor)
    groups: dict[str, list[agreement.Pair]] = {}
    for pair in found:
        groups.setdefault(_chapter(pair.name), []).append(pair)
    return dict(sorted(groups.items()))


def _shown(figure: dict) -> str:
    interval = f"<br><small>{figure['interval_text']}</small>" if figure.get("interval_text") else ""
    return figure["text"] + interval


def beyond(depth: int = 0) -> str:
    """Per chapter, a folded table of the figures apart beyond both intervals, with a link to the chapter."""
    mine, ref = _runs()
    found = agreement.pairs(mine, ref)
    if not found:
        return "_Nothing to compare yet._"
    judged = sum(p.beyond_noise is not None for p in found)
    groups = beyond_groups()
    if not groups:
        return f"None: each of the {judged} figures with an interval in both runs overlaps the reference's."
    quick = set(_quick(mine))
    lines = [f"{sum(map(len, groups.values()))} of the {judged} figures with an interval in both runs:", ""]
    for chapter, group in groups.items():
        many = f"{len(group)} figures, the farthest apart {_factor(group[0])}" if len(group) > 1 else "1 figure"
        lines += [f'??? note "{_title(chapter)}: {many}"', ""]
        lines += [f"    The chapter's page: {chapter_link(chapter, depth)}.", ""]
        rows = [
            [
                f"`{p.name}#{p.key}`" + (" (quick mode)" if p.name in quick else ""),
                _shown(p.a),
                _shown(p.b),
                _factor(p),
            ]
            for p in group
        ]
        table = results.md_table(["Figure", "Yours", "Reference", "Yours against the reference"], rows)
        lines += ["    " + line for line in table.splitlines()] + [""]
    return "\n".join(lines).rstrip()


def environment(depth: int = 0) -> str:
    """Both runs' environments side by side, each entry taken from every results file of the run."""
    mine, ref = _runs()
    if not mine and not ref:
        return "_Neither your run nor a reference run has results files here._"
    clients = sorted(
        {k for doc in [*mine.values(), *ref.values()] for k in (doc["environment"].get("java_clients") or {})}
    )
    plain = (
        "cpu_model",
        "cpu_count",
        "kernel",
        "server",
        "redis_version",
        "redis_py",
        "hiredis",
        "valkey_glide",
        "python",
    )
    rows = [(TITLES[k], lambda env, k=k: env.get(k)) for k in plain]
    rows += [
        (f"{client} (Java)", lambda env, c=client: (env.get("java_clients") or {}).get(c))
        for client in clients
        if client != "java"
    ]
    rows += [("Java", lambda env: (env.get("java_clients") or {}).get("java"))]
    rows += [
        (
            TITLES["lock_sha256"] + ", first 12 digits",
            lambda env: f"`{env['lock_sha256'][:12]}`" if env.get("lock_sha256") else None,
        )
    ]
    table = []
    for title, value in rows:
        yours, theirs = agreement.distinct(mine, value, NONE), agreement.distinct(ref, value, NONE)
        same = NONE if NONE in (yours, theirs) else "yes" if yours == theirs else "**no**"
        table.append([title, yours, theirs, same])
    return results.md_table(["", "Yours", "Reference", "Same?"], table + _weather_rows())


def _weather_rows() -> list[list[str]]:
    """The machine's own weather in each run (book/weather, timed around a full run's chapters): a
    slower fast time makes every time of that run longer, whatever the code."""
    skies = [results.load(weather.NAME, base) for base in (paths.results_dir(), paths.reference_dir())]
    fast = [weather.fast_ms(sky) for sky in skies]
    same = NONE
    if None not in fast:
        same = "yes" if agreement.apart(*fast) <= agreement.WITHIN else f"**no**, yours {fast[0] / fast[1]:.2f}x"
    slow = [
        f"{sky['summary']['slow_pct']['text']} of the time, at {sky['summary']['slowdown']['text']}" if sky else NONE
        for sky in skies
    ]
    rows = [
        ["A fixed loop's fast time (`pipelab weather`)", *(NONE if f is None else f"{f:.1f} ms" for f in fast), same],
        ["The same loop, slowed in spells", *slow, NONE],
    ]
    titles = {
        False: "The same loop agreeing with itself before and after the run: runs of nine within ±15%, by median",
        True: "The same, of the loops that followed a fast one only (as if each sample waited for a calm machine)",
    }
    for calm, title in titles.items():
        # (hit, pairs) by median; None for a run without the loop both before and after its chapters
        held = [(agreement.run_loop_within(sky, calm) or {}).get("median") for sky in skies]
        rows.append([title, *(f"{agreement.percent(h):.0f}%" if h and h[1] else NONE for h in held), NONE])
    return rows


def _seconds(value: float | None) -> str:
    return NONE if value is None else f"{value:.0f} s"


def times(depth: int = 0) -> str:
    """Each chapter's time, first cell to last: yours as its last run recorded it (build/inputs), the
    reference's from its timings results file."""
    ref = (results.load(reference.TIMINGS, paths.reference_dir()) or {}).get("summary", {})
    rows = []
    for notebook in build.notebooks():
        chapter = f"ch{notebook.name[:2]}"
        last = inputs.last_run(notebook) or {}
        yours, theirs = last.get("seconds"), (ref.get(f"{chapter}_s") or {}).get("value")
        ratio = f"{yours / theirs:.2f}x" if yours and theirs else NONE
        rows.append(
            [
                chapter_link(chapter, depth),
                _seconds(yours) + (" (quick mode)" if last.get("quick") else ""),
                _seconds(theirs),
                ratio,
            ]
        )
    return results.md_table(["Chapter", "Yours", "Reference", "Yours ÷ reference"], rows)


def _page_link(page: str, depth: int) -> str:
    """A site page (its Markdown path) as a link: a chapter's by its heading."""
    name = page.rsplit("/", 1)[-1]
    if page.startswith("chapters/") and name[:2].isdigit():
        return chapter_link(f"ch{name[:2]}", depth)
    return f"[{page}]({'../' * depth}{page})"


def claims(depth: int = 0) -> str:
    """The sentences whose condition the run shown does not keep, with their pages (conditions.py)."""
    outcomes = conditions.site_outcomes()
    lines = [f"{conditions.summary(outcomes).splitlines()[0].capitalize()}."]
    missed = [o for o in outcomes if o.state in (conditions.NOISE, conditions.CONTRADICTED)]
    if missed:
        rows = [[_page_link(o.page, depth), o.state, f"`{o.needs}`", "; ".join(o.shown)] for o in missed]
        lines += ["", results.md_table(["Page", "Outcome", "The sentence needs", "The figures"], rows)]
    return "\n".join(lines)


SECTIONS = {
    "status": status,
    "claims": claims,
    "plot": plot,
    "beyond": beyond,
    "environment": environment,
    "times": times,
}


def section(name: str, depth: int) -> str:
    """The Markdown of one section of the page (a marker's argument); a misspelt one fails the build."""
    return SECTIONS[name](depth)
