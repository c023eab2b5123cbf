"""Where a pipeline's reads land when a client may read from replicas, and the stale reads that gives.

A cluster of three masters with a replica each (six servers on loopback, started for this section).
The keys hold "old", replicated; then every replica holds back its replication stream (CLIENT PAUSE
WRITE: it serves reads and applies nothing). Each client setting runs a pipeline of GETs, then a
pipeline of SET "new" + GET per key: the GETs the replicas served, and the GETs that returned "old"
right after the caller's own SET. The redis-py code is the notebook's cell tagged code:replicas."""

from __future__ import annotations

from redis.cluster import LoadBalancingStrategy

from ...cluster import free_cluster_port
from ...cluster_faults import ReplicatedCluster, replication_held, wait_replicated
from ...params import Size
from ...results import md_table, quantity
from .clients import case_summary, cell, command_counts, counted, run_elsewhere, timed, totals

N_REPLICA = Size(full=300, quick=60)
# {row: (client, the setting's slug (its example knows it by it), redis-py's constructor options)}
SETTINGS = {
    "redis-py (default)": ("redis-py", "redispy", {}),
    "redis-py, ROUND_ROBIN": (
        "redis-py",
        "redispy_round_robin",
        {"load_balancing_strategy": LoadBalancingStrategy.ROUND_ROBIN},
    ),
    "redis-py, RANDOM_REPLICA": (
        "redis-py",
        "redispy_random_replica",
        {"load_balancing_strategy": LoadBalancingStrategy.RANDOM_REPLICA},
    ),
    "go-redis (default)": ("go-redis", "goredis", None),
    "go-redis, ReadOnly": ("go-redis", "goredis_readonly", None),
    "go-redis, RouteByLatency": ("go-redis", "goredis_latency", None),
    "go-redis, RouteRandomly": ("go-redis", "goredis_random", None),
    "ioredis (default)": ("ioredis", "ioredis", None),
    'ioredis, scaleReads "slave"': ("ioredis", "ioredis_slave", None),
    'ioredis, scaleReads "all"': ("ioredis", "ioredis_all", None),
    "node-redis (default)": ("node-redis", "noderedis", None),
    "node-redis, useReplicas": ("node-redis", "noderedis_replicas", None),
    "Lettuce (default)": ("Lettuce", "lettuce", None),
    "Lettuce, ReadFrom.REPLICA": ("Lettuce", "lettuce_replica", None),
    "Redisson (default)": ("Redisson", "redisson", None),
    "Redisson, ReadMode.MASTER": ("Redisson", "redisson_master", None),
}


def replica_keys(prefix: str, n: int) -> list[str]:
    return [f"{prefix}replica:{i}" for i in range(n)]


def _seed(cluster, keys) -> None:
    with cluster.client() as rc:
        pipe = rc.pipeline()
        for k in keys:
            pipe.set(k, "old")
        pipe.execute()
    wait_replicated(cluster)


def replica_runs(lab, prefix: str, n: int, reads_after_writes) -> dict:
    """{setting: GETs served by masters and by replicas, and what the caller read}, on a cluster with a
    replica per master that the section starts and stops."""
    keys = replica_keys(prefix, n)
    rows = {}
    with ReplicatedCluster(3, 1, base_port=free_cluster_port(6)) as cluster:
        for row, (client, slug, options) in SETTINGS.items():
            _seed(cluster, keys)
            everyone = cluster.nodes + cluster.replica_nodes
            before = command_counts(everyone, ("get",))
            with replication_held(cluster):
                if client == "redis-py":
                    facts = _redispy(cluster, keys, options, reads_after_writes)
                else:
                    facts = run_elsewhere(lab, cluster.nodes[0], client, "replicas", n, slug=slug)
            delta = counted(before, command_counts(everyone, ("get",)))
            if isinstance(facts, str):
                rows[row] = {"skipped": facts}
                continue
            masters = totals(delta, {e.port for e in cluster.nodes})["get"]
            replicas = totals(delta, {e.port for e in cluster.replica_nodes})["get"]
            rows[row] = facts | {"gets_masters": masters, "gets_replicas": replicas}
        cluster.delete_lab_keys()
    return rows


def _redispy(cluster, keys, options, reads_after_writes) -> dict:
    rc = cluster.client(**options)
    out, error, _ = timed(lambda: reads_after_writes(rc, keys))
    rc.close()
    if error is not None:
        return {"outcome": f"{type(error).__name__}: {error}"[:80]}
    first, after_write = out
    return {
        "outcome": "ok",
        "read_old": sum(1 for v in first if v == b"old"),
        "stale_reads": sum(1 for v in after_write if v == b"old"),
        "fresh_reads": sum(1 for v in after_write if v == b"new"),
    }


def replicas_table(rows: dict, n: int) -> str:
    header = ["client and setting", "GETs on masters", "GETs on replicas", f"stale after its own SET (of {n:,})"]
    body = []
    for row, x in rows.items():
        if "skipped" in x:
            body.append([row, x["skipped"], "", ""])
        elif x.get("outcome", "ok") != "ok" and "stale_reads" not in x:
            body.append([row, cell(x["outcome"]), x["gets_masters"], x["gets_replicas"]])
        else:
            body.append([row, f"{x['gets_masters']:,}", f"{x['gets_replicas']:,}", f"{x.get('stale_reads', '–'):,}"])
    return md_table(header, body)


def replicas_summary(rows: dict, n: int) -> dict:
    out = {"n": quantity(n, "count"), "gets": quantity(2 * n, "count")}
    for row, x in rows.items():
        out |= case_summary(SETTINGS[row][1], x, ("gets_masters", "gets_replicas", "stale_reads", "fresh_reads"), "ok")
    return out
