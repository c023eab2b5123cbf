"""Section 3: cluster pipelines from Node and Go on chapter 5's cluster: how a pipeline splits over the
masters, and what a command across slots does. The examples report facts; this shapes them."""

from __future__ import annotations

from ...results import md_table, quantity
from .common import slug


def cluster_facts(**runs) -> dict:
    """{client or language: its run's facts} for the runs that happened (a missing toolchain gives None)."""
    return {name: dict(run.facts) for name, run in runs.items() if run is not None}


def _shown(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_shown(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(map(_shown, value))
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def cluster_table(facts: dict) -> str:
    rows = [
        [who if i == 0 else "", name.replace("_", " "), _shown(value)]
        for who, found in facts.items()
        for i, (name, value) in enumerate(found.items())
    ]
    return md_table(["Run", "Fact", "Value"], rows)


def cluster_summary(facts: dict) -> dict:
    """Every fact as `<run>_<fact>`: a number as a count or a number, a text as text, per-node lists
    as their text (the prose names the split and the error)."""
    out = {}
    for who, found in facts.items():
        for name, value in found.items():
            key = f"{slug(who)}_{slug(name)}"
            if isinstance(value, bool) or not isinstance(value, int | float):
                out[key] = quantity(0, "count", _shown(value))
            elif isinstance(value, int):
                out[key] = quantity(value, "count")
            else:
                out[key] = quantity(value, "num")
    return out
