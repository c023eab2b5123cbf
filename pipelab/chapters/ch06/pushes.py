"""Section 5: RESP3 pushes among a pipeline's replies."""

from __future__ import annotations

from importlib.metadata import version

import redis
from glide import Batch

from ...results import md_table, quantity
from ..ch07.common import LoopThread
from ..ch07.glide import glide_client
from .common import PREFIX


# --8<-- [start:push]
def pipeline_with_invalidation(r: redis.Redis, key: str) -> tuple[list, list]:
    """With CLIENT TRACKING on, read a key, then change it inside a pipeline: the server pushes an
    invalidation for it to this connection, between the pipeline's replies."""
    conn = r.connection_pool.get_connection()  # the pool's one connection, used by every call below
    pushes: list = []
    conn._parser.set_invalidation_push_handler(pushes.append)  # redis-py's hook for RESP3 pushes
    r.connection_pool.release(conn)
    r.execute_command("CLIENT", "TRACKING", "ON")
    r.set(key, "v1")
    r.get(key)  # now tracked
    pipe = r.pipeline(transaction=False)
    pipe.get(key)
    pipe.set(key, "v2")  # invalidates the key this connection read: a push follows
    pipe.get(key)
    pipe.incr(key + ":n")
    pipe.get(key)
    return pipe.execute(), pushes


# --8<-- [end:push]


# --8<-- [start:glide]
async def glide_pipeline_with_invalidation(client, key: str) -> list:
    """The same pipeline through GLIDE's one multiplexed connection: a non-atomic Batch."""
    await client.custom_command(["CLIENT", "TRACKING", "ON"])
    await client.set(key, "v1")
    await client.get(key)  # now tracked
    batch = Batch(is_atomic=False)
    batch.get(key)
    batch.set(key, "v2")  # the server pushes an invalidation to this connection
    batch.get(key)
    batch.incr(key + ":n")
    batch.get(key)
    return await client.exec(batch, raise_on_error=True)


# --8<-- [end:glide]


EXPECTED_PUSH_REPLIES = ["v1", True, "v2", 1, "v2"]
GLIDE_EXPECTED_REPLIES = ["v1", "OK", "v2", 1, "v2"]


def client_info_resp(info) -> int:
    """The resp= field of a CLIENT INFO line."""
    text = info.decode() if isinstance(info, bytes) else str(info)
    return int(dict(f.split("=", 1) for f in text.split() if "=" in f)["resp"])


async def glide_push_row(endpoint, key: str) -> dict:
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


def measure_push(lab) -> dict:
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
        out["glide"] = loop.run(glide_push_row(lab.endpoint, PREFIX + "tracked:glide"))
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
