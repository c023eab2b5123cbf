"""Prose that checks itself: the condition a sentence states, judged on the results the site shows.

A sentence or table cell that states a direction or a size carries its condition in an HTML comment
beside its figures, which GitHub hides and the site build evaluates (markers.CONDITION):

  ... a ratio of {{ ch07/variadic#get_cpu_ratio }}. <!--holds: ch07/variadic#get_cpu_ratio > 1 -->

The condition is one or more comparisons joined by "and". Each compares two terms with ">" or "<",
or says two are about the same with "~" and a tolerance ("~ 1 ±25%"). A term is a figure
(name#key, or #key for the results file the condition named last), a number, or a number times a
figure ("2 * #mget_us"). Numbers are in the unit the results file stores (a ratio in x, a time in
its own unit).

Every figure counts with its 95% interval (a point where it has none), so a condition ends as:
  held           every value inside the intervals satisfies it;
  within noise   the intervals straddle its boundary;
  contradicted   no value inside them does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths, results
from . import markers, reference

HELD, NOISE, CONTRADICTED = "held", "within noise", "contradicted"
WHY = "method.md#where-run-to-run-variance-comes-from"  # the method page's section on why figures vary

TERM = re.compile(r"^(?:(?P<factor>[\d.]+)\s*\*\s*)?(?:(?P<name>[\w/.-]+)?#(?P<key>\w+)|(?P<number>[\d.]+))$")
COMPARISON = re.compile(r"^(?P<left>.+?)\s*(?P<op>[<>~])\s*(?P<right>.+?)(?:\s*±\s*(?P<tolerance>[\d.]+)%)?$")


class ConditionError(ValueError):
    """A condition the build cannot read: the build stops and names it."""


@dataclass(frozen=True)
class Term:
    factor: float
    name: str | None  # a figure's results file, None for a number
    key: str | None
    number: float | None

    @property
    def label(self) -> str:
        if self.name is None:
            return f"{self.number:g}"
        return self.key if self.factor == 1 else f"{self.factor:g} × {self.key}"


@dataclass(frozen=True)
class Comparison:
    left: Term
    op: str  # ">", "<" or "~"
    right: Term
    tolerance: float | None  # "~" only: 0.25 for ±25%

    @property
    def text(self) -> str:
        tolerance = f" ±{self.tolerance * 100:g}%" if self.tolerance is not None else ""
        return f"{self.left.label} {self.op} {self.right.label}{tolerance}"


@dataclass
class Outcome:
    condition: str  # as written
    needs: str  # the comparisons, figures named by key: what the page says it needed
    state: str | None  # HELD, NOISE, CONTRADICTED; None unjudged: a figure measured in neither run, or quick
    shown: list[str] = field(default_factory=list)  # each figure with its interval, as the run printed it
    from_reference: bool = False  # every figure judged came from the reference run
    page: str = ""  # the Markdown file it stands in, relative to the site's sources

    @property
    def line(self) -> str:
        """Where it stands, what it needs and the figures judged: a line of the build's report."""
        return f"{self.page}: {self.needs} ({'; '.join(self.shown)})"


