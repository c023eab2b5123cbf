"""Section 5: WATCH under contention, in redis-py and (ch07-watch) Jedis.
The three read-modify-writes are the notebook's cell tagged code:watch, passed in by the notebook."""

from __future__ import annotations

import statistics
import threading
import time

from ...measure import Measurement
from ...params import Size
from ...results import md_table, quantity, rate_figure
from ...server import Endpoint
from .common import PREFIX

WRITERS = [1, 2, 4, 8]
INCREMENTS = Size(full=100, quick=50)  # per writer


# The modes, in the order the table and the results keep them.
MODES = ("WATCH, transaction()", "no WATCH", "WATCH, aborted EXEC sent again")


def contend(endpoint: Endpoint, increment, writers: int, increments: int) -> dict:
    """`writers` threads, each with its own connection, each adding 1 to one counter `increments`
    times; what the counter ends at, how many tries it took, how long."""
    key = f"{PREFIX}watch:counter"
    with endpoint.client() as admin:
        admin.delete(key)
    tries = [[0] for _ in range(writers)]
    barrier = threading.Barrier(writers + 1)

    def writer(i):
        with endpoint.client() as r:
            r.ping()
            barrier.wait()
            for _ in range(increments):
                increment(r, key, tries[i])

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    with endpoint.client() as admin:
        final = int(admin.get(key) or 0)
        admin.delete(key)
    done = writers * increments
    return {
        "writers": writers,
        "increments": done,
        "final": final,
        "lost": done - final,
        "tries": sum(t[0] for t in tries),
        "seconds": elapsed,
    }


def measure_watch(
    endpoint: Endpoint, writers: list[int], increments: int, repeat: int, watched, blind, stale_retry
) -> dict:
    """{(mode, writers): Measurement} of the increments' time, each repetition's contend() row in params:
    the notebook's three `increment(r, key, tries)` functions, in MODES' order."""
    out = {}
    for mode, increment in zip(MODES, (watched, blind, stale_retry)):
        for w in writers:
            rows = [contend(endpoint, increment, w, increments) for _ in range(repeat + 1)]
            out[(mode, w)] = Measurement(
                f"{mode}, {w} writer{'s' if w > 1 else ''}",
                w * increments,
                [row["seconds"] for row in rows[1:]],
                {"mode": mode, "writers": w, "rows": rows[1:]},
                [rows[0]["seconds"]],
            )
    return out


def retries_per_increment(m: Measurement) -> float:
    return statistics.median((row["tries"] - row["increments"]) / row["increments"] for row in m.params["rows"])


def lost(m: Measurement) -> int:
    return int(statistics.median(row["lost"] for row in m.params["rows"]))


def watch_table(runs: dict) -> str:
    rows = [
        [mode, w, f"{m.ops_per_s:,.0f}", f"{retries_per_increment(m):.2f}", f"{lost(m):,} of {m.ops:,}"]
        for (mode, w), m in runs.items()
    ]
    return md_table(["redis-py", "Writers", "Increments/s", "Extra tries per increment", "Increments lost"], rows)


def watch_summary(runs: dict, increments: int) -> dict:
    out = {"increments": quantity(increments, "count")}
    for (mode, w), m in runs.items():
        tag = {"WATCH, transaction()": "watch", "no WATCH": "blind", "WATCH, aborted EXEC sent again": "stale"}[mode]
        out[f"{tag}_w{w}_ops"] = rate_figure(m)
        out[f"{tag}_w{w}_retries"] = quantity(retries_per_increment(m), "num", f"{retries_per_increment(m):.2f}")
        out[f"{tag}_w{w}_lost"] = quantity(lost(m), "count", f"{lost(m):,} of {m.ops:,}")
    return out


def measure_watch_java(lab, increments: int, repeat: int):
    return lab.java("ch07-watch", increments, repeat, 1, ",".join(map(str, WRITERS)))


def watch_java_table(run) -> str:
    f, ms = run.facts, run.measurements()
    rows = [
        [
            w,
            f"{ms[f'watch_w{w}'].ops_per_s:,.0f}",
            f"{f[f'jedis_w{w}_aborts_per_increment']:.2f}",
            f"{f[f'blind_w{w}_lost']:,} of {ms[f'watch_w{w}'].ops:,}",
        ]
        for w in WRITERS
    ]
    return md_table(
        ["Writers (Jedis)", "WATCH loop, increments/s", "Aborted EXECs per increment", "no WATCH: increments lost"],
        rows,
    )


def watch_java_summary(run) -> dict:
    f, ms = run.facts, run.measurements()
    out = {
        "exec_on_abort": quantity(0, "count", str(f["jedis_exec_on_abort"])),
        "reads_per_attempt": quantity(
            f[f"jedis_w{WRITERS[-1]}_reads_per_attempt"], "num", f"{f[f'jedis_w{WRITERS[-1]}_reads_per_attempt']:.1f}"
        ),
    }
    for w in WRITERS:
        out[f"w{w}_ops"] = rate_figure(ms[f"watch_w{w}"])
        out[f"w{w}_aborts"] = quantity(
            f[f"jedis_w{w}_aborts_per_increment"], "num", f"{f[f'jedis_w{w}_aborts_per_increment']:.2f}"
        )
        out[f"w{w}_lost"] = quantity(f[f"blind_w{w}_lost"], "count")
    return out
