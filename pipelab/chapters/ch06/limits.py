"""Section 4: the server's limits on a pipeline (output and query buffers, maxmemory-clients, proto-max-bulk-len).

The harness only: the pipelines that meet the limits (cut_pipeline, stalled_pipeline and the pause
around it) are the notebook's cells tagged code:cut and code:stalled, passed in by the notebook."""

from __future__ import annotations

import redis

from ...params import Size
from ...resp import encode
from ...results import md_table, quantity
from ...server import EmbeddedRedis, Endpoint, delete_lab_keys, free_port
from ..ch04 import no_retry_client  # a retry would run a pipeline twice
from .common import PREFIX

CUT_PAIRS = Size(full=2_000, quick=500)  # pipeline of INCR + GET pairs
BIG_VALUE = 10_000  # bytes per GET reply
OUTPUT_LIMIT = "normal 256kb 0 0"  # hard limit 256 KiB, no soft limit
CLIENT_MEMORY_LIMIT = "1mb"
HUGE_VALUE = 2 * 1024 * 1024  # one SET larger than the 1 MiB limits below
QUERY_LIMIT = "1mb"  # client-query-buffer-limit for the stalled pipelines
STALL_SETS = Size(full=40_000, quick=15_000)  # SETs of STALL_VALUE bytes: 2.3 MiB in quick mode, 6 in full
STALL_VALUE = 100
STALL_SECONDS = 2  # BLPOP's timeout and CLIENT PAUSE's bound; the cut comes in milliseconds
STALLS = ("control", "blocked", "paused", "multi")  # what is ahead of the SETs; control: nothing
LIMIT_COUNTERS = (
    "client_output_buffer_limit_disconnections",
    "client_query_buffer_limit_disconnections",
    "evicted_clients",
)


def limits_server():
    """A Redis of the chapter's own: the limits are set on it and nowhere else."""
    return EmbeddedRedis(port=free_port())


def limit_counters(r: redis.Redis) -> dict:
    stats = r.info("stats")
    return {k: int(stats[k]) for k in LIMIT_COUNTERS if k in stats}


def outcome(err: BaseException | None) -> str:
    return "completed" if err is None else f"{type(err).__name__}: {err}"


def run_cut(endpoint: Endpoint, pairs: int, setting: tuple[str, str], cut_pipeline) -> dict:
    """The notebook's `cut_pipeline(r, pairs, counter, big)` under a CONFIG setting (on the chapter's own
    server), with what the server counted."""

    counter, big = PREFIX + "cut:ran", PREFIX + "cut:big"
    with endpoint.client() as admin:
        admin.delete(counter)
        admin.set(big, "x" * BIG_VALUE)
        before = limit_counters(admin)
        admin.config_set(*setting)
        try:
            with no_retry_client(endpoint) as r:
                replies, err = cut_pipeline(r, pairs, counter, big)
        finally:
            admin.config_set(*DEFAULTS[setting[0]])
        after = limit_counters(admin)
        ran = int(admin.get(counter) or 0)
    return {
        "setting": " ".join(setting),
        "commands_sent": 2 * pairs,
        "incr_ran": ran,
        "outcome": outcome(err),
        "replies": len(replies) if replies else 0,
        "counters": {k: after[k] - before.get(k, 0) for k in after},
    }


DEFAULTS = {
    "client-output-buffer-limit": ("client-output-buffer-limit", "normal 0 0 0"),
    "maxmemory-clients": ("maxmemory-clients", "0"),
    "client-query-buffer-limit": ("client-query-buffer-limit", "1gb"),
    "proto-max-bulk-len": ("proto-max-bulk-len", "512mb"),
}


def run_huge_request(endpoint: Endpoint, setting: tuple[str, str], size: int) -> dict:
    """One SET of `size` bytes under a query-side limit: what the client is told, what the server counted."""

    key = PREFIX + "huge"
    with endpoint.client() as admin:
        admin.delete(key)
        before = limit_counters(admin)
        admin.config_set(*setting)
        err = None
        try:
            with no_retry_client(endpoint) as r:
                r.set(key, b"x" * size)
        except redis.RedisError as e:
            err = e
        finally:
            admin.config_set(*DEFAULTS[setting[0]])
        after = limit_counters(admin)
        stored = admin.strlen(key)
    return {
        "setting": " ".join(setting),
        "request_bytes": size,
        "outcome": outcome(err),
        "stored_bytes": stored,
        "counters": {k: after[k] - before.get(k, 0) for k in after},
    }