def _number(text: str, condition: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ConditionError(f"condition {condition!r}: {text!r} is not a number") from None


def parse(condition: str) -> list[Comparison]:
    """The comparisons of `condition`, #key terms resolved to the file named last before them."""
    out, last_name = [], None
    for part in re.split(r"\s+and\s+", condition.strip()):
        match = COMPARISON.match(part.strip())
        if not match:
            raise ConditionError(f"condition {condition!r}: {part!r} is not 'A > B', 'A < B' or 'A ~ B ±N%'")
        terms = []
        for side in ("left", "right"):
            term = TERM.match(match[side].strip())
            if not term:
                raise ConditionError(f"condition {condition!r}: {match[side]!r} is not a figure (name#key) or a number")
            factor = _number(term["factor"], condition) if term["factor"] else 1.0
            if term["key"]:
                last_name = term["name"] or last_name
                if last_name is None:
                    raise ConditionError(f"condition {condition!r}: #{term['key']} names no results file before it")
                terms.append(Term(factor, last_name, term["key"], None))
            else:
                terms.append(Term(factor, None, None, _number(term["number"], condition)))
        if (match["op"] == "~") != (match["tolerance"] is not None):
            raise ConditionError(f"condition {condition!r}: '~' takes a tolerance ('~ 1 ±25%'), and only '~' does")
        tolerance = _number(match["tolerance"], condition) / 100 if match["tolerance"] else None
        out.append(Comparison(terms[0], match["op"], terms[1], tolerance))
    return out


def _range(term: Term, figure: dict | None) -> tuple[float, float]:
    if term.name is None:
        return term.factor * term.number, term.factor * term.number
    lo, hi = figure.get("interval") or (figure["value"], figure["value"])
    return term.factor * lo, term.factor * hi


def judge(comparison: Comparison, left: tuple[float, float], right: tuple[float, float]) -> str:
    """One comparison over the two terms' ranges (low, high)."""
    if comparison.op == ">":
        left, right = right, left  # A > B is B < A
    if comparison.op in "<>":
        if left[1] < right[0]:
            return HELD
        return CONTRADICTED if left[0] >= right[1] else NOISE
    if right[0] <= 0 or left[0] <= 0:
        raise ConditionError(f"'~' compares positive figures: {comparison.text}")
    band = (1 / (1 + comparison.tolerance), 1 + comparison.tolerance)
    ratio = (left[0] / right[1], left[1] / right[0])
    if band[0] <= ratio[0] and ratio[1] <= band[1]:
        return HELD
    return CONTRADICTED if ratio[1] < band[0] or ratio[0] > band[1] else NOISE


def evaluate(condition: str, page: str = "") -> Outcome:
    """`condition` judged on the results the site shows for each figure (the reader's, else the
    reference's). What it needs and shows are the comparisons that decided it: all of them when it
    held, else only those that fell short, so a note names what moved and nothing else."""
    comparisons = parse(condition)
    verdicts, sources = [], set()  # (comparison, state, {figure: shown text})
    for comparison in comparisons:
        ranges, shown = [], {}
        for term in (comparison.left, comparison.right):
            figure = None
            if term.name is not None:
                doc, from_reference = reference.shown(term.name)
                doc = doc or {}
                figure = doc.get("summary", {}).get(term.key)
                # Quick mode's sizes are not the ones the prose speaks of ("over a second"): not judged.
                if (
                    doc.get("environment", {}).get("quick_mode")
                    or figure is None
                    or not isinstance(figure.get("value"), (int, float))
                ):
                    return Outcome(condition, " and ".join(c.text for c in comparisons), None, page=page)
                sources.add(from_reference)
                shown[f"{term.name}#{term.key}"] = f"{term.key} {results.with_interval(figure)}"
            ranges.append(_range(term, figure))
        verdicts.append((comparison, judge(comparison, *ranges), shown))
    states = [state for _, state, _ in verdicts]
    state = CONTRADICTED if CONTRADICTED in states else NOISE if NOISE in states else HELD
    deciding = [(c, shown) for c, s, shown in verdicts if s == state]
    figures = {k: v for _, shown in deciding for k, v in shown.items()}
    return Outcome(
        condition,
        " and ".join(c.text for c, _ in deciding),
        state,
        list(figures.values()),
        from_reference=sources == {True},
        page=page,
    )


def mark(outcome: Outcome, depth: int) -> str:
    """What the page shows where the condition stands: nothing when it held, else a quiet note
    with the run's figures and a link to why figures vary."""
    if outcome.state in (HELD, None):
        return ""
    whose = "the reference run" if outcome.from_reference else "your run"
    figures = "; ".join(outcome.shown)
    if outcome.state == CONTRADICTED:
        kind, said = "contradicted", f"{whose.capitalize()} contradicts this: {figures}, where it needs {outcome.needs}"
    else:
        kind, said = "noise", f"Within noise on {whose}: {figures}, against {outcome.needs}"
    return (
        f' <small class="condition condition-{kind}" title="The condition this sentence states, judged with '
        f"each figure's 95% interval\">{said}. [Why figures vary]({'../' * depth}{WHY})</small>"
    )


def site_outcomes(site: Path | None = None) -> list[Outcome]:
    """Every condition of the site's Markdown, judged on the results in use, in page order."""
    site = site or paths.REPO / "site"
    out = []
    for md in sorted(site.rglob("*.md")):
        page = md.relative_to(site).as_posix()
        out += [evaluate(m["condition"], page) for m in markers.CONDITION.finditer(md.read_text())]
    return out


def summary(outcomes: list[Outcome]) -> str:
    """The book's last line: how its conditions fared, and each contradicted one with its page."""
    count = {state: sum(o.state == state for o in outcomes) for state in (HELD, NOISE, CONTRADICTED)}
    lines = [f"claims: {count[HELD]} held, {count[NOISE]} within noise, {count[CONTRADICTED]} contradicted"]
    unmeasured = sum(o.state is None for o in outcomes)
    if unmeasured:
        lines[0] += f" ({unmeasured} not judged: a figure not measured yet, or measured in quick mode)"
    lines += [f"  contradicted on {o.line}" for o in outcomes if o.state == CONTRADICTED]
    return "\n".join(lines)
