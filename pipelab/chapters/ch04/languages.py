"""Sections 4 and 5 for the Go and Node clients: one bad command, and a connection cut mid-pipeline.
Their examples (node-go-rust-examples/go/errors, node/errors.mjs) run every client case
and report facts; this runs them and shapes the facts. Without Go or Node, that language's rows are
left out and the section says so in one line (ch10.toolchain_note)."""

from __future__ import annotations

from ... import golang, node
from ...host import Unavailable
from ...results import md_table, quantity
from .parameters import CUT_MS

# {case slug: the row's name}, in the table's order.
ERROR_CASES = {
    "goredis": "go-redis `Pipelined`",
    "goredis_tx": "go-redis `TxPipelined`",
    "rueidis": "rueidis `DoMulti`",
    "rueidis_tx": "rueidis, MULTI/EXEC in `DoMulti`",
    "ioredis": "ioredis `pipeline().exec()`",
    "ioredis_auto": "ioredis, auto-pipelined",
    "ioredis_multi": "ioredis `multi().exec()`",
    "noderedis_all": "node-redis, `Promise.all`",
    "noderedis_multi": "node-redis `multi().exec()`",
    "noderedis_aspipeline": "node-redis `multi().execAsPipeline()`",
}
DROP_CASES = {
    "goredis": "go-redis, default retries",
    "goredis_noretry": "go-redis, `MaxRetries: -1`",
    "ioredis": "ioredis `pipeline().exec()`, defaults",
    "ioredis_partial": "ioredis `pipeline().exec()`, cut after its first replies",
    "ioredis_auto": "ioredis, auto-pipelined",
    "noderedis_all": "node-redis, `Promise.all`",
}


# {case slug: the row's name}: a script's TRYAGAIN reply, then INCRs (go/errors/tryagain.go).
TRYAGAIN_CASES = {
    "goredis": "go-redis `Pipelined`, the script first",
    "goredis_noretry": "go-redis `Pipelined`, `MaxRetries: -1`",
    "goredis_last": "go-redis `Pipelined`, the script last",
    "goredis_tx": "go-redis `TxPipelined`",
    "rueidis": "rueidis `DoMulti`",
}


def _both(run_go, run_node) -> tuple[dict, list[str]]:
    """The facts of both examples merged, and a sentence for each toolchain that is missing."""
    facts, missing = {}, []
    for run in (run_go, run_node):
        try:
            facts |= dict(run().facts)
        except Unavailable as err:
            missing.append(str(err))
    return facts, missing


def other_errors(lab) -> tuple[dict, list[str]]:
    return _both(
        lambda: golang.run_example("errors", lab.endpoint, "errors"),
        lambda: node.run_example("errors.mjs", lab.endpoint, "errors"),
    )


def other_drops(lab, n: int, proxy_name: str) -> tuple[dict, list[str]]:
    """Each example cuts its own pipelines through the lab's proxy, as the Java one does."""
    with lab.faults() as faults:
        link, api = faults.link.endpoint, lab.toxiproxy.api_url
        return _both(
            lambda: golang.run_example("errors", link, "drop", n, api, proxy_name, CUT_MS),
            lambda: node.run_example("errors.mjs", link, "drop", n, api, proxy_name, CUT_MS),
        )


def other_errors_table(facts: dict) -> str:
    rows = [
        [
            name,
            facts[f"{slug}_error_surfaced"],
            facts.get(f"{slug}_results", "–"),
            facts.get(f"{slug}_missing_key", "–"),
        ]
        for slug, name in ERROR_CASES.items()
        if f"{slug}_error_surfaced" in facts
    ]
    table = md_table(["client", "how the error surfaced", "per command", "a missing key (GET of no key)"], rows)
    return table + "\n\n" + tryagain_table(facts) if "tryagain_n" in facts else table


def other_drops_table(facts: dict, n: int) -> str:
    rows = [
        [
            name,
            facts.get(f"{slug}_retry_setting", "–"),
            facts[f"{slug}_drop_outcome"],
            f"{facts[f'{slug}_drop_applied']:,}",
            facts.get(f"{slug}_drop_connections", "–"),
        ]
        for slug, name in DROP_CASES.items()
        if f"{slug}_drop_outcome" in facts
    ]
    return md_table(["client", "retry setting", "what the caller got", f"applied (of {n:,})", "connections"], rows)


def tryagain_table(facts: dict) -> str:
    """A pipeline whose first reply is a retryable error: INCRs applied per case (empty without Go)."""
    n = facts.get("tryagain_n")
    if not n:
        return ""
    rows = [
        [
            name,
            facts[f"tryagain_{slug}_setting"],
            facts[f"tryagain_{slug}_outcome"],
            f"{facts[f'tryagain_{slug}_applied']:,}",
            f"{facts[f'tryagain_{slug}_applied'] / n:.0f}",
        ]
        for slug, name in TRYAGAIN_CASES.items()
        if f"tryagain_{slug}_applied" in facts
    ]
    return md_table(["client", "setting", "what the caller got", f"INCRs applied (of {n})", "runs"], rows)


def other_errors_summary(facts: dict) -> dict:
    out = {}
    for slug in ERROR_CASES:
        for what in ("error_surfaced", "results", "missing_key", "missing_results"):
            if f"{slug}_{what}" in facts:
                out[f"{slug}_{what}"] = quantity(0, "count", str(facts[f"{slug}_{what}"]))
        if f"{slug}_later_commands_ran" in facts:
            out[f"{slug}_later_ran"] = quantity(0, "count", "yes" if facts[f"{slug}_later_commands_ran"] else "no")
    ran = [facts[k] for k in facts if k.endswith("_later_commands_ran")]
    out["other_later_ran"] = quantity(sum(map(bool, ran)), "count")
    out["other_cases"] = quantity(len(ran), "count")
    if "tryagain_n" in facts:
        out["tryagain_n"] = quantity(facts["tryagain_n"], "count")
    for slug in TRYAGAIN_CASES:
        if f"tryagain_{slug}_applied" in facts:
            out[f"tryagain_{slug}_applied"] = quantity(facts[f"tryagain_{slug}_applied"], "count")
            out[f"tryagain_{slug}_outcome"] = quantity(0, "count", str(facts[f"tryagain_{slug}_outcome"]))
    return out


def other_drops_summary(facts: dict) -> dict:
    out = {}
    for slug in DROP_CASES:
        if f"{slug}_drop_outcome" not in facts:
            continue
        out[f"{slug}_drop_outcome"] = quantity(0, "count", str(facts[f"{slug}_drop_outcome"]))
        out[f"{slug}_retry_setting"] = quantity(0, "count", str(facts.get(f"{slug}_retry_setting", "–")))
        for what in ("applied", "connections", "replies_ok", "replies_failed"):
            out[f"{slug}_drop_{what}"] = quantity(facts.get(f"{slug}_drop_{what}"), "count")
        if f"{slug}_replies_let_through" in facts:  # a cut after the first replies
            out[f"{slug}_replies_let_through"] = quantity(facts[f"{slug}_replies_let_through"], "count")
    return out
