"""`pipelab agreement RUN_A RUN_B`: do two runs of the book tell the same story?

Each run is a results tree (chNN/<name>.json), such as build/results or the committed reference.
Every summary figure with a positive number in both is compared; a figure whose two intervals are
apart is a difference beyond the noise, and a ratio on opposite sides of 1 is a flipped direction.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .. import paths, results, stats, weather
from ..errors import LabError
from . import conditions, markers

WITHIN = 1.15  # a figure agrees when the two are within ±15% of each other
RATIO_WITHIN = 1.20  # a ratio figure, within ±20%
SIDE = 1.10  # a flip counts when one of the two is over 10% away from 1 (1.02x against 0.99x is no direction)


def apart(x: float, y: float) -> float:
    """How far apart two positive values are, as a factor of at least 1 (1.2 either way round)."""
    return math.exp(abs(math.log(x / y)))


@dataclass(frozen=True)
class Pair:
    name: str  # "ch01/ping-10k"
    key: str
    unit: str
    a: dict
    b: dict

    @property
    def factor(self) -> float:
        """How far apart, as a factor of at least 1."""
        return apart(self.a["value"], self.b["value"])

    @property
    def flipped(self) -> bool:
        """On opposite sides of 1, one over 10% away, and neither run's interval holding 1 (a ratio
        whose interval holds 1 states no direction)."""
        va, vb = self.a["value"], self.b["value"]
        if self.unit != "x" or (va - 1) * (vb - 1) >= 0 or max(va, 1 / va, vb, 1 / vb) <= SIDE:
            return False
        return not any(i and i[0] <= 1 <= i[1] for i in (self.a.get("interval"), self.b.get("interval")))

    @property
    def beyond_noise(self) -> bool | None:
        """Both intervals known and apart; None when either run gave none."""
        ia, ib = self.a.get("interval"), self.b.get("interval")
        if not ia or not ib:
            return None
        return ia[1] < ib[0] or ib[1] < ia[0]


def resolve(run: str) -> Path:
    """A results tree from a path, or "results" (build/results) or "reference" (the committed run)."""
    named = {"results": paths.results_dir(), "reference": paths.reference_dir()}
    root = named.get(run, Path(run))
    if not any(root.glob("ch*/*.json")):
        raise LabError(f"{run}: no results files (chNN/*.json) there; give a results tree, 'results' or 'reference'.")
    return root


def load(root: Path) -> dict[str, dict]:
    return {f"{p.parent.name}/{p.stem}": json.loads(p.read_text()) for p in sorted(root.glob("ch*/*.json"))}


def _number(figure) -> bool:
    value = figure.get("value") if isinstance(figure, dict) else None
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def pairs(a: dict[str, dict], b: dict[str, dict]) -> list[Pair]:
    out = []
    for name in sorted(set(a) & set(b)):
        sa, sb = a[name].get("summary") or {}, b[name].get("summary") or {}
        for key in sorted(set(sa) & set(sb)):
            if _number(sa[key]) and _number(sb[key]):
                out.append(Pair(name, key, sa[key]["unit"], sa[key], sb[key]))
    return out


def samples(run: dict[str, dict]) -> dict[tuple[str, str, int], list[float]]:
    """Every measurement with three positive samples or more, by results name, label and the label's
    place in its file (params hold measured numbers too, so they name nothing)."""
    out = {}
    for name, doc in run.items():
        seen: Counter = Counter()
        for m in doc.get("measurements") or []:
            seen[m.get("label")] += 1
            taken = m.get("samples_s") or []
            if len(taken) >= 3 and min(taken) > 0:
                out[(name, m.get("label"), seen[m.get("label")])] = taken
    return out


def spreads(run: dict[str, dict]) -> list[float]:
    """(max − min) / median of every measurement with three samples or more."""
    return [weather.spread(taken) for taken in samples(run).values()]


# What each measurement's samples are summed up by: the book prints the median. On a machine that
# only ever slows down, the fastest sample is the one the slow spells touch least.
ESTIMATES = {"median": statistics.median, "fastest": min}


def estimates_within(a: dict[str, dict], b: dict[str, dict]) -> dict[str, tuple[int, int]]:
    """{estimate: measurements both runs took whose two estimates are within ±15%}."""
    sa, sb = samples(a), samples(b)
    both = sorted(set(sa) & set(sb), key=str)
    return {name: share(both, lambda k, f=f: apart(f(sa[k]), f(sb[k])) <= WITHIN) for name, f in ESTIMATES.items()}


def loop_windows(sky: dict | None, moment: int | None = None, calm: bool = False) -> dict[str, list[list[float]]]:
    """A book/weather file's loops cut into runs of as many as its spread compares, per CPU: those of
    one moment (0 the first, -1 the last) or of every moment; with `calm`, only the loops that followed
    one at the fast speed (weather.calm)."""
    params = (sky or {}).get("params") or {}
    moments = list(params.get("series_ms", {}).values())
    fast = weather.fast_ms(sky) if calm else None
    out: dict[str, list[list[float]]] = {}
    for series in moments if moment is None else [moments[moment]] if moments else []:
        for cpu, t in series.items():
            kept = weather.calm(t, fast) if calm else t
            out.setdefault(cpu, []).extend(weather.windows_of(kept, params["window"]))
    return out


def calm_share(sky: dict) -> tuple[int, int]:
    """(loops that followed a fast one, loops that had one before them) over a book/weather file."""
    series = [t for cpus in sky["params"]["series_ms"].values() for t in cpus.values() if t]
    fast = weather.fast_ms(sky)
    return sum(len(weather.calm(t, fast)) for t in series), sum(len(t) - 1 for t in series)


def loop_within(earlier: dict, later: dict) -> dict[str, tuple[int, int]] | None:
    """The machine's own agreement: each run of loops of `earlier` set against each of `later` on the same
    CPU, both summed up as a measurement is (ESTIMATES); {estimate: pairs within ±15%}, None without a pair."""
    both = [(x, y) for cpu in earlier for x in earlier[cpu] for y in later.get(cpu, [])]
    if not both:
        return None
    return {name: share(both, lambda w, f=f: apart(f(w[0]), f(w[1])) <= WITHIN) for name, f in ESTIMATES.items()}


def run_loop_within(sky: dict | None, calm: bool = False) -> dict[str, tuple[int, int]] | None:
    """loop_within of one run: the loop before its chapters against after them (None without both)."""
    if len(((sky or {}).get("params") or {}).get("series_ms", {})) < 2:
        return None
    return loop_within(loop_windows(sky, 0, calm), loop_windows(sky, -1, calm))


# The weather loop's agreement is taken twice: over every loop, and over the calm ones only (key infix).
LOOP_KINDS = {"": False, "calm_": True}


def errors(run: dict[str, dict]) -> list[float]:
    """Each summary figure's own error: half its 95% interval's width over the figure (0.05 is ±5%)."""
    out = []
    for doc in run.values():
        for figure in (doc.get("summary") or {}).values():
            if _number(figure) and (width := stats.relative_half_width(figure.get("interval"), figure["value"])):
                out.append(width)
    return out


def probe_ratios(a: dict[str, dict], b: dict[str, dict]) -> dict[str, dict[str, float]]:
    """{results name: {probe: B ÷ A}} for every file both runs probed; over 1, B's machine was slower."""
    out: dict[str, dict[str, float]] = {}
    for name in sorted(set(a) & set(b)):
        pa, pb = (run[name].get("environment", {}).get("probe") or {} for run in (a, b))
        if ratios := {key: pb[key] / pa[key] for key in sorted(set(pa) & set(pb)) if pa[key] and pb[key]}:
            out[name] = ratios
    return out


