"""Chapter 5: pipelines on a Redis Cluster, where a batch's keys live on different masters.

The harness only: the workloads (the cross-slot transaction, the SADD loops, the pipeline of SETs
while a slot moves, the pipelines that meet a lost master, a flushed script cache and replicas) are
the notebook's cells tagged code:… (taught.py), passed in by the notebook; their Java twins are
ClusterSadd, ClusterPipelines and ClusterFailures, with Go and Node beside them for the failures.
Here: what the chapter reads off each node; the failure sections in clients (running every client),
redirects, lost, scripts and replicas."""

from __future__ import annotations

import time
from collections import Counter
from contextlib import contextmanager

import matplotlib.pyplot as plt
import redis
from matplotlib.figure import Figure
from redis.cluster import RedisCluster, key_slot

from ... import plots, taught
from ...cluster import Cluster
from ...jbang import fact
from ...params import Size
from ...results import md_table, measurements_frame, median_figure, quantity, ratio_figure, summarize
from ...server import PREFIX as LAB_PREFIX
from .. import ch01
from ..ch10.toolchains import toolchain_note
from ..claims import Claim, Published, derived
from .lost import N_LOST, lost_details, lost_runs, lost_summary, lost_table, pipeline_refusal
from .redirects import redirect_runs, redirects_summary, redirects_table
from .replicas import N_REPLICA, replica_runs, replicas_summary, replicas_table
from .scripts import N_SCRIPT, SCRIPT, script_runs, scripts_summary, scripts_table

PREFIX = LAB_PREFIX + "ch05:"


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
                "ask": int(errors.get("errorstat_ASK", {}).get("count", 0)),
            }
    return out


def counter_delta(before: dict, after: dict, overhead: dict | None = None) -> dict[int, dict[str, int]]:
    return {
        port: {k: after[port][k] - before[port][k] - (overhead[port][k] if overhead else 0) for k in after[port]}
        for port in after
    }


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


# --- the chapter's parameters, declared once (the notebook passes them to the Java examples) ---

N_SPREAD = 100_000
USERS = 1_000
N = Size(full=10_000, quick=2_000)  # per-SADD figures: a one-by-one run on the cluster still lasts seconds
REPEAT = Size(full=3, quick=1)
N_MOVE = Size(full=1_000, quick=200)
PER_USER = "one tag per user ({user:N}, 1,000 users)"


def cluster_banner(cluster) -> tuple[str, str]:
    """The cluster's Redis version, and a line naming each master and the slots it serves."""
    with cluster.nodes[0].client() as node:
        version = node.info("server")["redis_version"]
    return version, (
        f"Cluster of {len(cluster.nodes)} masters, Redis {version}: "
        + ", ".join(f"{port} serves {n:,} slots" for port, n in slot_ranges(cluster).items())
    )


# --- CROSSSLOT and hash tags -------------------------------------------------------------------


def cross_slot_pair(cluster) -> list[str]:
    """Two lab keys served by the first master but hashing to different slots."""
    pair = []
    for key in (f"{PREFIX}x:{i}" for i in range(100_000)):
        slot = key_slot(key.encode())
        if cluster.owner(slot) == cluster.nodes[0] and all(slot != key_slot(k.encode()) for k in pair):
            pair.append(key)
        if len(pair) == 2:
            return pair
    raise AssertionError("no two keys of the first master in different slots")


def _outcome(run) -> str:
    try:
        run()
        return "accepted"
    except redis.ResponseError as err:
        return f"refused: {str(err)[:90]}"


def crossslot_attempts(cluster, rc: RedisCluster, set_in_transaction, tagged) -> tuple[dict, int]:
    """What each multi-key attempt got, and how many of the cross-slot pair's keys were written: the
    notebook's `set_in_transaction(r, keys)` on one master and through RedisCluster, on its `tagged(tag, n)` keys."""
    pair = cross_slot_pair(cluster)
    outcomes = {}
    with cluster.node_client(cluster.nodes[0]) as node:
        outcomes["cross-slot MULTI/EXEC on one master"] = _outcome(lambda: set_in_transaction(node, pair))
        cross_written = sum(node.exists(k) for k in pair)
        outcomes["cross-slot MSET on one master"] = _outcome(lambda: node.mset({k: "v" for k in pair}))
    same_tag = tagged("user:42", 2)
    with cluster.node_client(cluster.owner(same_tag[0])) as node:
        outcomes["hash-tagged MULTI/EXEC"] = f"accepted: {set_in_transaction(node, same_tag)}"
    try:
        set_in_transaction(rc, pair)
        outcomes["cross-slot transaction, redis-py RedisCluster"] = "accepted"
    except Exception as err:  # which exception is the finding
        outcomes["cross-slot transaction, redis-py RedisCluster"] = f"refused by the client: {type(err).__name__}"
    return outcomes, cross_written


