"""EVALSHA in a cluster pipeline after one master lost its script cache (as after a failover, or on a
new shard). The script is loaded on every master, then SCRIPT FLUSH empties one; each client runs its
own script API in a pipeline across the three masters. What the caller got, and what the masters
counted: EVALSHA that ran, NOSCRIPT replies, EVAL and SCRIPT LOAD. The redis-py and GLIDE code is the
notebook's cell tagged code:scripts, passed in by the notebook."""

from __future__ import annotations

from glide import Logger, LogLevel

from ...cluster_faults import refuse, script_flushed
from ...params import Size
from ...results import md_table, quantity
from ..ch07.common import LoopThread
from ..ch07.glide import glide_cluster_client
from .clients import caller_view, case_summary, cell, command_counts, counted, run_elsewhere, timed, totals

SCRIPT = "return redis.call('INCR', KEYS[1])"
N_SCRIPT = Size(full=300, quick=60)
COMMANDS = ("evalsha", "eval", "script|load")
OTHERS = ("Jedis", "Lettuce", "go-redis", "rueidis", "ioredis", "node-redis")


def script_keys(prefix: str, n: int) -> list[str]:
    return [f"{prefix}script:{i}" for i in range(n)]


def script_runs(lab, cluster, prefix: str, n: int, incr_by_script, glide_incr_by_script) -> dict:
    """{client: what its caller saw, plus what the masters counted}; {"skipped": sentence} on a cluster
    the lab did not start (emptying a script cache there is not the lab's to do)."""
    if why := refuse(cluster, "Emptying a master's script cache"):
        return {"skipped": why}
    keys = script_keys(prefix, n)
    rows = {}

    def redispy():
        rc = cluster.client()
        replies, error, seconds = timed(lambda: incr_by_script(rc, keys, SCRIPT))
        rc.close()
        return caller_view(error, list(replies or []), seconds)

    def glide(how):
        Logger.set_logger_config(LogLevel.ERROR)  # the core warns of each NOSCRIPT; the table counts them
        try:
            with LoopThread() as loop:
                client = loop.run(glide_cluster_client(cluster))
                replies, error, seconds = timed(lambda: loop.run(glide_incr_by_script(client, keys, SCRIPT, how)))
                loop.run(client.close())
        finally:
            Logger.set_logger_config(LogLevel.WARN)
        return caller_view(error, list(replies or []), seconds)

    cases = {
        "redis-py": redispy,
        "GLIDE, Batch of EVALSHA": lambda: glide("batch"),
        "GLIDE, invoke_script": lambda: glide("invoke"),
    } | {name: (lambda name=name: run_elsewhere(lab, cluster.nodes[0], name, "scripts", n, SCRIPT)) for name in OTHERS}
    for name, case in cases.items():
        with script_flushed(cluster, SCRIPT) as (_sha, flushed):
            before = command_counts(cluster.nodes, COMMANDS, ("NOSCRIPT",))
            facts = case()
            delta = counted(before, command_counts(cluster.nodes, COMMANDS, ("NOSCRIPT",)))
        if isinstance(facts, str):
            rows[name] = {"skipped": facts}
            continue
        all_masters, on_flushed = totals(delta), delta[flushed.port]
        rows[name] = facts | {
            "evalsha_ran": all_masters["evalsha"] - all_masters["evalsha_failed"],
            "noscript": all_masters["NOSCRIPT"],
            "eval": all_masters["eval"],
            "script_load": all_masters["script|load"],
            "flushed_evalsha": on_flushed["evalsha"],
        }
        cluster.delete_lab_keys()
    return rows


def scripts_table(rows: dict, n: int) -> str:
    header = ["client", "what the caller got", "ok / failed", "EVALSHA ran", "NOSCRIPT", "EVAL", "SCRIPT LOAD"]
    body = []
    for name, x in rows.items():
        if "skipped" in x:
            body.append([name, x["skipped"], "", "", "", "", ""])
            continue
        got = x["outcome"] if x["outcome"] != "ok" else "ok" + (f"; {x['errors']}" if x.get("errors") else "")
        body.append(
            [
                name,
                cell(got),
                f"{x.get('replies_ok', '–')} / {x.get('replies_failed', '–')}",
                x["evalsha_ran"],
                x["noscript"],
                x["eval"],
                x["script_load"],
            ]
        )
    return md_table(header, body) + f"\n\n{n:,} script calls per client."


def scripts_summary(rows: dict, n: int) -> dict:
    out = {"n": quantity(n, "count")}
    for name, x in rows.items():
        slug = name.split(",")[0].lower().replace("-", "").replace(" ", "_")
        slug += "_invoke" if "invoke" in name else "_batch" if "Batch" in name else ""
        out |= case_summary(slug, x, ("replies_ok", "replies_failed", "evalsha_ran", "noscript", "eval", "script_load"))
    return out