def probe_drift(a: dict[str, dict], b: dict[str, dict]) -> dict[str, list[float]]:
    """{probe: [B ÷ A for every results file both runs probed]}."""
    out: dict[str, list[float]] = {}
    for ratios in probe_ratios(a, b).values():
        for key, ratio in ratios.items():
            out.setdefault(key, []).append(ratio)
    return out


def distinct(run: dict[str, dict], value, none: str = "–") -> str:
    """One environment entry over a run's results files: the value, or each distinct value with how
    many files hold it, most common first. `value` takes an environment and gives the entry or None."""
    counts = Counter(str(v) for doc in run.values() if (v := value(doc.get("environment") or {})) not in (None, ""))
    if len(counts) <= 1:
        return next(iter(counts), none)
    return "; ".join(f"{v} ({n} file{'s' * (n > 1)})" for v, n in counts.most_common())


def machine(run: dict[str, dict]) -> str:
    """The CPU model and count its results files recorded, the most common first where they differ."""
    return distinct(run, lambda env: f"{env.get('cpu_model') or 'an unrecorded CPU'}, {env.get('cpu_count', '?')} CPUs")


def steady_files(a: dict[str, dict], b: dict[str, dict]) -> set[str]:
    """The results files whose two runs' probes all agree within ±15%: the machine held still."""
    return {name for name, ratios in probe_ratios(a, b).items() if all(apart(r, 1) <= WITHIN for r in ratios.values())}


