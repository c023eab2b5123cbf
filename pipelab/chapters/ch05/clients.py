"""The clients the failure sections run, each case in its own process (Go, Node, Java) or in this one
(redis-py, GLIDE), and what the servers counted around it.

Every case reports what its caller saw in the same shape (outcome, replies ok and failed, the errors by
text, how long the caller waited); the harness adds what the servers counted. Go and Node are
optional: without one, its cases are left out and toolchain_note() says so in one sentence.
"""

from __future__ import annotations

import html
import re
import time
from collections import Counter

from ... import golang, node
from ...host import Unavailable
from ...results import quantity
from ...server import Endpoint

# Which process runs each client, and the slug its example knows it by.
CLIENTS = {
    "go-redis": ("go", "goredis"),
    "rueidis": ("go", "rueidis"),
    "ioredis": ("node", "ioredis"),
    "node-redis": ("node", "noderedis"),
    "Jedis": ("java", "jedis"),
    "Lettuce": ("java", "lettuce"),
    "Redisson": ("java", "redisson"),
}
ADDRESS = re.compile(r"127\.0\.0\.1:\d+|localhost:\d+")


def shown_error(err: BaseException | str) -> str:
    """An error's first line, without ports (they change from run to run), at most 80 characters."""
    text = err if isinstance(err, str) else f"{type(err).__name__}: {err}"
    return ADDRESS.sub("<addr>", (text.strip().splitlines() or [""])[0])[:80]


def cell(text) -> str:
    """A caller's text for a Markdown table: an error's "<addr>" would otherwise read as an HTML tag."""
    return html.escape(str(text), quote=False)


def caller_view(outcome, replies: list, seconds: float) -> dict:
    """The shape every case reports: `outcome` an exception or None, `replies` the per-command results
    (exceptions among them count as failed)."""
    errors = Counter(shown_error(x) for x in replies if isinstance(x, BaseException))
    if outcome is not None and not replies:
        errors[shown_error(outcome)] += 1
    return {
        "outcome": "ok" if outcome is None else shown_error(outcome),
        "replies_ok": sum(1 for x in replies if not isinstance(x, BaseException)),
        "replies_failed": sum(1 for x in replies if isinstance(x, BaseException)),
        "errors": dict(errors),
        "waited_ms": round(seconds * 1e3, 1),
    }


def case_summary(slug: str, case: dict, counts: tuple[str, ...] = (), outcome: str = "–") -> dict:
    """A case's figures as `<slug>_<what>`: what its caller got as text (or why it did not run), and
    each field in `counts` as a count."""
    if "skipped" in case:
        return {f"{slug}_outcome": quantity(0, "count", case["skipped"])}
    return {f"{slug}_outcome": quantity(0, "count", str(case.get("outcome", outcome)))} | {
        f"{slug}_{what}": quantity(case.get(what), "count") for what in counts
    }


def run_elsewhere(lab, seed: Endpoint, name: str, scenario: str, *args, slug: str | None = None) -> dict | str:
    """Client `name` (a key of CLIENTS) runs `scenario` in its example's process (`slug`: a setting of
    it, its example's name for it): its facts, or the one sentence saying why it could not run here."""
    lang, slug = CLIENTS[name][0], slug or CLIENTS[name][1]
    try:
        if lang == "go":
            run = golang.run_example("failover", seed, scenario, slug, *args, cluster=seed)
        elif lang == "node":
            run = node.run_example("failover.mjs", seed, scenario, slug, *args, cluster=seed)
        else:
            run = lab.java("ch05-failures", scenario, slug, *args, target=seed, cluster=seed)
    except Unavailable as err:
        return str(err)
    return dict(run.facts)


def command_counts(endpoints: list[Endpoint], commands: tuple[str, ...], errors: tuple[str, ...] = ()) -> dict:
    """{port: {command: calls, command_failed: failed calls, error: times replied}} from INFO."""
    out = {}
    for endpoint in endpoints:
        with endpoint.client() as c:
            stats, errs = c.info("commandstats"), c.info("errorstats")
        row = {}
        for name in commands:
            entry = stats.get(f"cmdstat_{name}", {})
            row[name] = int(entry.get("calls", 0))
            row[f"{name}_failed"] = int(entry.get("failed_calls", 0))
            row[f"{name}_rejected"] = int(entry.get("rejected_calls", 0))
        for code in errors:
            row[code] = int(errs.get(f"errorstat_{code}", {}).get("count", 0))
        out[endpoint.port] = row
    return out


def counted(before: dict, after: dict) -> dict:
    return {port: {k: after[port][k] - before[port].get(k, 0) for k in after[port]} for port in after}


def totals(delta: dict, ports=None) -> Counter:
    out: Counter = Counter()
    for port, row in delta.items():
        if ports is None or port in ports:
            out.update(row)
    return out


def timed(fn):
    """fn()'s result (or the exception it raised) and the seconds it took."""
    start = time.perf_counter()
    try:
        return fn(), None, time.perf_counter() - start
    except Exception as err:  # what the caller gets is the finding
        return None, err, time.perf_counter() - start
