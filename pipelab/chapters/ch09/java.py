"""Jedis: the same jobs (ch09-load, ch09-delete), with the chapter's sizes and the Watch around each load."""

from __future__ import annotations

from ...jbang import fact
from ...results import md_table, median_figure, quantity, rate_figure
from .instruments import Watch
from .parameters import (
    BAD_COMMANDS,
    BATCHES,
    N_DOOMED,
    N_KEPT,
    N_LOAD,
    REPEAT_DELETE,
    REPEAT_LOAD,
    SCAN_COUNTS,
    VALUE_BYTES,
    WATCH_LOAD_MS,
)

# What the Watch saw while one mode ran on its own, kept as facts "<mode>_<name>".
WATCHED = (
    "peak_qbuf_bytes",
    "peak_omem_bytes",
    "peak_tot_mem_bytes",
    "idle_tot_mem_bytes",
    "tot_mem_added_bytes",
    "rss_growth_bytes",
    "probe_p99_ms",
    "probe_worst_ms",
)


def _csv(values) -> str:
    return ",".join(map(str, values))


def measure_java_load(lab):
    """The modes timed together (interleaved), then each mode on its own, repeated, inside a Watch."""
    n, batches = lab.size(N_LOAD), _csv(BATCHES)
    run = lab.java("ch09-load", n, lab.size(REPEAT_LOAD), 1, batches, VALUE_BYTES, BAD_COMMANDS)
    facts = run.data.setdefault("facts", {})
    for mode in run.data["modes"]:
        with Watch(lab.endpoint) as watch:
            alone = lab.java("ch09-load", n, 1, 0, batches, VALUE_BYTES, BAD_COMMANDS, mode, WATCH_LOAD_MS)
        facts[f"{mode}_watched_s"] = alone.data["modes"][mode][0] * alone.facts["loads"]
        facts[f"{mode}_watched_loads"] = alone.facts["loads"]
        facts[f"{mode}_watch_s"] = watch.result["duration_s"]
        for name in WATCHED:
            facts[f"{mode}_{name}"] = watch.result[name]
    return run


def measure_java_delete(lab, cluster):
    """Every SCAN way on the lab's server, then the cluster ways on chapter 5's masters."""
    node = cluster.nodes[0]
    return lab.java(
        "ch09-delete",
        lab.size(N_DOOMED),
        lab.size(REPEAT_DELETE),
        1,
        lab.size(N_KEPT),
        _csv(SCAN_COUNTS),
        VALUE_BYTES,
        f"{node.host}:{node.port}",
        cluster=node,
    )


def _load_label(field: dict) -> str:
    if field["way"] == "mset":
        return f"MSET of {field['batch']:,} keys"
    return f"Pipeline, sync() every {field['batch']:,}"


def java_load_table(run) -> str:
    """Per mode: keys/s (interleaved rounds), then what the Watch saw while it ran alone."""
    f, ms = run.facts, run.measurements()
    rows = []
    for mode, m in ms.items():
        field = run.fields.get(mode, {})
        label = "One pipeline of everything" if mode == "one_pipeline" else _load_label(field)
        rows.append(
            [
                label,
                f"{m.ops_per_s:,.0f} ({m.ops / m.max:,.0f}–{m.ops / m.min:,.0f})",
                quantity(f[f"{mode}_peak_tot_mem_bytes"], "bytes")["text"],
                _added(f, mode),
                quantity(f[f"{mode}_peak_qbuf_bytes"], "bytes")["text"],
                quantity(f[f"{mode}_peak_omem_bytes"], "bytes")["text"],
                quantity(f[f"{mode}_rss_growth_bytes"], "bytes")["text"],
                f"{f[f'{mode}_probe_p99_ms']:.2f} / {f[f'{mode}_probe_worst_ms']:.2f}",
            ]
        )
    return md_table(
        [
            "Jedis load",
            "Keys/s (min–max)",
            "Peak client memory (tot-mem)",
            "Above a client at rest",
            "Peak query buffer",
            "Peak output buffer",
            "RSS growth",
            "Probe PING p99 / worst (ms)",
        ],
        rows,
    )


def _added(f: dict, mode: str) -> str:
    """The peak tot-mem less a client's at rest (the Watch's idle client)."""
    added = f[f"{mode}_tot_mem_added_bytes"]
    return ("−" if added < 0 else "") + quantity(abs(added), "bytes")["text"]


