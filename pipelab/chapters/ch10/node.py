"""Chapter 10's Node.js examples (node-go-rust-examples/node), run by pipelab.node: explicit
pipelines (node-redis, ioredis), the auto-pipelining curve (ioredis with auto-pipelining off and on,
node-redis, GLIDE for Node) with the head-of-line cases and ioredis's batch wait, and ioredis's cluster
pipeline. Each measure
function returns the example's run (the curve: one run per RTT), or None where Node is missing
(toolchains.toolchain_note says so)."""

from __future__ import annotations

import statistics

from ... import node, stats
from ...host import Unavailable
from ...jbang import JavaRun
from ...results import quantity
from .common import each_rtt
from .parameters import (
    BIG_BYTES,
    CALLERS,
    N_EXPLICIT,
    NODE_HOL_MS,
    NODE_READERS,
    POINT_MS,
    REPEAT,
    REPEAT_AUTO,
    VALUE_BYTES,
    WARMUP,
)


def _node_ready() -> bool:
    try:
        node.require_node()
    except Unavailable:
        return False
    return True


def _csv(values) -> str:
    return ",".join(map(str, values))


def measure_node_explicit(lab) -> JavaRun | None:
    """node-redis one by one, Promise.all, multi().exec(), execAsPipeline(); ioredis one by one, Promise.all,
    pipeline().exec(): PINGs and SADDs, interleaved per workload."""
    if not _node_ready():
        return None
    n, repeat, warmup = lab.size(N_EXPLICIT), lab.size(REPEAT), lab.size(WARMUP)
    return node.run_example("explicit.mjs", lab.endpoint, n, repeat, warmup, "ping,sadd")


# --8<-- [start:measure-auto]
def measure_node_auto(lab) -> list[JavaRun] | None:
    """The curve at each RTT (through the lab's proxy when above 0), one run per RTT; the head-of-line
    cases in the run at 0 ms only. An RTT the lab cannot inject is left out (the run at 0 ms stays)."""
    if not _node_ready():
        return None
    runs = []
    for rtt, link in each_rtt(lab):
        runs.append(
            node.run_example(
                "auto.mjs",
                link.endpoint,
                lab.size(POINT_MS),
                lab.size(REPEAT_AUTO),
                1,
                _csv(CALLERS),
                rtt,
                VALUE_BYTES,
                lab.size(BIG_BYTES) if rtt == 0 else 0,
                lab.size(NODE_HOL_MS),
                NODE_READERS,
            )
        )
    return runs


# --8<-- [end:measure-auto]


def measure_node_cluster(lab, cluster) -> JavaRun | None:
    """ioredis's Cluster on chapter 5's masters: SADDs one by one, one pipeline per master, auto-pipelined;
    one pipeline across masters and a cross-slot MGET as facts."""
    if not _node_ready():
        return None
    first = cluster.nodes[0]
    n, repeat, warmup = lab.size(N_EXPLICIT), lab.size(REPEAT), lab.size(WARMUP)
    return node.run_example("cluster.mjs", first, n, repeat, warmup, cluster=first)


def node_clients(*runs) -> dict[str, str]:
    """The Node and package versions the runs used (read from the installed packages), for the
    results' environment: lab.save(..., node_clients=node_clients(...))."""
    out: dict[str, str] = {}
    for run in runs:
        for one in run if isinstance(run, list | tuple) else [run]:
            if one is not None:
                out |= {"node": one.data.get("node_version"), **one.clients}
    return out


def glide_note(runs) -> str | None:
    """Why GLIDE for Node is missing from the curve (its native core could not load), or None."""
    for one in runs or []:
        if one is not None and one.facts.get("glide_note"):
            return one.facts["glide_note"]
    return None


def batch_wait_summary(runs) -> dict:
    """ioredis's batch wait (auto.mjs, with the head-of-line cases): a small GET issued in the same tick
    as a GET of the big value, auto-pipelining off and on. Per way: `ioredis_batch_wait_<way>_small` and
    `_big` (µs, the median turn, with its interval), and `_small_vs_big`, the small GET's latency ÷ the
    big one's in the same turn (median, with its interval). Empty where Node or the facts are missing."""
    out = {}
    for one in runs or []:
        f = one.facts if one is not None else {}
        for way in ("off", "auto"):
            small, big = f.get(f"batchwait_ioredis_{way}_small_us"), f.get(f"batchwait_ioredis_{way}_big_us")
            if not small or not big:
                continue
            key = f"ioredis_batch_wait_{way}"
            for name, values in (("small", small), ("big", big)):
                med = statistics.median(values)
                out[f"{key}_{name}"] = quantity(med, "us", f"{med:,.0f} µs", interval=stats.median_interval(values))
            shares = [s / b for s, b in zip(small, big, strict=True) if b > 0]
            out[f"{key}_small_vs_big"] = quantity(
                statistics.median(shares), "x", interval=stats.median_interval(shares)
            )
            out["ioredis_batch_wait_trials"] = quantity(f.get("batchwait_trials", len(small)), "count")
    return out