def read_by_prose() -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """Every (results name, key) a page of the book prints, and of those the ones a condition compares
    with a number by ">" or "<": a direction the prose states ("~ 1" says it may fall on either side,
    and "#a > #b" states the two figures' order, not where each falls against 1)."""
    printed, stated = set(), set()
    for page in sorted((paths.REPO / "site").rglob("*.md")):
        text = page.read_text()
        printed |= {(v.name, v.key) for v in markers.values(text)}
        for match in markers.CONDITION.finditer(text):
            for comparison in conditions.parse(match["condition"]):
                sides = (comparison.left, comparison.right)
                if comparison.op != "~":  # a figure set against a number; one against a figure states an order
                    stated |= {(t.name, t.key) for t, other in zip(sides, sides[::-1]) if t.name and not other.name}
    return printed, stated


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def share(items: list, test) -> tuple[int, int]:
    return sum(1 for x in items if test(x)), len(items)


def chapter_rows(found: list[Pair], a: dict, b: dict) -> list[dict]:
    """Per chapter: figures within ±15%, ratios within ±20%, flips, and each run's median spread."""
    rows = []
    for chapter in sorted({p.name.split("/")[0] for p in found}):
        mine = [p for p in found if p.name.startswith(chapter + "/")]
        ratios = [p for p in mine if p.unit == "x"]
        spread_a = spreads({k: v for k, v in a.items() if k.startswith(chapter + "/")})
        spread_b = spreads({k: v for k, v in b.items() if k.startswith(chapter + "/")})
        drift = probe_drift(
            {k: v for k, v in a.items() if k.startswith(chapter + "/")},
            {k: v for k, v in b.items() if k.startswith(chapter + "/")},
        )
        rows.append(
            {
                "chapter": chapter,
                "within": share(mine, lambda p: p.factor <= WITHIN),
                "ratios_within": share(ratios, lambda p: p.factor <= RATIO_WITHIN),
                "flips": sum(p.flipped for p in ratios),
                "spread_a": statistics.median(spread_a) if spread_a else float("nan"),
                "spread_b": statistics.median(spread_b) if spread_b else float("nan"),
                "cpu_drift": statistics.median(drift["cpu_loop_ms"]) if drift.get("cpu_loop_ms") else float("nan"),
                "ping_drift": statistics.median(drift["ping_us"]) if drift.get("ping_us") else float("nan"),
            }
        )
    return rows


def _or_dash(value: float, spec: str) -> str:
    return "–" if value != value else format(value, spec)  # NaN: nothing to say


def percent(pair: tuple[int, int]) -> float | None:
    """A (hit, total) share in %, None of nothing."""
    hit, total = pair
    return 100 * hit / total if total else None


def _by_estimate(hit: dict[str, tuple[int, int]]) -> str:
    return ", ".join(f"{name} {_pct(pair)}" for name, pair in hit.items())


def _pct(pair: tuple[int, int]) -> str:
    hit, total = pair
    return f"{hit} of {total} ({percent(pair):.0f}%)" if total else "none"


