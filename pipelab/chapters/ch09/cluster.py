"""Section 3: the same pattern delete on chapter 5's cluster, where SCAN sees one node's keys only.

The harness only: the delete per master is the notebook's cell tagged code:cluster (taught.py)."""

from __future__ import annotations

import time

from redis.cluster import RedisCluster

from ...cluster import Cluster
from ...errors import LabError
from ...results import md_table, quantity
from .common import DOOMED, KEPT, PATTERN
from .load import count_keys


def populate_cluster(rc: RedisCluster, n_doomed: int, n_kept: int, batch: int = 10_000) -> None:
    """Strings only: the cluster pipeline sends each key to the master that serves its slot."""
    for start in range(0, max(n_doomed, n_kept), batch):
        pipe = rc.pipeline()
        for i in range(start, min(start + batch, n_doomed)):
            pipe.set(f"{DOOMED}{i}", "d" * 32)
        for i in range(start, min(start + batch, n_kept)):
            pipe.set(f"{KEPT}{i}", "k" * 32)
        pipe.execute()


def measure_cluster_delete(cluster: Cluster, n_doomed: int, n_kept: int, count: int, delete_per_master) -> dict:
    """Populate, delete by the notebook's `delete_per_master(rc, count)` ({node: keys removed}), then
    count what is left on each master: nothing doomed, every kept key."""
    rc = cluster.client()
    try:
        cluster.delete_lab_keys()
        populate_cluster(rc, n_doomed, n_kept)
        start = time.perf_counter()
        removed = delete_per_master(rc, count)
        elapsed = time.perf_counter() - start
        left = kept = 0
        for endpoint in cluster.nodes:
            with endpoint.client() as c:
                left += count_keys(c, PATTERN)
                kept += count_keys(c, KEPT + "*")
        if left or kept != n_kept or sum(removed.values()) != n_doomed:
            raise LabError(f"cluster delete: {left:,} doomed keys left, {kept:,} of {n_kept:,} kept keys")
        cluster.delete_lab_keys()
    finally:
        rc.close()
    return {"n_doomed": n_doomed, "n_kept": n_kept, "count": count, "s": elapsed, "per_node": removed, "kept": kept}


def cluster_table(report: dict) -> str:
    rows = [[node, f"{n:,}"] for node, n in report["per_node"].items()]
    rows.append(["all masters", f"{sum(report['per_node'].values()):,} in {report['s']:.3f} s"])
    return md_table(["Master", "Doomed keys it held and deleted"], rows)


def cluster_summary(report: dict) -> dict:
    per_node = list(report["per_node"].values())
    return {
        "n_doomed": quantity(report["n_doomed"], "count"),
        "n_kept": quantity(report["n_kept"], "count"),
        "masters": quantity(len(per_node), "count"),
        "s": quantity(report["s"], "s"),
        "rate": quantity(report["n_doomed"] / report["s"], "ops/s"),
        "min_per_node": quantity(min(per_node), "count"),
        "max_per_node": quantity(max(per_node), "count"),
        "kept_after": quantity(report["kept"], "count"),
    }
