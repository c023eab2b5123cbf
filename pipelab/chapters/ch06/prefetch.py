"""Section 3: prefetch-batch-max-size on and off for pipelined GETs and MGET."""

from __future__ import annotations

from ... import observe
from ...params import Size
from ...results import md_table, quantity, ratio_figure
from ...server import Endpoint
from .ceiling import bench_once, interleaved, rate, to_measurements
from .common import LABELS, PREFIX
from .io_threads import IO_SERVERS
from .servers import lineup, running

# --8<-- [start:prefetch]
PREFETCH_KEYS = Size(full=1_000_000, quick=50_000)
MGET_KEYS = 64
RANDOM_KEY = PREFIX + "k:__rand_int__"  # redis-benchmark puts a random number below -r in each
PREFETCH_WORKLOADS = {  # name: (command, depth, clients, requests at full size)
    "GET, pipelined 64 deep": (("GET", RANDOM_KEY), 64, 50, 400_000),
    f"MGET of {MGET_KEYS} keys": (("MGET", *[RANDOM_KEY] * MGET_KEYS), 1, 50, 8_000),
}
PREFETCH_SETTINGS = (16, 0)  # prefetch-batch-max-size: the default, and off


def populate(endpoint: Endpoint, keys: int) -> None:
    """About 63% of the keyspace gets a 100-byte value (random picks, as the reads will be)."""
    observe.run_benchmark(endpoint, "SET", RANDOM_KEY, "v" * 100, depth=256, requests=keys, clients=8, keyspace=keys)


# --8<-- [end:prefetch]


def measure_prefetch(keys: int, scale: float, repeat: int) -> dict:
    """{(server, workload, setting): Measurement} with prefetch-batch-max-size switched between rounds."""
    names = {n: v for n, v in lineup(with_jemalloc_variant=False).items() if n in IO_SERVERS}
    with running(names) as servers:
        for server in servers.values():
            populate(server.endpoint, keys)
        clients = {name: s.endpoint.client() for name, s in servers.items()}

        def run_cell(cell, requests):
            name, workload, setting = cell
            clients[name].config_set("prefetch-batch-max-size", setting)
            command, depth, conns, _ = PREFETCH_WORKLOADS[workload]
            return bench_once(servers[name].endpoint, command, depth, conns, requests, keyspace=keys)

        cells = [(n, w, s) for w in PREFETCH_WORKLOADS for n in servers for s in PREFETCH_SETTINGS]
        raw = interleaved(cells, run_cell, repeat, lambda c: int(PREFETCH_WORKLOADS[c[1]][3] * scale))
        for c in clients.values():
            c.close()
    return to_measurements(raw, lambda c: f"{LABELS[c[0]]}, {c[1]}, prefetch-batch-max-size {c[2]}")


def prefetch_table(runs: dict) -> str:
    rows = []
    for name, workload in dict.fromkeys((n, w) for n, w, _ in runs):
        on, off = runs[(name, workload, 16)], runs[(name, workload, 0)]
        rows.append([LABELS[name], workload, rate(on), rate(off), f"{on.ops_per_s / off.ops_per_s:.2f}x"])
    return md_table(["Server", "Workload (requests/s)", "prefetch 16 (default)", "prefetch 0 (off)", "on ÷ off"], rows)


def prefetch_summary(runs: dict, keys: int) -> dict:
    out = {"keys": quantity(keys, "count")}
    for name, workload in dict.fromkeys((n, w) for n, w, _ in runs):
        tag = "mget" if workload.startswith("MGET") else "get"
        on, off = runs[(name, workload, 16)], runs[(name, workload, 0)]
        out[f"{name}_{tag}_on_vs_off"] = ratio_figure(off, on, on.ops / off.ops)
        out[f"{name}_{tag}_on"] = quantity(on.ops_per_s, "ops/s", rate(on))  # median (min–max of the rounds)
        out[f"{name}_{tag}_off"] = quantity(off.ops_per_s, "ops/s", rate(off))
    return out