@dataclass
class Comparison:
    """Two runs set side by side: what `report` prints from, beside the figures it keeps."""

    run_a: str
    run_b: str
    found: list[Pair]  # every figure both runs hold
    flips: list[Pair]
    prose: set[tuple[str, str]]  # (results name, key) a page prints
    stated: set[tuple[str, str]]  # of those, the ones whose direction a page states
    skies: list[dict | None]  # each run's book/weather
    figures: dict


def _spread(values: list[float]) -> tuple[float, float, int] | None:
    """Median, 90th percentile and count, None of nothing."""
    return (statistics.median(values), percentile(values, 0.9), len(values)) if values else None


def compare(run_a: str, run_b: str) -> Comparison:
    """Every figure `pipelab agreement` prints and saves, for two runs (with "rows", the per-chapter ones)."""
    a, b = load(resolve(run_a)), load(resolve(run_b))
    found = pairs(a, b)
    if not found:
        raise LabError(f"{run_a} and {run_b} share no figures to compare.")
    ratios = [p for p in found if p.unit == "x"]
    prose, stated = read_by_prose()
    flips = [p for p in ratios if p.flipped]
    steady = steady_files(a, b)
    figures = {
        "machines": (machine(a), machine(b)),
        "within": share(found, lambda p: p.factor <= WITHIN),
        "measured_within": share([p for p in found if p.unit != "count"], lambda p: p.factor <= WITHIN),
        "ratios_within": share(ratios, lambda p: p.factor <= RATIO_WITHIN),
        "flips": len(flips),
        "flips_in_prose": sum((p.name, p.key) in prose for p in flips),
        "flips_stated": sum((p.name, p.key) in stated for p in flips),
        "beyond_noise": share([p for p in found if p.beyond_noise is not None], lambda p: p.beyond_noise),
        "spread_a": _spread(spreads(a)),
        "spread_b": _spread(spreads(b)),
        "error_a": _spread(errors(a)),
        "error_b": _spread(errors(b)),
        "drift": {k: (statistics.median(v), min(v), max(v)) for k, v in probe_drift(a, b).items()},
        "steady_within": share([p for p in found if p.name in steady], lambda p: p.factor <= WITHIN),
        "estimates_within": estimates_within(a, b),
        "rows": chapter_rows(found, a, b),
    }
    skies = [results.load(weather.NAME, resolve(run)) for run in (run_a, run_b)]  # the floor under the spreads
    for side, sky in zip("ab", skies):
        figures[f"weather_{side}"] = (
            {k: sky["summary"][k]["value"] for k in ("slow_pct", "spread_median_pct", "spread_p90_pct")}
            if sky
            else None
        )
        figures[f"loop_calm_kept_{side}"] = calm_share(sky) if sky else None
        for kind, calm in LOOP_KINDS.items():
            figures[f"loop_{kind}within_{side}"] = run_loop_within(sky, calm)
    for kind, calm in LOOP_KINDS.items():
        figures[f"loop_{kind}between"] = loop_within(*(loop_windows(sky, calm=calm) for sky in skies))
    return Comparison(run_a, run_b, found, flips, prose, stated, skies, figures)


def _agreement_lines(c: Comparison) -> list[str]:
    """How many figures agree, and every flip."""
    f = c.figures
    same = f["machines"][0] == f["machines"][1]
    lines = [
        f"machines: run A on {f['machines'][0]}, run B on {f['machines'][1]}"
        + (
            ""
            if same
            else "; different CPUs: their times differ with the machine, ratios of things timed in turns less so"
        ),
        f"figures compared: {len(c.found)}",
        f"  within ±{WITHIN - 1:.0%}: {_pct(f['within'])}",
        f"  of them timings and rates (no counts), within ±{WITHIN - 1:.0%}: {_pct(f['measured_within'])}",
        f"  ratio figures within ±{RATIO_WITHIN - 1:.0%}: {_pct(f['ratios_within'])}",
        f"  apart beyond both 95% intervals: {_pct(f['beyond_noise'])} of the figures that have intervals",
        f"direction flips (a ratio on opposite sides of 1, one over {SIDE - 1:.0%} away): {f['flips']}, "
        f"{f['flips_in_prose']} of them printed in the prose, {f['flips_stated']} a direction it states",
    ]
    return lines + [
        f"  {p.name}#{p.key}: {p.a['text']} against {p.b['text']}"
        + ("  (the prose states its direction)" if (p.name, p.key) in c.stated else "")
        + ("  (the prose prints it, on either side of 1)" if (p.name, p.key) in c.prose - c.stated else "")
        for p in c.flips
    ]


