"""Chapter 10's shared parts: its key prefix, the clients' languages, the RTTs a curve runs at, and the
runs in one shape."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ...jbang import JavaRun
from ...measure import Measurement
from ...server import PREFIX as LAB_PREFIX
from .parameters import RTTS_MS

PREFIX = LAB_PREFIX + "ch10:"

# The language of each client the chapter measures, in the order its tables list them.
LANGUAGES = {
    "Python": ("redis-py", "GLIDE (Python)"),
    "Java": ("Jedis", "Lettuce", "GLIDE (Java)"),
    "Node.js": ("ioredis", "node-redis", "GLIDE (Node)"),
    "Go": ("go-redis", "rueidis", "valkey-go"),
    "Rust": ("redis-rs", "fred"),  # chapter 11's, through the same tables
}


# What the examples call a client, as the chapter's tables name it.
CLIENT_NAMES = {"glide": "GLIDE (Node)", "noderedis": "node-redis"}


def language(client: str) -> str:
    for lang, clients in LANGUAGES.items():
        if client in clients or any(client.lower().startswith(c.lower()) for c in clients):
            return lang
    return "Node.js" if "node" in client.lower() else "Go" if "go" in client.lower() else "other"


def slug(text: str) -> str:
    """A results key's part: "node-redis" → node_redis, "GLIDE (Python)" → glide_python."""
    return re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_")


def as_runs(run) -> list[Measurement]:
    """Measurements from what a measure function returned: a list of them, an example's run (its
    measurements carry the example's fields as params), a list of runs, or None (no toolchain)."""
    if run is None:
        return []
    if isinstance(run, Measurement):
        return [run]
    if isinstance(run, list | tuple):
        return [m for one in run for m in as_runs(one)]
    out = list(run.measurements().values())
    for m in out:
        if "client" in m.params:
            m.params["client"] = CLIENT_NAMES.get(m.params["client"], m.params["client"])
    return out


def merge_rtts(runs: dict[float, JavaRun]) -> JavaRun:
    """One run from an example's runs at each RTT: every per-mode map's keys get _rtt<ms>, facts stay as they are."""
    merged: dict = {}
    lines: list[str] = []
    for rtt, run in runs.items():
        lines += run.lines
        data = run.data
        for part in ("modes", "ops", "cpu_s", "warmup_s", "fields", "wire"):
            merged.setdefault(part, {}).update({f"{mode}_rtt{rtt:g}": v for mode, v in data.get(part, {}).items()})
        merged.setdefault("paired", {}).update(
            {
                f"{mode}_rtt{rtt:g}": " / ".join(f"{m}_rtt{rtt:g}" for m in group.split(" / "))
                for mode, group in data.get("paired", {}).items()
            }
        )
        merged.setdefault("facts", {}).update(data.get("facts", {}))
        for key in ("example", "go_version", "clients", "size", "repeat", "warmup"):  # the same in every run
            merged.setdefault(key, data.get(key))
    return JavaRun(next(iter(runs.values())).alias, merged, lines)


def each_rtt(lab, rtts=RTTS_MS) -> Iterator[tuple[float, object]]:
    """(rtt, link) for each RTT the lab can inject, the proxy open while the caller uses the link. Without
    toxiproxy only 0 ms (lab.proxy_note says why)."""
    for rtt in rtts:
        if rtt and not lab.rtt_available:
            continue
        with lab.rtt(rtt) as link:
            yield rtt, link
