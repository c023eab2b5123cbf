"""Section 4, many keys on the cluster: a pipeline, mget_nonatomic and one hash tag.
The reads are the notebook's cell tagged code:cluster_mget, passed in by the notebook."""

from __future__ import annotations

import redis
import redis.asyncio

from ... import observe
from ...measure import Measurement, measure
from ...params import Size
from ...results import md_table, quantity, ratio_figure
from ...server import Endpoint
from .common import PREFIX
from .variadic import VALUE

CLUSTER_KEYS = Size(full=10_000, quick=2_000)


def measure_cluster(
    cluster, n: int, repeat: int, cluster_get_pipelined, cluster_mget_nonatomic, cluster_mget_tagged
) -> dict:
    """{mode: Measurement} of reading n keys from the cluster with the notebook's functions, with the GETs
    and MGETs each master ran per call; "crossslot" holds what a plain MGET across slots got."""
    plain = [f"{PREFIX}c:{i}" for i in range(n)]
    tagged = [f"{PREFIX}{{user}}:c:{i}" for i in range(n)]  # one hash tag: one slot
    rc = cluster.client()
    out = {}
    try:
        for keys in (plain, tagged):
            rc.mset_nonatomic(dict.fromkeys(keys, VALUE))
        try:
            rc.mget(plain[:2] + plain[-2:])
            out["crossslot"] = "no error"
        except (redis.RedisError, redis.exceptions.RedisClusterException) as err:  # redis-py refuses before sending
            out["crossslot"] = f"{type(err).__name__}: {err}"
        modes = {
            "pipeline of GETs": (cluster_get_pipelined, plain),
            "mget_nonatomic": (cluster_mget_nonatomic, plain),
            "MGET, one hash tag": (cluster_mget_tagged, tagged),
            "pipeline of GETs, one hash tag": (cluster_get_pipelined, tagged),
        }
        for mode, (fn, keys) in modes.items():
            before = [master_calls(node) for node in cluster.nodes]
            m = measure(f"cluster, {mode}, {n:,} keys", lambda fn=fn, keys=keys: fn(rc, keys), ops=n, repeat=repeat)
            calls = [
                {c: (after.get(c, 0) - was.get(c, 0)) // m.calls for c in ("get", "mget")}
                for was, after in zip(before, (master_calls(node) for node in cluster.nodes))
            ]
            m.params.update(mode=mode, n=n, per_master=calls)
            out[mode] = m
        cluster.delete_lab_keys()
    finally:
        rc.close()
    return out


def _calls(m: Measurement) -> str:
    """GETs and MGETs per master, e.g. '3,337 GET / 3,301 GET / 3,362 GET'."""
    parts = [" + ".join(f"{n:,} {c.upper()}" for c, n in calls.items() if n) or "0" for calls in m.params["per_master"]]
    return " / ".join(parts)


def cluster_table(runs: dict[str, Measurement]) -> str:
    rows = [[mode, f"{m.median * 1e3:,.1f} ms", f"{m.per_op_us:.2f} µs", _calls(m)] for mode, m in runs.items()]
    return md_table(["Mode", "Time (median)", "Per key", "Commands per master, one call"], rows)


def cluster_summary(runs: dict[str, Measurement], crossslot: str) -> dict:
    tags = {
        "pipeline of GETs": "pipeline",
        "mget_nonatomic": "nonatomic",
        "MGET, one hash tag": "tagged_mget",
        "pipeline of GETs, one hash tag": "tagged_pipeline",
    }
    out = {"crossslot": quantity(0, "count", crossslot), "n": quantity(next(iter(runs.values())).ops, "count")}
    for mode, m in runs.items():
        out[f"{tags[mode]}_ms"] = quantity(m.median * 1e3, "num", f"{m.median * 1e3:,.1f} ms")
        out[f"{tags[mode]}_commands"] = quantity(sum(sum(c.values()) for c in m.params["per_master"]), "count")
    base = runs["pipeline of GETs"]
    for mode, m in runs.items():
        out[f"{tags[mode]}_vs_pipeline"] = ratio_figure(base, m)
    return out


def master_calls(node: Endpoint) -> dict[str, int]:
    with node.client() as c:
        return observe.command_calls(c)
