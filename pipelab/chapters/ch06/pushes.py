"""Section 5: RESP3 pushes among a pipeline's replies."""

from __future__ import annotations

import redis

from ...results import md_table, quantity
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


EXPECTED_PUSH_REPLIES = ["v1", True, "v2", 1, "v2"]


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
        for client in ("jedis", "jedis_resp3", "lettuce")
        if f"{client}_resp" in facts
    }


JAVA_PUSH_LABELS = {
    "jedis": "Jedis 8 (defaults)",
    "jedis_resp3": "Jedis 8, RESP3 asked for",
    "lettuce": "Lettuce 7 (defaults)",
}


def push_table(push: dict) -> str:
    rows = [
        [client, row["resp"], ", ".join(map(str, row["replies"])), "yes" if row["aligned"] else "**no**", row["pushes"]]
        for client, row in push.items()
        if client != "java"
    ]
    for client, row in java_push_rows(push.get("java", {})).items():
        rows.append(
            [
                JAVA_PUSH_LABELS[client],
                row["resp"],
                row["replies"],
                "yes" if row["aligned"] else "**no**",
                "not exposed" if row["pushes"] < 0 else row["pushes"],
            ]
        )
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
    for client, row in java_push_rows(push.get("java", {})).items():
        out[f"{client}_resp"] = quantity(row["resp"], "count")
        out[f"{client}_aligned"] = quantity(0, "count", "yes" if row["aligned"] else "no")
        out[f"{client}_replies"] = quantity(0, "count", row["replies"])
        out[f"{client}_pushes"] = quantity(row["pushes"], "count")
    return out
