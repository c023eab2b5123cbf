"""A master lost in the middle of a pipeline. For each client: one pipeline of SETs whose keys span the
three masters; the last master holds the writes that reach it unrun (CLIENT PAUSE WRITE) and is killed
(SIGKILL) 200 ms after the pipeline starts. What the caller got, how long it waited, and how many SETs
the two survivors ran; then the master starts again from its nodes.conf. The redis-py pipeline is the
notebook's cell tagged code:lost, passed in by the notebook."""

from __future__ import annotations

import os
import signal
import threading
import time

from redis.cluster import key_slot

from ...cluster_faults import alive, pause_writes, pid_of, refuse, restart, unpause
from ...params import Size
from ...results import md_table, quantity
from .clients import caller_view, case_summary, cell, command_counts, counted, totals

N_LOST = Size(full=3_000, quick=300)
KILL_AFTER_S = 0.2
WAIT_MS = Size(full=8_000, quick=4_000)  # the longest a caller is waited for; past it the row says so
OTHERS = ("go-redis", "rueidis", "ioredis", "node-redis", "Jedis", "Lettuce")


def lost_keys(prefix: str, n: int) -> list[str]:
    return [f"{prefix}lost:{i}" for i in range(n)]


def _redispy_case(cluster, victim, keys, set_all, wait_ms: int) -> dict:
    rc = cluster.client()
    rc.ping(target_nodes=rc.ALL_NODES)  # connected to every master before the pipeline
    seen: dict = {}

    def work():
        start = time.perf_counter()
        try:
            seen["replies"], seen["error"] = list(set_all(rc, keys)), None
        except Exception as err:  # what the caller gets is the finding
            seen["replies"], seen["error"] = [], err
        seen["s"] = time.perf_counter() - start

    started = time.perf_counter()
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    time.sleep(KILL_AFTER_S)
    os.kill(pid_of(cluster, victim), signal.SIGKILL)
    thread.join(wait_ms / 1e3)
    if thread.is_alive():  # still waiting: the thread is left to end on its own
        return {"outcome": f"still waiting after {wait_ms} ms", "waited_ms": wait_ms, "client": "redis-py"}
    view = caller_view(seen["error"], seen["replies"], seen.get("s", time.perf_counter() - started))
    rc.close()
    return view | {"client": "redis-py"}


def lost_runs(lab, cluster, prefix: str, n: int, set_all) -> dict:
    """{client: what its caller saw, plus the SETs the survivors ran and the share they serve}; or
    {"skipped": sentence} on a cluster the lab did not start: redis-py in this process (the notebook's
    `set_all`), the others in their examples' processes."""
    from .clients import run_elsewhere  # noqa: PLC0415  (here: chapter 11 takes lose_master without Go and Node)

    def redis_py(victim, keys, wait_ms):
        return _redispy_case(cluster, victim, keys, set_all, wait_ms)

    def elsewhere(name):
        def case(victim, keys, wait_ms):
            return run_elsewhere(
                lab, cluster.nodes[0], name, "lost", victim.port, pid_of(cluster, victim), len(keys), wait_ms
            )

        return case

    return lose_master(lab, cluster, prefix, n, {"redis-py": redis_py} | {name: elsewhere(name) for name in OTHERS})


def lose_master(lab, cluster, prefix: str, n: int, cases: dict) -> dict:
    """Each of `cases` ({client: case(victim, keys, wait_ms)}, which kills the victim master mid-pipeline
    and gives its facts, or a sentence when its toolchain is missing) with the last master paused and
    started again after; as lost_runs. Chapter 11 passes its Rust clients."""
    if why := refuse(cluster, "Losing a master"):
        return {"skipped": why}
    victim, wait_ms = cluster.nodes[-1], lab.size(WAIT_MS)
    survivors = cluster.nodes[:-1]
    keys = lost_keys(prefix, n)
    owners = cluster.slot_owners()
    share = sum(1 for k in keys if owners[key_slot(k.encode())] != victim)
    rows = {}
    for name, case in cases.items():
        before = command_counts(survivors, ("set",))
        pause_writes(victim)
        facts = case(victim, keys, wait_ms)
        if isinstance(facts, str):  # the toolchain is missing; the master was not touched
            rows[name] = {"skipped": facts}
            unpause(victim)
            continue
        if alive(cluster, victim):
            os.kill(pid_of(cluster, victim), signal.SIGKILL)  # an example that failed before killing it
        ran = totals(counted(before, command_counts(survivors, ("set",))))["set"]
        restart_s = restart(cluster, victim)
        rows[name] = facts | {
            "survivors_ran": ran,
            "survivor_share": share,
            "restart_s": round(restart_s, 1),
            "wait_limit_ms": wait_ms,
        }
    cluster.delete_lab_keys()
    return rows