def _noise_lines(c: Comparison) -> list[str]:
    """Each run's spreads and errors, and the machine's own: its weather, and its loop's agreement."""
    f, lines = c.figures, []
    for label, run, side in (("A", c.run_a, "a"), ("B", c.run_b, "b")):
        if spread := f[f"spread_{side}"]:
            lines.append(
                f"within-run spread (max − min) / median, run {label} ({run}): median {spread[0]:.0%}, "
                f"90th percentile {spread[1]:.0%}, of {spread[2]} measurements"
            )
    lines.append(
        f"each measurement summed up by its median, and by its fastest sample, within ±{WITHIN - 1:.0%}: "
        + _by_estimate(f["estimates_within"])
    )
    for label, sky in zip("AB", c.skies):
        if sky:
            lines += [f"the machine's own weather, run {label}, {line}" for line in weather.lines(sky)]
    for label, side, sky in zip("AB", "ab", c.skies):
        if hit := f[f"loop_within_{side}"]:
            calm = f[f"loop_calm_within_{side}"]
            lines += [
                f"the machine's own agreement, run {label}: its weather loop in windows of {sky['params']['window']}, "
                f"each summed up as a measurement is, before the run against after it, within ±{WITHIN - 1:.0%}: "
                + _by_estimate(hit),
                f"  the same, of the loops that followed a fast one only ({_pct(f[f'loop_calm_kept_{side}'])}), as if "
                f"each sample had waited for a calm machine: "
                + (_by_estimate(calm) if calm else "no run of nine both before and after"),
            ]
    if hit := f["loop_between"]:
        lines.append(
            f"the machine's own agreement between the runs: run A's weather loop against run B's, in runs of "
            f"{c.skies[0]['params']['window']} likewise, within ±{WITHIN - 1:.0%}: " + _by_estimate(hit)
        )
    if hit := f["loop_calm_between"]:
        lines.append("  the same, of the loops that followed a fast one only: " + _by_estimate(hit))
    for label, side in (("A", "a"), ("B", "b")):
        if error := f[f"error_{side}"]:
            lines.append(
                f"each figure's own error (half its 95% interval, over the figure), run {label}: "
                f"median ±{error[0]:.0%}, 90th percentile ±{error[1]:.0%}, of {error[2]} figures with intervals"
            )
    return lines


def _probe_lines(c: Comparison) -> list[str]:
    """How the machine probes moved between the runs, and how the files whose probes held still agree."""
    names = {"cpu_loop_ms": "a fixed CPU loop", "ping_us": "a PING one by one"}
    lines = [
        f"machine probe, run B ÷ run A, {names.get(key, key)}: median {median:.2f}x (per results file "
        f"{low:.2f}x to {high:.2f}x; over 1, B's machine was slower)"
        for key, (median, low, high) in sorted(c.figures["drift"].items())
    ]
    if lines:
        lines.append(
            f"  figures from results files whose probes agree within ±{WITHIN - 1:.0%} (the machine held still), "
            f"within ±{WITHIN - 1:.0%}: {_pct(c.figures['steady_within'])}"
        )
    return lines


def _chapter_lines(rows: list[dict]) -> list[str]:
    lines = ["per chapter: within ±15% | ratios within ±20% | flips | median spread A, B | probes B ÷ A (CPU, PING)"]
    for row in rows:
        lines.append(
            f"  {row['chapter']}: {_pct(row['within'])} | {_pct(row['ratios_within'])} | {row['flips']} | "
            f"{_or_dash(row['spread_a'], '.0%')}, {_or_dash(row['spread_b'], '.0%')} | "
            f"{_or_dash(row['cpu_drift'], '.2f')}x, {_or_dash(row['ping_drift'], '.2f')}x"
        )
    return lines


