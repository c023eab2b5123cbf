"""Section 5: RESP3 pushes among a pipeline's replies.

The harness only: the pipelines (redis-py's and GLIDE's) are the notebook's cells tagged code:push and
code:glide, passed in by the notebook; their Java twins are in PushReplies."""

from __future__ import annotations

from importlib.metadata import version

from ...results import md_table, quantity
from ..ch07.common import LoopThread
from ..ch07.glide import glide_client
from .common import PREFIX

EXPECTED_PUSH_REPLIES = ["v1", True, "v2", 1, "v2"]
GLIDE_EXPECTED_REPLIES = ["v1", "OK", "v2", 1, "v2"]


def client_info_resp(info) -> int:
    """The resp= field of a CLIENT INFO line."""
    text = info.decode() if isinstance(info, bytes) else str(info)
    return int(dict(f.split("=", 1) for f in text.split() if "=" in f)["resp"])


async def glide_push_row(endpoint, key: str, glide_pipeline_with_invalidation) -> dict:
    client = await glide_client(endpoint)  # GLIDE's defaults, with REDIS_URL's credentials and TLS
    try:
        resp = client_info_resp(await client.custom_command(["CLIENT", "INFO"]))
        replies = [
            r.decode() if isinstance(r, bytes) else r for r in await glide_pipeline_with_invalidation(client, key)
        ]
        await client.custom_command(["DEL", key, key + ":n"])
    finally:
        await client.close()
    # -1: GLIDE hands the application pub/sub messages only, never an invalidation.
    return {"resp": resp, "replies": replies, "aligned": replies == GLIDE_EXPECTED_REPLIES, "pushes": -1}


def measure_push(lab, pipeline_with_invalidation, glide_pipeline_with_invalidation) -> dict:
    """The notebook's pipeline through redis-py (each protocol) and GLIDE, then the Java clients (ch06-push)."""
    key = PREFIX + "tracked"
    out = {}
    for protocol in (None, 2, 3):
        with lab.client(protocol=protocol, decode_responses=True) as r:
            r.delete(key, key + ":n")
            replies, pushes = pipeline_with_invalidation(r, key)
            out[f"redis-py, protocol={protocol}"] = {
                "resp": int(r.client_info()["resp"]),
                "replies": replies,
                "aligned": replies == EXPECTED_PUSH_REPLIES,
                "pushes": len(pushes),
            }
    with LoopThread() as loop:
        out["glide"] = loop.run(
            glide_push_row(lab.endpoint, PREFIX + "tracked:glide", glide_pipeline_with_invalidation)
        )
    out["java"] = lab.java("ch06-push").facts
    return out


def java_push_rows(facts: dict) -> dict:
    """ch06-push's flat facts (jedis_resp, jedis_replies, ...) as one row per client."""
    return {
        client: {
            "resp": int(facts[f"{client}_resp"]),
            "replies": facts[f"{client}_replies"],
            "aligned": facts[f"{client}_aligned"],
            "pushes": facts[f"{client}_pushes"],
        }
        for client in ("jedis", "jedis_resp3", "jedis_client", "lettuce")
        if f"{client}_resp" in facts
    }


JAVA_PUSH_LABELS = {
    "jedis": "Jedis 8 (defaults)",
    "jedis_resp3": "Jedis 8, RESP3 asked for",
    "jedis_client": "Jedis 8's RedisClient (defaults)",
    "lettuce": "Lettuce 7 (defaults)",
}


GLIDE_LABEL = f"GLIDE {version('valkey-glide')} (Python), defaults"


def push_table(push: dict) -> str:
    labelled = {GLIDE_LABEL if c == "glide" else c: row for c, row in push.items() if c != "java"}
    labelled |= {JAVA_PUSH_LABELS[c]: row for c, row in java_push_rows(push.get("java", {})).items()}
    rows = [
        [
            client,
            row["resp"],
            row["replies"] if isinstance(row["replies"], str) else ", ".join(map(str, row["replies"])),
            "yes" if row["aligned"] else "**no**",
            "not exposed" if row["pushes"] < 0 else row["pushes"],
        ]
        for client, row in labelled.items()
    ]
    return md_table(
        [
            "Client",
            "RESP version (CLIENT INFO)",
            "Pipeline results",
            "Each result its own command's",
            "Pushes seen by the application",
        ],
        rows,
    )


def push_summary(push: dict) -> dict:
    default = push["redis-py, protocol=None"]
    out = {
        "redispy_default_resp": quantity(default["resp"], "count"),
        "redispy_aligned": quantity(0, "count", "yes" if default["aligned"] else "no"),
        "redispy_pushes": quantity(default["pushes"], "count"),
    }
    rows = java_push_rows(push.get("java", {}))
    if "glide" in push:
        rows["glide"] = push["glide"]
    for client, row in rows.items():
        out[f"{client}_resp"] = quantity(row["resp"], "count")
        out[f"{client}_aligned"] = quantity(0, "count", "yes" if row["aligned"] else "no")
        replies = row["replies"] if isinstance(row["replies"], str) else ", ".join(map(str, row["replies"]))
        out[f"{client}_replies"] = quantity(0, "count", replies)
        out[f"{client}_pushes"] = quantity(row["pushes"], "count")
    return out