def run_stalled(endpoint: Endpoint, stall: str, n: int, stalled_pipeline, paused) -> dict:
    """The notebook's `stalled_pipeline(r, stall, keys, value)` of `n` SETs, inside its `paused(admin, stall)`,
    under the 1 MiB query limit: what the client got, how many keys the server stored, and what it counted."""
    prefix = f"{PREFIX}stall:{stall}:"
    keys, value = [f"{prefix}{i}" for i in range(n)], b"v" * STALL_VALUE
    with endpoint.client() as admin:
        delete_lab_keys(admin, prefix + "*")
        before = limit_counters(admin)
        admin.config_set("client-query-buffer-limit", QUERY_LIMIT)
        try:
            with paused(admin, stall), no_retry_client(endpoint) as r:
                err = stalled_pipeline(r, stall, keys, value)
        finally:
            admin.config_set(*DEFAULTS["client-query-buffer-limit"])
        after = limit_counters(admin)
        stored = delete_lab_keys(admin, prefix + "*")  # what it deletes is what the pipeline stored
    return {
        "stall": stall,
        "setting": f"client-query-buffer-limit {QUERY_LIMIT}",
        "sets_sent": n,
        "request_bytes": sum(len(encode("SET", key, value)) for key in keys),
        "outcome": outcome(err),
        "stored": stored,
        "counters": {k: after[k] - before.get(k, 0) for k in after},
    }


def measure_limits(lab, endpoint: Endpoint, pairs: int, cut_pipeline, stalled_pipeline, paused) -> dict:
    """Every limit of the section, one at a time, met by the notebook's pipelines, then by Jedis (ch06-cut)."""
    out = {
        "cut_output": run_cut(endpoint, pairs, ("client-output-buffer-limit", OUTPUT_LIMIT), cut_pipeline),
        "cut_maxmemory_clients": run_cut(endpoint, pairs, ("maxmemory-clients", CLIENT_MEMORY_LIMIT), cut_pipeline),
        "huge_proto": run_huge_request(endpoint, ("proto-max-bulk-len", "1mb"), HUGE_VALUE),
        "huge_query": run_huge_request(endpoint, ("client-query-buffer-limit", QUERY_LIMIT), HUGE_VALUE),
    }
    sets = lab.size(STALL_SETS)
    out["stalled"] = {stall: run_stalled(endpoint, stall, sets, stalled_pipeline, paused) for stall in STALLS}
    # The Java example meets the same limits: the output one, then (its second form) the query one.
    for setting, args, name in (
        (("client-output-buffer-limit", OUTPUT_LIMIT), (pairs, 1, 0, BIG_VALUE), "jedis"),
        (("client-query-buffer-limit", QUERY_LIMIT), (sets, 1, 0, STALL_VALUE, STALL_SECONDS), "jedis_stalled"),
    ):
        with endpoint.client() as admin:
            admin.config_set(*setting)
            try:
                out[name] = lab.java("ch06-cut", *args, target=endpoint).facts
            finally:
                admin.config_set(*DEFAULTS[setting[0]])
    return out


def limits_table(limits: dict) -> str:
    rows = []
    for key, label in (
        ("cut_output", "redis-py pipeline, output buffer limit"),
        ("cut_maxmemory_clients", "redis-py pipeline, client eviction"),
    ):
        row = limits[key]
        rows.append(
            [
                label,
                f"`{row['setting']}`",
                f"{row['commands_sent']:,} sent, {2 * row['incr_ran']:,} ran",
                row["outcome"],
                _counters(row["counters"]),
            ]
        )
    jedis = limits.get("jedis")
    if jedis:
        rows.append(
            [
                "Jedis pipeline, output buffer limit",
                f"`client-output-buffer-limit {OUTPUT_LIMIT}`",
                f"{jedis['commands_sent']:,} sent, {2 * jedis['incr_ran']:,} ran",
                jedis["outcome"],
                f"responses readable: {jedis['responses_readable']}",
            ]
        )
    for key, label in (("huge_proto", "one 2 MiB SET"), ("huge_query", "one 2 MiB SET")):
        row = limits[key]
        rows.append(
            [
                label,
                f"`{row['setting']}`",
                f"stored {row['stored_bytes']:,} bytes",
                row["outcome"],
                _counters(row["counters"]),
            ]
        )
    return (
        md_table(
            [
                "What was sent",
                "Limit (on the chapter's own server)",
                "Commands",
                "What the client got",
                "Server counters (change)",
            ],
            rows,
        )
        + "\n\n"
        + stalled_table(limits)
    )


