"""Chapter 10's Go examples (node-go-rust-examples/go), run by pipelab.golang: explicit pipelines
(go-redis, rueidis), the auto-pipelining curve (rueidis in three modes, go-redis's pool and autopipeliner,
valkey-go; beside them rueidis and valkey-go under GOMAXPROCS 4 and rueidis with a MaxFlushDelay) with
rueidis's head-of-line, big-DoMulti and direct-path cases, and go-redis's cluster pipeline. Each
measure function returns the example's run, or None where Go is missing (toolchains.toolchain_note
says so)."""

from __future__ import annotations

from ... import golang, stats
from ...host import Unavailable
from ...jbang import JavaRun
from ...results import quantity
from .common import each_rtt, merge_rtts
from .parameters import (
    BIG_BYTES,
    CALLERS,
    GO_DIRECT_GETS,
    GO_FLUSH_US,
    GO_HOL_MS,
    GO_READERS,
    GO_SAMPLE_MS,
    GO_SIDE_PROCS,
    N_EXPLICIT,
    REPEAT,
    REPEAT_AUTO,
    VALUE_BYTES,
    WARMUP,
)


def _go_ready() -> bool:
    try:
        golang.require_go()
    except Unavailable:
        return False
    return True


def measure_go_explicit(lab) -> JavaRun | None:
    """go-redis one by one, Pipelined and TxPipelined, rueidis one by one and DoMulti: PINGs and SADDs."""
    if not _go_ready():
        return None
    return golang.run_example(
        "explicit", lab.endpoint, lab.size(N_EXPLICIT), lab.size(REPEAT), lab.size(WARMUP), "ping,sadd"
    )


def measure_go_auto(lab) -> JavaRun | None:
    """The curve at each RTT the lab can inject (one run each, its modes suffixed _rtt<ms>), with the
    head-of-line, big-DoMulti and direct-path cases in the 0 ms run only."""
    if not _go_ready():
        return None
    runs = {}
    for rtt, link in each_rtt(lab):
        runs[rtt] = golang.run_example(
            "auto",
            link.endpoint,
            lab.size(GO_SAMPLE_MS),
            lab.size(REPEAT_AUTO),
            1,
            ",".join(map(str, CALLERS)),
            rtt,
            VALUE_BYTES,
            lab.size(GO_HOL_MS) if rtt == 0 else 0,
            lab.size(BIG_BYTES),
            GO_READERS,
            GO_SIDE_PROCS,
            GO_FLUSH_US,
            lab.size(GO_DIRECT_GETS) if rtt == 0 else 0,
        )
    return merge_rtts(runs)


def measure_go_cluster(lab, cluster) -> JavaRun | None:
    """go-redis's ClusterClient on chapter 5's cluster (`cluster`: lab.cluster()): one by one against
    Pipelined, the pipeline's split by master, and what a cross-slot MGET and TxPipelined do."""
    if not _go_ready():
        return None
    node = cluster.nodes[0]
    return golang.run_example("cluster", node, lab.size(N_EXPLICIT), lab.size(REPEAT), lab.size(WARMUP), cluster=node)


HOL_CASES = ("alone", "shared", "separate")
MULTI_CASES = ("below", "at")
# rueidis's direct path: one caller with context.Background() on a fresh client, with context.WithCancel
# on another, and with context.Background() again after callers overlapped on the first.
DIRECT_PHASES = ("background_before", "cancel", "background_after")


