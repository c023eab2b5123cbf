"""Section 2: deleting or expiring every key under a pattern, beside keys that must stay.

The harness only: the jobs (SCAN with pipelined UNLINK or DEL, one UNLINK per page, the Lua script,
EXPIRE) are the notebook's cell tagged code:delete (taught.py), passed in by the notebook."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import redis
from matplotlib.figure import Figure

from ... import plots
from ...errors import LabError
from ...measure import Measurement, settled_heap, stop_reason, timed
from ...results import md_table, quantity, ratio_figure
from ...server import Endpoint, delete_lab_keys
from .common import DOOMED, KEPT, PATTERN, PREFIX
from .instruments import Watch
from .load import count_keys

# Doomed keys are mostly short strings (one allocation: UNLINK frees them at once), with some hashes
# of BIG_FIELDS fields (a hash table past hash-max-listpack-entries, 512 on 8.2: freeing it costs one
# unit per field, above the server's lazy-free threshold of 64, so UNLINK hands it to a background
# thread) and some lists of LIST_ITEMS 16-byte items (a quicklist of a few nodes, and a list costs
# one unit per node: below the threshold, freed at once by UNLINK too).
BIG_EVERY = 100  # one doomed key in 100 is a hash, one in 100 a list
BIG_FIELDS = 1_000
LIST_ITEMS = 1_000
EXPIRE_S = 1
RECLAIM_LIMIT_S = 60.0


def doomed_key(i: int) -> str:
    return f"{DOOMED}{i}"


def populate(r: redis.Redis, n_doomed: int, n_kept: int, batch: int = 10_000) -> None:
    """The keyspace each job starts from: n_doomed keys under the pattern, n_kept beside them."""
    fields = {f"f{j}": "x" * 16 for j in range(BIG_FIELDS)}
    items = ["i" * 16] * LIST_ITEMS
    for start in range(0, max(n_doomed, n_kept), batch):
        pipe = r.pipeline(transaction=False)
        strings = {}
        for i in range(start, min(start + batch, n_doomed)):
            if i % BIG_EVERY == 0:
                pipe.hset(doomed_key(i), mapping=fields)
            elif i % BIG_EVERY == 1:
                pipe.rpush(doomed_key(i), *items)
            else:
                strings[doomed_key(i)] = "d" * 32
        strings.update({f"{KEPT}{i}": "k" * 32 for i in range(start, min(start + batch, n_kept))})
        if strings:
            pipe.mset(strings)
        pipe.execute()


def expired_keys(r: redis.Redis) -> int:
    return int(r.info("stats")["expired_keys"])


def wait_reclaimed(r: redis.Redis, before: int, n: int, limit_s: float = RECLAIM_LIMIT_S) -> float:
    """Seconds until the server counted n more expired keys (INFO stats expired_keys)."""
    start = time.perf_counter()
    while expired_keys(r) - before < n:
        if time.perf_counter() - start > limit_s:
            raise LabError(f"the server had not expired {n:,} keys within {limit_s:.0f} s")
        time.sleep(0.01)
    return time.perf_counter() - start


def delete_means(
    r: redis.Redis, scan_counts, scan_pipelined, scan_variadic, lua_delete, scan_expire
) -> dict[str, Callable[[], int]]:
    """{label: the job}, each a call of one of the notebook's functions."""
    small, large = scan_counts
    return {
        f"SCAN {small} + pipelined UNLINK": lambda: scan_pipelined(r, small, "UNLINK"),
        f"SCAN {large} + pipelined UNLINK": lambda: scan_pipelined(r, large, "UNLINK"),
        f"SCAN {small} + pipelined DEL": lambda: scan_pipelined(r, small, "DEL"),
        f"SCAN {large} + pipelined DEL": lambda: scan_pipelined(r, large, "DEL"),
        f"SCAN {large} + one UNLINK per page": lambda: scan_variadic(r, large),
        f"Lua: SCAN {large} + UNLINK, one EVAL": lambda: lua_delete(r, large),
        f"SCAN {large} + pipelined EXPIRE {EXPIRE_S} s": lambda: scan_expire(r, large, EXPIRE_S),
    }


@dataclass
class DeleteRun:
    n_doomed: int
    n_kept: int
    measurements: dict[str, Measurement] = field(default_factory=dict)
    watches: dict[str, dict] = field(default_factory=dict)  # label: the last round's Watch result
    reclaim_s: dict[str, float] = field(default_factory=dict)  # EXPIRE: job end to the last key expired
    kept: dict[str, int] = field(default_factory=dict)  # label: kept keys counted after the job


def is_expire(label: str) -> bool:
    return "EXPIRE" in label