STALL_LABELS = {
    "control": "nothing (control)",
    "blocked": "a BLPOP that blocks",
    "paused": "CLIENT PAUSE WRITE",
    "multi": "MULTI (commands queued)",
}
QBUF = "client_query_buffer_limit_disconnections"


def stalled_rows(limits: dict) -> dict:
    """{client: {stall: row}} for redis-py and Jedis alike (the Java example reports flat facts)."""
    out = {"redis-py": limits["stalled"]}
    facts = limits.get("jedis_stalled")
    if facts:
        out["Jedis"] = {
            stall: {
                "sets_sent": facts["sets_sent"],
                "outcome": facts[f"{stall}_outcome"],
                "stored": facts[f"{stall}_stored"],
                "counters": {QBUF: facts[f"{stall}_qbuf_disconnections"]},
            }
            for stall in STALLS
        }
    return out


def stalled_table(limits: dict) -> str:
    rows = []
    for stall in STALLS:
        for client, by_stall in stalled_rows(limits).items():
            row = by_stall[stall]
            rows.append(
                [
                    STALL_LABELS[stall],
                    client,
                    f"{row['stored']:,} of {row['sets_sent']:,}",
                    row["outcome"],
                    _counters(row["counters"]),
                ]
            )
    mib = limits["stalled"]["control"]["request_bytes"] / 2**20
    return md_table(
        [
            f"Ahead of {mib:.1f} MiB of SETs (`client-query-buffer-limit {QUERY_LIMIT}`)",
            "Client",
            "Keys stored",
            "What the client got",
            "Server counters (change)",
        ],
        rows,
    )


def _counters(counters: dict) -> str:
    moved = [f"{k} +{v}" for k, v in counters.items() if v]
    return ", ".join(moved) or "none moved"


def limits_summary(limits: dict) -> dict:
    cut, evict = limits["cut_output"], limits["cut_maxmemory_clients"]
    out = {
        "cut_sent": quantity(cut["commands_sent"], "count"),
        "cut_ran": quantity(2 * cut["incr_ran"], "count"),
        "cut_outcome": quantity(0, "count", cut["outcome"]),
        "cut_disconnections": quantity(cut["counters"].get("client_output_buffer_limit_disconnections"), "count"),
        "evict_ran": quantity(2 * evict["incr_ran"], "count"),
        "evicted_clients": quantity(evict["counters"].get("evicted_clients"), "count"),
        "huge_proto_outcome": quantity(0, "count", limits["huge_proto"]["outcome"]),
        "huge_query_outcome": quantity(0, "count", limits["huge_query"]["outcome"]),
        "query_disconnections": quantity(
            limits["huge_query"]["counters"].get("client_query_buffer_limit_disconnections"), "count"
        ),
        "stall_sets": quantity(limits["stalled"]["control"]["sets_sent"], "count"),
        "stall_mib": quantity(limits["stalled"]["control"]["request_bytes"] / 2**20, "num"),
    }
    for client, by_stall in stalled_rows(limits).items():
        short = "py" if client == "redis-py" else "jedis"
        for stall, row in by_stall.items():
            out[f"{short}_{stall}_outcome"] = quantity(0, "count", row["outcome"])
            out[f"{short}_{stall}_stored"] = quantity(row["stored"], "count")
            out[f"{short}_{stall}_qbuf"] = quantity(row["counters"].get(QBUF), "count")
    jedis = limits.get("jedis")
    if jedis:
        out["jedis_ran"] = quantity(2 * jedis["incr_ran"], "count")
        out["jedis_outcome"] = quantity(0, "count", jedis["outcome"])
    return out