def direct_summary(f: dict) -> dict:
    """go_direct_<phase>_p50 (the median turn's, with its interval), go_direct_<phase>_goroutines and
    go_direct_overlap_goroutines (what each left running, over every turn), go_direct_turns, and each
    later phase's p50 ÷ the first's, paired by turn (go_direct_<phase>_cost)."""
    out = {"go_direct_turns": quantity(f["direct_turns"], "count")}
    out["go_direct_overlap_goroutines"] = quantity(f["direct_overlap_goroutines"], "count")
    first = f["direct_background_before_p50_us_rounds"]
    for phase in DIRECT_PHASES:
        rounds = f[f"direct_{phase}_p50_us_rounds"]
        out[f"go_direct_{phase}_p50"] = quantity(
            f[f"direct_{phase}_p50_us"], "us", interval=stats.median_interval(rounds)
        )
        out[f"go_direct_{phase}_goroutines"] = quantity(f[f"direct_{phase}_goroutines"], "count")
        if phase != DIRECT_PHASES[0]:
            out[f"go_direct_{phase}_cost"] = quantity(
                f[f"direct_{phase}_p50_us"] / f["direct_background_before_p50_us"],
                "x",
                interval=stats.ratio_interval(rounds, first, paired=True),
            )
    return out


def go_facts_summary(auto: JavaRun | None, cluster: JavaRun | None = None, explicit: JavaRun | None = None) -> dict:
    """The Go facts as figures for the prose, under go_: rueidis's head-of-line case (hol_<case>_gets),
    its DoMulti just under and at its dedicated-connection threshold (multi_<below|at>_<stat>), go-redis's
    cluster split (cluster_node<i>_commands, cluster_node<i>_reads) and cross-slot answers, the
    threshold itself (rueidis_blocking_pipeline), the GOMAXPROCS the curve ran under (gomaxprocs, and
    side_gomaxprocs beside it) and rueidis's direct path (direct_summary). Empty where Go was missing."""
    out = {}
    f = auto.facts if auto else {}
    for name, unit in (("gomaxprocs", "count"), ("side_gomaxprocs", "count"), ("max_flush_delay_us", "us")):
        if name in f:
            out[f"go_{name}"] = quantity(f[name], unit)
    if "direct_turns" in f:
        out |= direct_summary(f)
    if "hol_alone_p99_us" in f:  # its latencies and their ratio are rueidis's in hol_summary
        for case in HOL_CASES:
            out[f"go_hol_{case}_gets"] = quantity(f[f"hol_{case}_gets"], "count")
        out["go_hol_big_mb"] = quantity(f["hol_big_bytes"] / 1e6, "num", f"{f['hol_big_bytes'] / 1e6:.0f} MB")
    if "multi_at_connections" in f:
        for case in MULTI_CASES:
            out[f"go_multi_{case}_batch"] = quantity(f[f"multi_{case}_batch"], "count")
            out[f"go_multi_{case}_connections"] = quantity(f[f"multi_{case}_connections"], "count")
            out[f"go_multi_{case}_batches"] = quantity(f[f"multi_{case}_batches"], "count")
            for stat in ("p50", "p99"):
                out[f"go_multi_{case}_{stat}"] = quantity(f[f"multi_{case}_{stat}_us"], "us")
    e = explicit.facts if explicit else {}
    if "rueidis_blocking_pipeline" in e:
        out["go_rueidis_blocking_pipeline"] = quantity(e["rueidis_blocking_pipeline"], "count")
    c = cluster.facts if cluster else {}
    if "masters" in c:
        out["go_cluster_masters"] = quantity(c["masters"], "count")
        out["go_cluster_n"] = quantity(cluster.data.get("size"), "count")
        for i in range(c["masters"]):
            out[f"go_cluster_node{i}_commands"] = quantity(c[f"node{i}_commands"], "count")
            out[f"go_cluster_node{i}_reads"] = quantity(c[f"node{i}_reads"], "count")
        for name in ("crossslot_mget_error", "crossslot_tx_error"):
            out[f"go_{name}"] = quantity(0, "count", c[name] or "none")
        for name in (
            "crossslot_mget_values",
            "crossslot_mget_nodes",
            "crossslot_mget_server_errors",
            "crossslot_tx_execs",
            "crossslot_tx_commands",
        ):
            out[f"go_{name}"] = quantity(c[name], "count")
    return out