def key_layouts(n: int = N_SPREAD) -> dict[str, list[str]]:
    return {
        "no hash tag": [f"{PREFIX}user:{i % USERS}:item:{i}" for i in range(n)],
        PER_USER: [f"{PREFIX}{{user:{i % USERS}}}:item:{i}" for i in range(n)],
        "one tag for everything": [f"{PREFIX}{{all}}:item:{i}" for i in range(n)],
    }


def layout_spread(cluster, layouts: dict) -> tuple[dict, dict]:
    """Keys per master and slots used, per layout."""
    spread = {name: keys_per_node(cluster, keys) for name, keys in layouts.items()}
    slots_used = {name: len({key_slot(k.encode()) for k in keys}) for name, keys in layouts.items()}
    return spread, slots_used


def spread_table(spread: dict, slots_used: dict, n: int = N_SPREAD) -> str:
    ports = next(iter(spread.values()))
    return md_table(
        ["key layout", "slots used", *[f"keys on :{p}" for p in ports], "busiest master's share"],
        [
            [
                name,
                f"{slots_used[name]:,}",
                *[f"{c:,}" for c in counts.values()],
                f"{100 * max(counts.values()) / n:.0f}%",
            ]
            for name, counts in spread.items()
        ],
    )


def crossslot_summary(
    outcomes: dict, cross_written: int, spread: dict, slots_used: dict, slots: dict, n: int = N_SPREAD
) -> dict:
    def share(name):
        return quantity(100 * max(spread[name].values()) / n, "%")

    def text(name):
        return quantity(0, "count", outcomes[name])

    return {
        "masters": quantity(len(slots), "count"),
        "slots": quantity(sum(slots.values()), "count"),
        "cross_tx": text("cross-slot MULTI/EXEC on one master"),
        "cross_mset": text("cross-slot MSET on one master"),
        "cross_written": quantity(cross_written, "count"),
        "tagged_tx": quantity(0, "count", outcomes["hash-tagged MULTI/EXEC"].split(":")[0]),
        "redispy_cross": text("cross-slot transaction, redis-py RedisCluster"),
        "one_tag_slots": quantity(slots_used["one tag for everything"], "count"),
        "untagged_share": share("no hash tag"),
        "per_user_share": share(PER_USER),
        "one_tag_share": share("one tag for everything"),
    }


# --- SADD on one server and on the cluster -------------------------------------------------


def measure_sadd(lab, cluster, rc: RedisCluster, n: int, repeat: int, sadd_one_by_one, sadd_pipelined) -> tuple:
    """redis-py one by one and pipelined, on one server (chapter 1's loops) and on the cluster (the
    notebook's `sadd_one_by_one(rc, keys)` and `sadd_pipelined(rc, keys)`), and on the cluster one more
    run of each counted on every master: (runs, usage)."""
    loops = taught.load("01-round-trip-time")  # chapter 1's SADD loops, as its notebook runs them
    keys = loops.sadd_keys(n, prefix=PREFIX + "sadd:")
    single = lab.client()
    runs, usage = [], {}

    def clear_single():
        return ch01.delete_keys(single, keys)

    modes = {
        ("one server", "one by one"): (lambda: loops.sadd_one_by_one(single, keys, "m"), clear_single),
        ("one server", "pipeline"): (lambda: loops.sadd_pipelined(single, keys, "m"), clear_single),
        ("cluster", "one by one"): (lambda: sadd_one_by_one(rc, keys), cluster.delete_lab_keys),
        ("cluster", "pipeline"): (lambda: sadd_pipelined(rc, keys), cluster.delete_lab_keys),
    }
    for (where, mode), (run, reset) in modes.items():
        runs.append(
            lab.measure(
                f"redis-py, {where}, {mode}",
                run,
                ops=n,
                repeat=repeat,
                setup=reset,
                where=where,
                mode=mode,
                client="redis-py",
            )
        )
        if where == "cluster":
            reset()
            with per_master(cluster) as delta:
                fresh = cluster.client()  # new connections, so the count shows what one job opens
                (sadd_one_by_one if mode == "one by one" else sadd_pipelined)(fresh, keys)
                fresh.close()
            usage[("redis-py", mode)] = delta
        reset()
    single.close()
    return runs, usage


def java_sadd(lab, cluster, n: int, repeat: int):
    """ch05-sadd's measurements, labelled like redis-py's, and its run (for its facts)."""
    java = lab.java("ch05-sadd", n, repeat, target=cluster.nodes[0])
    runs = []
    for mode, m in java.measurements().items():
        client, _, how = mode.partition("_")
        m.params.update(where="cluster", mode=how.replace("_", " "), client=client)
        m.label = f"{client}, cluster, {how.replace('_', ' ')}"
        runs.append(m)
    return runs, java


