"""A slot moves in the middle of a pipeline, for the Go and Node clients: the same two phases as the
redis-py run (ASK while half the keys have moved; MOVED for a client whose slot map predates the move),
each client in its own process. What the caller got, and what the masters counted: ASK and MOVED
replies sent, and SETs run (more than the keys when a client sent some twice)."""

from __future__ import annotations

from redis.cluster import key_slot

from ...results import md_table
from .clients import case_summary, cell, command_counts, counted, run_elsewhere, totals

OTHERS = ("go-redis", "rueidis", "ioredis", "node-redis")


def moving_keys(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{{mv}}:{i}" for i in range(n)]


def _node_id(endpoint) -> str:
    with endpoint.client() as c:
        return c.execute_command("CLUSTER", "MYID").decode()


def redirect_runs(lab, cluster, prefix: str, n: int) -> dict:
    """{(client, phase): what the caller got, plus ASK/MOVED sent and SETs run by the masters}."""
    keys = moving_keys(prefix, n)
    slot = key_slot(keys[0].encode())
    home = cluster.owner(slot)
    target = next(node for node in cluster.nodes if node != home)
    target_id = _node_id(target)
    rows = {}
    for name in OTHERS:
        for phase in ("ask", "moved"):
            migration = cluster.begin_migration(slot, target)
            migration.move_keys(n // 2 if phase == "ask" else None)
            before = command_counts(cluster.nodes, ("set",), ("ASK", "MOVED"))
            facts = run_elsewhere(lab, cluster.nodes[0], name, "moved", phase, slot, target_id, n)
            delta = totals(counted(before, command_counts(cluster.nodes, ("set",), ("ASK", "MOVED"))))
            if cluster.owner(slot) != target:  # the ASK phase ends the move here; the MOVED one did it itself
                migration.move_keys()
                migration.finish()
            cluster.wait_agreed()
            cluster.migrate_slot(slot, home)
            if isinstance(facts, str):
                rows[(name, phase)] = {"skipped": facts}
                break
            rows[(name, phase)] = facts | {
                "ask": delta["ASK"],
                "moved": delta["MOVED"],
                "sets_ran": delta["set"],
            }
    cluster.delete_lab_keys()
    return rows


def redirects_table(rows: dict, n: int) -> str:
    header = [
        "client",
        "phase",
        "what the caller got",
        "ASK sent",
        "MOVED sent",
        "SETs run",
        f"keys updated (of {n:,})",
    ]
    body = []
    for (name, phase), x in rows.items():
        if "skipped" in x:
            body.append([name, phase, x["skipped"], "", "", "", ""])
            continue
        body.append(
            [name, phase, cell(x.get("outcome", "–")), x["ask"], x["moved"], x["sets_ran"], x.get("keys_updated", "–")]
        )
    return md_table(header, body)


def redirects_summary(rows: dict) -> dict:
    out = {}
    for (name, phase), x in rows.items():
        slug = f"{name.lower().replace('-', '')}_{phase}"
        out |= case_summary(slug, x, ("ask", "moved", "sets_ran", "keys_updated", "replies_failed"))
    return out