def java_load_summary(run) -> dict:
    f, ms = run.facts, run.measurements()
    watched = [f[f"{mode}_watched_loads"] for mode in ms]
    out = {
        "n": quantity(next(iter(ms.values())).ops, "count"),
        "watch_ms": quantity(WATCH_LOAD_MS, "ms"),
        "watched_loads_min": quantity(min(watched), "count"),
        "value_bytes": quantity(f["value_bytes"], "bytes"),
        "bad": quantity(f["bad_commands"], "count"),
        "bad_batch": quantity(f["bad_batch"], "count"),
        "bad_sync_threw": quantity(0, "count", "threw" if f["bad_sync_threw"] else "threw nothing"),
        "bad_get_threw": quantity(f["bad_get_threw"], "count"),
        "bad_get_exception": fact(run, "bad_get_exception"),
        "bad_get_message": fact(run, "bad_get_message"),
        "bad_keys_stored": quantity(f["bad_keys_stored"], "count"),
        "bad_keys_expected": quantity(f["bad_keys_expected"], "count"),
        "bad_return_all_exceptions": quantity(f["bad_return_all_exceptions"], "count"),
        "bad_return_all_replies": quantity(f["bad_return_all_replies"], "count"),
        "jedis_version": quantity(0, "count", run.clients.get("jedis", "unknown")),
    }
    # A client at rest, the largest any watch saw: what a client costs before it sends anything.
    out["idle_tot_mem"] = quantity(max(f[f"{mode}_idle_tot_mem_bytes"] for mode in ms), "bytes")
    for mode, m in ms.items():
        out[f"{mode}_keys_per_s"] = rate_figure(m)
        out[f"{mode}_ms"] = median_figure(m, "ms")
        out[f"{mode}_tot_mem"] = quantity(f[f"{mode}_peak_tot_mem_bytes"], "bytes")
        out[f"{mode}_tot_mem_added"] = quantity(f[f"{mode}_tot_mem_added_bytes"], "bytes")
        out[f"{mode}_qbuf"] = quantity(f[f"{mode}_peak_qbuf_bytes"], "bytes")
        out[f"{mode}_omem"] = quantity(f[f"{mode}_peak_omem_bytes"], "bytes")
        out[f"{mode}_rss"] = quantity(f[f"{mode}_rss_growth_bytes"], "bytes")
        out[f"{mode}_p99_ms"] = quantity(f[f"{mode}_probe_p99_ms"], "ms")
        out[f"{mode}_worst_ms"] = quantity(f[f"{mode}_probe_worst_ms"], "ms")
    return out


def _delete_label(mode: str, field: dict) -> str:
    if field.get("where") == "cluster":
        return {
            "nodes_per_slot": "getClusterNodes(), UNLINK per slot",
            "nodes_per_key": "getClusterNodes(), UNLINK per key",
            "iteration": "scanIteration(), ClusterPipeline",
        }[mode]
    way = "a pipelined UNLINK per key" if field["way"] == "pipelined" else "one UNLINK per page"
    return f"SCAN COUNT {field['count']:,}, {way}"


def java_delete_table(run) -> str:
    """Per way: time, keys/s, SCAN calls, UNLINK commands, and on the cluster the keys per master."""
    f, ms = run.facts, run.measurements()
    masters = f.get("cluster_masters", 0)
    rows = []
    for mode, m in ms.items():
        field = run.fields.get(mode, {})
        on_cluster = field.get("where") == "cluster"
        per_master = " / ".join(f"{f[f'{mode}_master{i}_deleted']:,}" for i in range(masters)) if on_cluster else ""
        rows.append(
            [
                "Cluster" if on_cluster else "Server",
                _delete_label(mode, field),
                f"{m.median * 1e3:,.0f} ({m.min * 1e3:,.0f}–{m.max * 1e3:,.0f})",
                f"{m.ops_per_s:,.0f}",
                f"{f[f'{mode}_scan_calls']:,}",
                f"{f[f'{mode}_unlink_commands']:,}",
                per_master,
            ]
        )
    return md_table(
        ["Where", "Jedis way", "Time, ms (min–max)", "Keys/s", "SCAN calls", "UNLINK commands", "Deleted per master"],
        rows,
    )


def java_delete_summary(run) -> dict:
    f, ms = run.facts, run.measurements()
    out = {
        "doomed": quantity(f["doomed"], "count"),
        "kept": quantity(f["kept"], "count"),
        "kept_after": quantity(f["kept_after"], "count"),
        "pattern": fact(run, "pattern"),
    }
    if "cluster_masters" in f:
        # Keys per UNLINK when a page's keys go one command per slot: how few slots a page spans.
        per_slot = f["nodes_per_slot_deleted"] / f["nodes_per_slot_unlink_commands"]
        out["nodes_per_slot_keys_per_unlink"] = quantity(per_slot, "num")
        out["cluster_kept_after"] = quantity(f["cluster_kept_after"], "count")
        out["cluster_masters"] = quantity(f["cluster_masters"], "count")
        out["cluster_count"] = quantity(f["cluster_count"], "count")
    for mode, m in ms.items():
        out[f"{mode}_ms"] = median_figure(m, "ms")
        out[f"{mode}_keys_per_s"] = rate_figure(m)
        out[f"{mode}_scan_calls"] = quantity(f[f"{mode}_scan_calls"], "count")
        out[f"{mode}_unlinks"] = quantity(f[f"{mode}_unlink_commands"], "count")
        for i in range(f.get("cluster_masters", 0)):
            if f"{mode}_master{i}_deleted" in f:
                out[f"{mode}_master{i}_deleted"] = quantity(f[f"{mode}_master{i}_deleted"], "count")
    return out