def sadd_table(runs: list) -> str:
    rows = summarize(measurements_frame(runs), by=("label",))
    return md_table(
        ["run", "median", "µs per SADD", "spread"],
        [
            [r.label, f"{r.median_s * 1e3:,.0f} ms", f"{r.median_s / r.ops * 1e6:.1f}", m.spread()]
            for r, m in zip(rows.itertuples(), runs)
        ],
    )


def usage_table(usage: dict) -> str:
    ports = next(iter(usage.values()))
    return md_table(
        ["client, mode", *[f":{p} connections / reads / SADD" for p in ports]],
        [
            [
                f"{c}, {mode}",
                *[
                    f"{d[p]['total_connections_received']} / {d[p]['total_reads_processed']:,} / {d[p]['sadd']:,}"
                    for p in ports
                ],
            ]
            for (c, mode), d in usage.items()
        ],
    )


@plots.draws("ch05/sadd")
def sadd_plot(doc: dict) -> Figure:
    runs, n = doc["measurements"], doc["params"]["n"]
    masters = len(next(iter(doc["params"]["usage"].values())))  # usage counts every master, by port
    fig, ax = plt.subplots(figsize=(9, 5))
    colors = [
        plots.COLORS["one by one"] if m.params.get("mode", "").startswith("one") else plots.COLORS["pipelined"]
        for m in runs
    ]
    plots.per_op_bars(
        ax,
        [m.label for m in runs],
        [m.per_op_us for m in runs],
        colors,
        xlabel="µs per SADD (median, log scale)",
        title=f"{n:,} SADD: one server against a cluster of {masters} masters",
    )
    fig.tight_layout()
    return fig


SADD_ALT = (
    "Horizontal bar chart, log scale: microseconds per SADD for redis-py on one server and on a "
    "three-master cluster, and for the Java clients on the cluster, one by one and pipelined"
)


def sadd_summary(runs: list, usage: dict, n: int, java) -> dict:
    by = {(m.params.get("client"), m.params.get("where"), m.params.get("mode")): m for m in runs}

    def us(key):
        return median_figure(by[key], "us", per_op=True) if key in by else quantity(None, "us")

    def ratio(a, b):
        return ratio_figure(by[a], by[b]) if a in by and b in by else quantity(None, "x")

    def total(mode, what):
        return sum(d[what] for d in usage[("redis-py", mode)].values())

    one, pipe = ("redis-py", "cluster", "one by one"), ("redis-py", "cluster", "pipeline")
    s_one, s_pipe = ("redis-py", "one server", "one by one"), ("redis-py", "one server", "pipeline")
    summary = {
        "n": quantity(n, "count"),
        "single_one_us": us(s_one),
        "single_pipe_us": us(s_pipe),
        "cluster_one_us": us(one),
        "cluster_pipe_us": us(pipe),
        "cluster_speedup": ratio(one, pipe),
        "single_speedup": ratio(s_one, s_pipe),
        "cluster_vs_single_pipe": ratio(pipe, s_pipe),
        "one_reads": quantity(total("one by one", "total_reads_processed"), "count"),
        "pipe_reads": quantity(total("pipeline", "total_reads_processed"), "count"),
        "one_conns": quantity(total("one by one", "total_connections_received"), "count"),
        "pipe_conns": quantity(total("pipeline", "total_connections_received"), "count"),
    }
    for client in sorted({m.params.get("client") for m in runs} - {"redis-py"}):
        base = next((m for (c, _, md), m in by.items() if c == client and md.startswith("one")), None)
        best = min(
            (m for (c, _, md), m in by.items() if c == client and not md.startswith("one")),
            key=lambda m: m.median,
            default=None,
        )
        summary[f"{client}_one_us"] = median_figure(base, "us", per_op=True) if base else quantity(None, "us")
        summary[f"{client}_best_us"] = median_figure(best, "us", per_op=True) if best else quantity(None, "us")
        summary[f"{client}_best_mode"] = quantity(0, "count", best.params["mode"] if best else "–")
        summary[f"{client}_speedup"] = ratio_figure(base, best) if base and best else quantity(None, "x")
    for client, piped in (
        ("jedis", "jedis_pipeline"),
        ("lettuce", "lettuce_pipeline"),
        ("redisson", "redisson_rbatch"),
    ):
        for tag, mode in (("one", f"{client}_one_by_one"), ("pipe", piped)):
            summary[f"{client}_{tag}_conns"] = fact(java, f"{mode}_connections_opened")
            summary[f"{client}_{tag}_reads"] = fact(java, f"{mode}_server_reads")
    return summary


