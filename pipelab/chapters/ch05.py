"""Chapter 5: pipelines on a Redis Cluster, where a batch's keys live on different masters.
The workloads the site shows beside their Java twins, and what the chapter reads off each node."""
from __future__ import annotations

from collections import Counter
from contextlib import contextmanager

import redis
from redis.cluster import RedisCluster, key_slot

from ..cluster import Cluster
from . import ch01
from .claims import Claim, Published, derived

PREFIX = "pipelab:ch05:"


# --8<-- [start:sadd]
def sadd_one_by_one(rc: RedisCluster, keys: list[str]) -> None:
    # RedisCluster hashes each key to its slot, looks up the master that serves it and sends
    # the command on that master's connection: one round trip per command, as on one server.
    for key in keys:
        rc.sadd(key, "m")


def sadd_pipelined(rc: RedisCluster, keys: list[str]) -> None:
    # ClusterPipeline groups the queued commands by master, writes each group on its master's
    # connection, then reads every group's replies and puts them back in the caller's order.
    pipe = rc.pipeline()
    for key in keys:
        pipe.sadd(key, "m")
    assert sum(pipe.execute()) == len(keys)
# --8<-- [end:sadd]


# --8<-- [start:crossslot]
def transaction_on_one_node(node: redis.Redis, keys: list[str]):
    # MULTI/EXEC sent to one master: Redis queues each command, then at EXEC refuses the lot
    # with CROSSSLOT if the keys hash to different slots.
    pipe = node.pipeline(transaction=True)
    for key in keys:
        pipe.set(key, "v")
    return pipe.execute()


def tagged(tag: str, n: int) -> list[str]:
    # Only the part between { and } is hashed, so every one of these keys shares one slot.
    return [f"{PREFIX}{{{tag}}}:{i}" for i in range(n)]
# --8<-- [end:crossslot]


def keys_per_node(cluster: Cluster, keys: list[str]) -> dict[int, int]:
    """How many of `keys` each master serves (by port), from the slot each key hashes to."""
    owners = cluster.slot_owners()
    counts = Counter(owners[key_slot(k.encode())].port for k in keys)
    return {node.port: counts.get(node.port, 0) for node in cluster.nodes}


def slot_ranges(cluster: Cluster) -> dict[int, int]:
    """Slots each master serves (by port)."""
    counts = Counter(endpoint.port for endpoint in cluster.slot_owners().values())
    return {node.port: counts.get(node.port, 0) for node in cluster.nodes}


NODE_STATS = ("total_connections_received", "total_reads_processed")


def node_counters(cluster: Cluster) -> dict[int, dict[str, int]]:
    """Per master: connections accepted, socket reads, SADD calls and redirections sent (INFO errorstats)."""
    out = {}
    for node in cluster.nodes:
        with node.client() as c:
            stats = c.info("stats")
            calls = c.info("commandstats")
            errors = c.info("errorstats")  # Redis 6.2+; an older server answers nothing here
            out[node.port] = {key: int(stats[key]) for key in NODE_STATS} | {
                "sadd": int(calls.get("cmdstat_sadd", {}).get("calls", 0)),
                "set": int(calls.get("cmdstat_set", {}).get("calls", 0)),
                "moved": int(errors.get("errorstat_MOVED", {}).get("count", 0)),
                "ask": int(errors.get("errorstat_ASK", {}).get("count", 0))}
    return out


def counter_delta(before: dict, after: dict, overhead: dict | None = None) -> dict[int, dict[str, int]]:
    return {port: {k: after[port][k] - before[port][k] - (overhead[port][k] if overhead else 0) for k in after[port]}
            for port in after}


@contextmanager
def per_master(cluster: Cluster):
    """What every master counted while the block ran, less what reading the counters costs
    (each reading opens a connection to every master and runs three INFO commands)."""
    first = node_counters(cluster)
    overhead = counter_delta(first, node_counters(cluster))
    delta: dict = {}
    before = node_counters(cluster)
    yield delta
    delta.update(counter_delta(before, node_counters(cluster), overhead))


# --8<-- [start:moved]
def set_in_pipeline(rc: RedisCluster, keys: list[str], value: str) -> list:
    # All keys share one slot. While that slot migrates, its old master answers ASK for keys it
    # no longer holds; once migrated, MOVED. The client must redirect and keep replies in order.
    pipe = rc.pipeline()
    for key in keys:
        pipe.set(key, value)
    return pipe.execute()
# --8<-- [end:moved]


# --- what the sources published, and the figures that answer them ---------------------------

PUBLISHED = {
    "cluster_slots": Published(16384, "count", "redis.io, Redis Cluster specification: the key space is split into "
                                               "16384 hash slots"),
    "hash_tag_slots": Published(1, "count", "redis.io, Redis Cluster specification: keys with the same hash tag go "
                                            "to the same slot"),
}
CLAIMS = [
    Claim("Hash slots served by the cluster's masters", "ch05/crossslot", "slots", "count", PUBLISHED["cluster_slots"]),
    Claim("Slots used by 100,000 keys sharing one hash tag", "ch05/crossslot", "one_tag_slots", "count",
          PUBLISHED["hash_tag_slots"]),
    Claim("Pipelining speed-up, 100,000 SADD on the cluster (redis-py)", "ch05/sadd", "cluster_speedup", "x",
          derived(ch01.ping_speedup(), "x", "redis.io's 1.185 s / 0.251 s for 10,000 PINGs on one server")),
]
