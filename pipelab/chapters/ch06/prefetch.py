"""Section 3: prefetch-batch-max-size on and off for pipelined GETs and MGET."""

from __future__ import annotations

import statistics
from contextlib import ExitStack

from ... import observe
from ...params import Size
from ...results import md_table, quantity, ratio_figure
from ...server import Endpoint
from .ceiling import bench_once, interleaved, rate, to_measurements
from .common import LABELS, PREFIX
from .io_threads import IO_SERVERS
from .servers import _FIRST_TWO, lineup, running

PREFETCH_KEYS = Size(full=1_000_000, quick=50_000)
MGET_KEYS = 64
RANDOM_KEY = PREFIX + "k:__rand_int__"  # redis-benchmark puts a random number below -r in each
PREFETCH_WORKLOADS = {  # name: (command, depth, clients, requests at full size)
    "GET, pipelined 64 deep": (("GET", RANDOM_KEY), 64, 50, 400_000),
    f"MGET of {MGET_KEYS} keys": (("MGET", *[RANDOM_KEY] * MGET_KEYS), 1, 50, 8_000),
}
PREFETCH_SETTINGS = (16, 0)  # prefetch-batch-max-size: the default, and off
# Redis 8.2 prefetches only what its I/O threads hand over, so it runs once more with io-threads 2.
IO2 = "redis-io2"
PREFETCH_LABELS = {**LABELS, IO2: "Redis 8.2, io-threads 2"}
# INFO's own count of the prefetching: batches run, and keys taken through them (same names on both servers)
PREFETCH_COUNTERS = {"batches": "io_threaded_total_prefetch_batches", "entries": "io_threaded_total_prefetch_entries"}


def populate(endpoint: Endpoint, keys: int) -> None:
    """About 63% of the keyspace gets a 100-byte value (random picks, as the reads will be)."""
    observe.run_benchmark(endpoint, "SET", RANDOM_KEY, "v" * 100, depth=256, requests=keys, clients=8, keyspace=keys)


def prefetch_counters(r) -> dict:
    stats = r.info("stats")
    return {name: int(stats.get(field, 0)) for name, field in PREFETCH_COUNTERS.items()}


def measure_prefetch(keys: int, scale: float, repeat: int) -> dict:
    """{(server, workload, setting): Measurement} with prefetch-batch-max-size switched between rounds;
    each run also records how far INFO's prefetch counters rose, against the keys it read."""
    names = {n: v for n, v in lineup(with_jemalloc_variant=False).items() if n in IO_SERVERS}
    with ExitStack() as stack:
        servers = dict(stack.enter_context(running(names)))
        if "redis" in names:
            io2 = running({IO2: names["redis"]}, args=["--io-threads", "2"], cpus={*_FIRST_TWO})
            servers |= stack.enter_context(io2)
        for server in servers.values():
            populate(server.endpoint, keys)
        clients = {name: stack.enter_context(s.endpoint.client()) for name, s in servers.items()}
        # Redis 8.2 leaves the setting out of CONFIG GET * (it is a hidden config); asked by name, it answers.
        listed = {name: "prefetch-batch-max-size" in r.config_get("*") for name, r in clients.items()}

        def run_cell(cell, requests):
            name, workload, setting = cell
            clients[name].config_set("prefetch-batch-max-size", setting)
            command, depth, conns, _ = PREFETCH_WORKLOADS[workload]
            before = prefetch_counters(clients[name])
            row = bench_once(servers[name].endpoint, command, depth, conns, requests, keyspace=keys)
            after = prefetch_counters(clients[name])
            row |= {f"prefetch_{k}": after[k] - before[k] for k in PREFETCH_COUNTERS}
            row["keys_read"] = requests * (len(command) - 1)
            return row

        cells = [(n, w, s) for w in PREFETCH_WORKLOADS for n in servers for s in PREFETCH_SETTINGS]
        raw = interleaved(cells, run_cell, repeat, lambda c: int(PREFETCH_WORKLOADS[c[1]][3] * scale))
    runs = to_measurements(raw, lambda c: f"{PREFETCH_LABELS[c[0]]}, {c[1]}, prefetch-batch-max-size {c[2]}")
    for (name, _, _), m in runs.items():
        m.params["listed_by_config_get_all"] = listed[name]
    return runs


def prefetched_share(m) -> float | None:
    """Keys taken through prefetching per key the run read, the median over the rounds; None if not counted."""
    p = m.params
    return (
        statistics.median([e / k for e, k in zip(p["prefetch_entries"], p["keys_read"])]) if "keys_read" in p else None
    )


def percent(share: float | None) -> str:
    return "–" if share is None else f"{share:.0%}"


def prefetch_table(runs: dict) -> str:
    rows = []
    for name, workload in dict.fromkeys((n, w) for n, w, _ in runs):
        on, off = runs[(name, workload, 16)], runs[(name, workload, 0)]
        rows.append(
            [
                PREFETCH_LABELS[name],
                workload,
                rate(on),
                rate(off),
                f"{on.ops_per_s / off.ops_per_s:.2f}x",
                f"{percent(prefetched_share(on))} → {percent(prefetched_share(off))}",
            ]
        )
    return md_table(
        [
            "Server",
            "Workload (requests/s)",
            "prefetch 16 (default)",
            "prefetch 0 (off)",
            "on ÷ off",
            "keys prefetched (INFO), 16 → 0",
        ],
        rows,
    )


def prefetch_summary(runs: dict, keys: int) -> dict:
    out = {"keys": quantity(keys, "count")}
    for (name, _, _), m in runs.items():
        if "listed_by_config_get_all" in m.params:
            listed = m.params["listed_by_config_get_all"]
            out[f"{name.replace('-', '_')}_listed_by_config_get_all"] = quantity(
                int(listed), "count", "yes" if listed else "no"
            )
    for name, workload in dict.fromkeys((n, w) for n, w, _ in runs):
        tag = "mget" if workload.startswith("MGET") else "get"
        on, off = runs[(name, workload, 16)], runs[(name, workload, 0)]
        name = name.replace("-", "_")  # summary keys are identifiers
        out[f"{name}_{tag}_on_vs_off"] = ratio_figure(off, on, on.ops / off.ops)
        out[f"{name}_{tag}_on"] = quantity(on.ops_per_s, "ops/s", rate(on))  # median (min–max of the rounds)
        out[f"{name}_{tag}_off"] = quantity(off.ops_per_s, "ops/s", rate(off))
        for setting, m in (("on", on), ("off", off)):
            if "prefetch_batches" in m.params:
                batches = round(statistics.median(m.params["prefetch_batches"]))  # per round
                out[f"{name}_{tag}_batches_{setting}"] = quantity(batches, "count")
                out[f"{name}_{tag}_prefetched_{setting}"] = quantity(100 * prefetched_share(m), "%")
    return out