def measure_delete(
    endpoint: Endpoint,
    n_doomed: int,
    n_kept: int,
    scan_counts,
    repeat: int,
    scan_pipelined,
    scan_variadic,
    lua_delete,
    scan_expire,
) -> DeleteRun:
    """Each means in turn, round after round, on a keyspace populated afresh (untimed) before it;
    timed inside a Watch. After each: every doomed key gone, every kept key still there (checked).
    The means are the notebook's `scan_pipelined(r, count, command)`, `scan_variadic(r, count)`,
    `lua_delete(r, count)` and `scan_expire(r, count, seconds)`."""
    run = DeleteRun(n_doomed, n_kept)
    with endpoint.client() as r:
        means = delete_means(r, scan_counts, scan_pipelined, scan_variadic, lua_delete, scan_expire)
        group = " / ".join(means)
        run.measurements = {
            label: Measurement(label, n_doomed, paired_with=group, params={"means": label}) for label in means
        }
        with settled_heap():
            for _ in range(repeat):
                for label, job in means.items():
                    delete_lab_keys(r, PREFIX + "*")
                    populate(r, n_doomed, n_kept)
                    before = expired_keys(r)
                    with Watch(endpoint) as watch:
                        run.measurements[label].samples.append(timed(job))
                        if is_expire(label):
                            run.reclaim_s[label] = wait_reclaimed(r, before, n_doomed)
                    run.watches[label] = watch.result
                    run.kept[label] = _check(r, label, n_doomed, n_kept)
                    m = run.measurements[label]
                    for key in ("probe_worst_ms", "probe_p99_ms", "lazyfree_peak", "lazyfreed"):
                        m.params.setdefault(key, []).append(watch.result[key])
        delete_lab_keys(r, PREFIX + "*")
    for m in run.measurements.values():
        m.stopped = stop_reason(m.samples, "asked")
    return run


def _check(r: redis.Redis, label: str, n_doomed: int, n_kept: int) -> int:
    """The job's promise: nothing left under the pattern, every kept key untouched (and unexpired)."""
    left, kept = count_keys(r, PATTERN), count_keys(r, KEPT + "*")
    ttls = {r.ttl(f"{KEPT}{i}") for i in range(0, n_kept, max(n_kept // 100, 1))}
    if left or kept != n_kept or ttls != {-1}:
        raise LabError(f"{label}: {left:,} of {n_doomed:,} doomed keys left, {kept:,} of {n_kept:,} kept keys")
    return kept


def delete_table(run: DeleteRun) -> str:
    rows = []
    for label, m in run.measurements.items():
        w = run.watches[label]
        reclaim = run.reclaim_s.get(label)
        rows.append(
            [
                label,
                f"{m.median:.3f} s" + (f" (+{reclaim:.2f} s to expire)" if reclaim is not None else ""),
                f"{w['probe_p99_ms']:.2f} ms",
                f"{w['probe_worst_ms']:.1f} ms",
                f"{w['lazyfreed']:,} (peak backlog {w['lazyfree_peak']:,})",
                f"{run.kept[label]:,} of {run.n_kept:,}",
            ]
        )
    return md_table(
        ["Means", "Time", "Probe p99", "Probe worst", "Freed in the background", "Kept keys untouched"], rows
    )


def _tag(label: str) -> str:
    """Short summary keys: scan100_unlink, scan1000_del, variadic, lua, expire."""
    if label.startswith("Lua"):
        return "lua"
    if is_expire(label):
        return "expire"
    if "per page" in label:
        return "variadic"
    count = label.split()[1]
    return f"scan{count}_{label.split()[-1].lower()}"


def delete_summary(run: DeleteRun) -> dict:
    out = {
        "n_doomed": quantity(run.n_doomed, "count"),
        "n_kept": quantity(run.n_kept, "count"),
        "kept_min": quantity(min(run.kept.values()), "count"),
        "big_keys": quantity(len(range(0, run.n_doomed, BIG_EVERY)), "count"),
        "big_fields": quantity(BIG_FIELDS, "count"),
        "list_items": quantity(LIST_ITEMS, "count"),
        "big_every": quantity(BIG_EVERY, "count"),
    }
    for label, m in run.measurements.items():
        tag, w = _tag(label), run.watches[label]
        out[f"{tag}_s"] = quantity(m.median, "s")
        out[f"{tag}_p99_ms"] = quantity(w["probe_p99_ms"], "ms")
        out[f"{tag}_worst_ms"] = quantity(w["probe_worst_ms"], "ms")
        out[f"{tag}_lazyfree_peak"] = quantity(w["lazyfree_peak"], "count")
        out[f"{tag}_lazyfreed"] = quantity(w["lazyfreed"], "count")
    out["expire_reclaim_s"] = quantity(next(iter(run.reclaim_s.values()), None), "s")
    lua, scan = _by_tag(run, "lua"), _by_tag(run, "scan1000_unlink")
    out["lua_vs_scan_worst"] = quantity(
        run.watches[lua.label]["probe_worst_ms"] / max(run.watches[scan.label]["probe_worst_ms"], 1e-6), "x"
    )
    out["lua_vs_scan_time"] = ratio_figure(lua, scan)
    return out


def _by_tag(run: DeleteRun, tag: str) -> Measurement:
    return next(m for label, m in run.measurements.items() if _tag(label) == tag)


def watches_to_save(run: DeleteRun) -> dict:
    """The memory timelines, for the plot (params of the saved results)."""
    return {label: w["timeline"] for label, w in run.watches.items()}


@plots.draws("ch09/delete")
def delete_plot(doc: dict) -> Figure:
    timelines = doc["params"]["timelines"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, points in timelines.items():
        if points:
            ax.plot([p[0] for p in points], [p[1] / 2**20 for p in points], label=label, linewidth=1.2)
    ax.set_xlabel("seconds since the job began")
    ax.set_ylabel("used_memory (MiB)")
    ax.set_title("Server memory while each means deletes the pattern's keys")
    ax.legend(fontsize=8)
    return fig


DELETE_ALT = (
    "Line chart: the server's used_memory over time while each means deletes the pattern's keys; every "
    "line falls from the populated keyspace to the kept keys, EXPIRE's only after its keys expire"
)