def _largest_lines(found: list[Pair], largest: int) -> list[str]:
    lines = [f"largest moves (of {len(found)}):"]
    for p in sorted(found, key=lambda p: p.factor, reverse=True)[:largest]:
        noise = {True: "beyond noise", False: "within noise", None: "no interval"}[p.beyond_noise]
        lines.append(f"  x{p.factor:6.2f}  {p.name}#{p.key}: {p.a['text']} against {p.b['text']} ({noise})")
    return lines


def report(run_a: str, run_b: str, largest: int = 15) -> tuple[str, dict]:
    """The text `pipelab agreement` prints, and its figures (with "rows", the per-chapter ones)."""
    c = compare(run_a, run_b)
    lines = _agreement_lines(c) + _noise_lines(c) + _probe_lines(c) + _chapter_lines(c.figures["rows"])
    return "\n".join(lines + _largest_lines(c.found, largest)), c.figures


SAVED = "book/agreement"  # `pipelab agreement A B --save`: the method page prints it


def save(figures: dict, run_a: str, run_b: str, rows: list[dict], target: Path | None = None) -> Path:
    """The comparison as a results file beside the reference, so that the method page's figures
    come from it: shares in %, flips as counts, spreads in %."""

    def pct(pair) -> dict:
        return results.quantity(percent(pair), "%")

    summary = {
        "figures": results.quantity(figures["within"][1], "count"),
        "within_pct": pct(figures["within"]),
        "measured_within_pct": pct(figures["measured_within"]),
        "ratios_within_pct": pct(figures["ratios_within"]),
        "beyond_noise_pct": pct(figures["beyond_noise"]),
        "flips": results.quantity(figures["flips"], "count"),
        "flips_in_prose": results.quantity(figures["flips_in_prose"], "count"),
        "flips_stated": results.quantity(figures["flips_stated"], "count"),
    }
    for side in ("a", "b"):
        for kind in ("spread", "error"):
            median, p90, _ = figures[f"{kind}_{side}"] or (None, None, 0)
            summary[f"{kind}_median_{side}_pct"] = results.quantity(median and 100 * median, "%")
            summary[f"{kind}_p90_{side}_pct"] = results.quantity(p90 and 100 * p90, "%")
        for key, value in (figures.get(f"weather_{side}") or {}).items():  # pooled over its CPUs, before and after
            summary[f"weather_{key.removesuffix('_pct')}_{side}_pct"] = results.quantity(value, "%")
        for kind in LOOP_KINDS:
            for name, hit in (figures.get(f"loop_{kind}within_{side}") or {}).items():
                summary[f"loop_{kind}{name}_within_{side}_pct"] = pct(hit)
        if kept := figures.get(f"loop_calm_kept_{side}"):
            summary[f"loop_calm_kept_{side}_pct"] = pct(kept)
    for kind in LOOP_KINDS:
        for name, hit in (figures.get(f"loop_{kind}between") or {}).items():
            summary[f"loop_{kind}{name}_between_pct"] = pct(hit)
    for name, hit in figures["estimates_within"].items():
        summary[f"measurement_{name}_within_pct"] = pct(hit)
    summary["measurements"] = results.quantity(figures["estimates_within"]["median"][1], "count")
    summary["steady_within_pct"] = pct(figures["steady_within"])
    summary["steady_figures"] = results.quantity(figures["steady_within"][1], "count")
    for key, (median, low, high) in figures["drift"].items():
        summary[f"probe_{key}_b_over_a"] = results.quantity(median, "x", f"{median:.2f}x ({low:.2f}x to {high:.2f}x)")
    per_chapter = [{**row, "within": list(row["within"]), "ratios_within": list(row["ratios_within"])} for row in rows]
    return results.save(
        SAVED,
        environment={"run_a": run_a, "run_b": run_b},
        params={"per_chapter": per_chapter, "within": WITHIN, "ratio_within": RATIO_WITHIN},
        summary=summary,
        base=target or paths.reference_dir(),
    )