# --- a pipeline while its slot moves ---------------------------------------------------------------


def measure_migration(cluster, rc: RedisCluster, n: int, tagged, set_in_pipeline) -> list:
    """The notebook's `set_in_pipeline(rc, keys, value)` on one slot's `tagged` keys halfway through that
    slot's migration (ASK), then with a client whose slot map predates the move (MOVED); the slot goes
    back home afterwards."""
    moving = tagged("moving", n)
    slot = key_slot(moving[0].encode())
    home = cluster.owner(slot)
    target = next(node for node in cluster.nodes if node != home)
    set_in_pipeline(rc, moving, "0")
    rows = []

    def attempt(name, value, client):
        with per_master(cluster) as delta:
            start = time.perf_counter()
            try:
                outcome = f"ok, {len(set_in_pipeline(client, moving, value))} replies"
            except Exception as err:
                outcome = f"{type(err).__name__}: {str(err)[:60]}"
            elapsed = time.perf_counter() - start
        with cluster.client() as check:
            values = [check.get(k) for k in moving]  # one by one: mid-migration an MGET gets TRYAGAIN
        rows.append(
            {
                "case": name,
                "outcome": outcome,
                "ms": elapsed * 1e3,
                "ask": sum(d["ask"] for d in delta.values()),
                "moved": sum(d["moved"] for d in delta.values()),
                "updated": sum(1 for v in values if v == value.encode()),
            }
        )

    migration = cluster.begin_migration(slot, target)
    migration.move_keys(n // 2)
    attempt("during the migration (half the keys moved)", "1", rc)
    stale = cluster.client()
    stale.get(moving[0])  # this client learns the slot map now, before the slot changes hands
    migration.finish()
    attempt("after the migration, old slot map", "2", stale)
    stale.close()
    cluster.migrate_slot(slot, home)  # leave the cluster as it was
    cluster.delete_lab_keys()
    return rows


def migration_table(rows: list, n: int) -> str:
    return md_table(
        ["pipeline of SET", "outcome", "time", "ASK sent", "MOVED sent", f"keys updated (of {n:,})"],
        [[x["case"], x["outcome"], f"{x['ms']:.1f} ms", x["ask"], x["moved"], f"{x['updated']:,}"] for x in rows],
    )


def migration_summary(rows: list, n: int, java) -> dict:
    during, after = rows
    facts = {
        "ask_moved_keys": "ask_keys_moved_per_client",
        "jedis_multi": "jedis_cluster_multi_outcome",
        "jedis_crossslot": "jedis_crossslot_outcome",
        "redisson_two_masters_exec": "redisson_atomic_two_masters_exec_calls",
        "jedis_ask_written": "jedis_ask_keys_written",
        "jedis_moved_written": "jedis_moved_keys_written",
        "jedis_moved_outcome": "jedis_moved_outcome",
        "lettuce_ask_pending": "lettuce_ask_pending_after_first_flush",
        "lettuce_moved_pending": "lettuce_moved_pending_after_first_flush",
        "lettuce_moved_written": "lettuce_moved_keys_written",
        "redisson_ask_rejected": "redisson_ask_set_rejected",
        "redisson_ask_written": "redisson_ask_keys_written",
        "redisson_moved_written": "redisson_moved_keys_written",
    }
    return {
        "n": quantity(n, "count"),
        "during_outcome": quantity(0, "count", during["outcome"]),
        "during_ask": quantity(during["ask"], "count"),
        "during_updated": quantity(during["updated"], "count"),
        "after_outcome": quantity(0, "count", after["outcome"]),
        "after_moved": quantity(after["moved"], "count"),
        "after_updated": quantity(after["updated"], "count"),
    } | {k: fact(java, v) for k, v in facts.items()}


# --- what the sources published, and the figures that answer them ---------------------------

PUBLISHED = {
    "cluster_slots": Published(
        16384, "count", "redis.io, Redis Cluster specification: the key space is split into 16384 hash slots"
    ),
    "hash_tag_slots": Published(
        1, "count", "redis.io, Redis Cluster specification: keys with the same hash tag go to the same slot"
    ),
}
CLAIMS = [
    Claim("Hash slots served by the cluster's masters", "ch05/crossslot", "slots", "count", PUBLISHED["cluster_slots"]),
    Claim(
        "Slots used by 100,000 keys sharing one hash tag",
        "ch05/crossslot",
        "one_tag_slots",
        "count",
        PUBLISHED["hash_tag_slots"],
    ),
    Claim(
        "Pipelining speed-up, SADD on the cluster (redis-py)",
        "ch05/sadd",
        "cluster_speedup",
        "x",
        derived(ch01.ping_speedup(), "x", "redis.io's 1.185 s / 0.251 s for 10,000 PINGs on one server"),
    ),
]