def pipeline_refusal(lab, cluster, n: int) -> dict:
    """ioredis's own pipeline() of the same n SETs over every master, nothing killed: what its caller
    got, and the SETs the masters ran for it; {"skipped": sentence} without Node."""
    from .clients import run_elsewhere  # noqa: PLC0415  (as in lost_runs)

    before = command_counts(cluster.nodes, ("set",))
    facts = run_elsewhere(lab, cluster.nodes[0], "ioredis", "pipeline", n)
    if isinstance(facts, str):
        return {"skipped": facts}
    ran = totals(counted(before, command_counts(cluster.nodes, ("set",))))["set"]
    cluster.delete_lab_keys()
    return facts | {"masters_ran": ran}


# node-redis's errors in the lost case: a written command's, and an unwritten one's (its command timeout)
SOCKET_CLOSED, TIMEOUT = "Socket closed unexpectedly", "TimeoutError"


def lost_details(rows: dict, refusal: dict) -> dict:
    """What the lost table leaves out: how node-redis failed its share (written commands with the socket,
    unwritten ones at its command timeout, and when), and ioredis's refused pipeline()."""
    out = case_summary("ioredis_pipeline", refusal, ("masters", "masters_ran")) if refusal else {}
    x = rows.get("node-redis", {})
    if "errors" in x:
        errors = x["errors"]
        unwritten, written = errors.get(TIMEOUT, 0), errors.get(SOCKET_CLOSED, 0)
        first, last = x.get("errors_ms", {}).get(TIMEOUT, [0, 0])
        when = f"rejected with {TIMEOUT} between {first:,} and {last:,} ms" if unwritten else "so none met the timeout"
        out |= {
            "noderedis_socket_failed": quantity(written, "count"),
            "noderedis_unwritten": quantity(unwritten, "count"),
            "noderedis_timeout_ms": quantity(last, "ms", when),
            "noderedis_other_failed": quantity(x.get("replies_failed", 0) - unwritten - written, "count"),
        }
    return out


def lost_table(rows: dict, n: int) -> str:
    header = [
        "client",
        "what the caller got",
        "ok / failed",
        "waited",
        f"SETs the survivors ran (their share of {n:,})",
    ]
    body = []
    for name, x in rows.items():
        if "skipped" in x:
            body.append([name, x["skipped"], "", "", ""])
            continue
        ok_failed = f"{x.get('replies_ok', '–')} / {x.get('replies_failed', '–')}"
        waited = f"{x.get('waited_ms', 0):,.0f} ms"
        body.append(
            [name, cell(x.get("outcome", "–")), ok_failed, waited, f"{x['survivors_ran']:,} ({x['survivor_share']:,})"]
        )
    return md_table(header, body)


def lost_summary(rows: dict, n: int) -> dict:
    limit = next((x["wait_limit_ms"] for x in rows.values() if "wait_limit_ms" in x), None)
    out = {"n": quantity(n, "count"), "kill_ms": quantity(KILL_AFTER_S * 1e3, "ms"), "wait_ms": quantity(limit, "ms")}
    for name, x in rows.items():
        slug = name.lower().replace("-", "")
        out |= case_summary(slug, x)
        if "skipped" in x:
            continue
        for what in ("ok", "failed"):  # a caller still waiting has no list yet: nothing to count
            got = x.get(f"replies_{what}")
            out[f"{slug}_{what}"] = quantity(got, "count") if got is not None else quantity(0, "count", "none yet")
        out[f"{slug}_waited_ms"] = quantity(x.get("waited_ms"), "ms")
        out[f"{slug}_survivors_ran"] = quantity(x["survivors_ran"], "count")
        out[f"{slug}_share"] = quantity(x["survivor_share"], "count")
    return out
