"""Section 1: explicit pipelines in each language, chapter 1's PINGs and chapter 3's SADD job, with what
the server read per command. redis-py is measured here, Jedis through chapter 1's and chapter 3's examples,
Node and Go through their examples (node.py, go.py)."""

from __future__ import annotations

from ... import observe, taught
from ...measure import Measurement
from ...results import md_table, quantity, rate_figure, ratio_figure, with_interval
from ..ch01 import delete_keys
from .common import LANGUAGES, PREFIX, as_runs, language, slug
from .parameters import N_EXPLICIT, REPEAT, WARMUP

WORKLOADS = {"ping": "PING", "sadd": "SADD"}
JEDIS_ALIASES = {"ping": "ch01-ping", "sadd": "ch03-jedis"}
# Jedis's modes in those examples, and the chapter's names for them.
JEDIS_MODES = {
    "ping": {"jedis_one_by_one": "one_by_one", "jedis_pipelined": "pipeline"},
    "sadd": {"one_by_one": "one_by_one", "pipeline": "pipeline", "transaction": "transaction"},
}


def counted(endpoint, run) -> dict:
    """The commands the server ran and the reads it made for one untimed call of `run`."""
    counters = observe.Counters(endpoint)
    try:
        with counters.measure() as delta:
            run()
    finally:
        counters.close()
    return {
        "commands": round(delta.values["total_commands_processed"]),
        "reads": round(delta.values["total_reads_processed"]),
    }


def measure_redispy_explicit(lab, n: int | None = None, repeat: int | None = None) -> list[Measurement]:
    """redis-py's PINGs and SADDs one by one and as one pipeline, taking turns round by round; the
    server's commands and reads per call are counted on a call of their own, untimed."""
    n, repeat = n or lab.size(N_EXPLICIT), repeat or lab.size(REPEAT)
    r = lab.client()
    ch01 = taught.load("01-round-trip-time")  # chapter 1's loops, as its notebook runs them
    keys = ch01.sadd_keys(n, prefix=PREFIX + "py:sadd:")
    jobs = {
        "ping": {"one_by_one": lambda: ch01.ping_one_by_one(r, n), "pipeline": lambda: ch01.ping_pipelined(r, n)},
        "sadd": {"one_by_one": lambda: ch01.sadd_one_by_one(r, keys), "pipeline": lambda: ch01.sadd_pipelined(r, keys)},
    }
    out = []
    try:
        for workload, modes in jobs.items():

            def reset(workload=workload):
                if workload == "sadd":  # every SADD adds its member to an empty key
                    delete_keys(r, keys)

            seen = {}
            for mode, run in modes.items():
                reset()
                seen[mode] = counted(lab.endpoint, run)
            runs = lab.measure_interleaved(
                {f"redis-py {workload} {mode}": run for mode, run in modes.items()},
                ops=n,
                repeat=repeat,
                warmup=lab.size(WARMUP),
                setup=reset,
            )
            for mode, m in zip(modes, runs):
                m.params.update(client="redis-py", mode=mode, workload=workload, **seen[mode])
                out.append(m)
        delete_keys(r, keys)
    finally:
        r.close()
    return out


def measure_jedis_explicit(lab, n: int | None = None, repeat: int | None = None) -> list[Measurement]:
    """Jedis through chapter 1's PING example and chapter 3's SADD example, at this chapter's sizes.
    They report the commands the server ran (INFO commandstats), not its reads."""
    n, repeat = n or lab.size(N_EXPLICIT), repeat or lab.size(REPEAT)
    out = []
    for workload, alias in JEDIS_ALIASES.items():
        run = lab.java(alias, n, repeat, lab.size(WARMUP))
        ms = run.measurements()
        for their, mode in JEDIS_MODES[workload].items():
            m = ms[their]
            wire = run.wire.get(their, {})
            command = WORKLOADS[workload]
            commands = wire.get(command) or wire.get(command.lower())
            m.label = f"Jedis {workload} {mode}"
            m.params.update(client="Jedis", mode=mode, workload=workload, reads=None, commands=commands)
            out.append(m)
    return out


def explicit_measurements(*runs) -> list[Measurement]:
    """Every explicit-pipeline measurement of the chapter in one list: lists of Measurements (redis-py,
    Jedis) and the Node and Go examples' runs (None when the toolchain is missing), labelled alike."""
    out = []
    for run in runs:
        for m in as_runs(run):
            p = m.params
            m.label = f"{p['client']} {p['workload']} {p['mode']}"
            out.append(m)
    return out


def baseline(mode: str) -> bool:
    """The one-by-one mode every client has: each command awaited before the next is sent."""
    return "one_by_one" in slug(mode)


def reads_per_command(m: Measurement) -> float | None:
    reads, commands = m.params.get("reads"), m.params.get("commands")
    return commands / reads if reads and commands else None


def explicit_table(ms: list[Measurement]) -> str:
    rows = []
    for m in sorted(ms, key=lambda m: (list(LANGUAGES).index(language(m.params["client"])), m.params["workload"])):
        p, rate = m.params, rate_figure(m)
        per_read = reads_per_command(m)
        rows.append(
            [
                language(p["client"]),
                p["client"],
                p["mode"],
                WORKLOADS.get(p["workload"], p["workload"]),
                f"{m.ops:,}",
                f"{m.median * 1e3:,.1f} ms",
                with_interval(rate),
                f"{per_read:,.1f}" if per_read else "–",
            ]
        )
    return md_table(
        ["Language", "Client", "Mode", "Workload", "Commands", "Time (median)", "ops/s (95% interval)",
         "Commands per server read"],
        rows,
    )  # fmt: skip


def explicit_summary(ms: list[Measurement]) -> dict:
    """Per client and workload: each mode's ops/s and commands per read, and the fastest explicit
    pipeline's speed-up over one by one (`<client>_<workload>_speedup`); per language the smallest of
    its clients' speed-ups (`<language>_<workload>_speedup_min`), for the claim that pipelines win in all."""
    out = {"n": quantity(ms[0].ops if ms else 0, "count")}
    groups: dict[tuple[str, str], list[Measurement]] = {}
    for m in ms:
        groups.setdefault((m.params["client"], m.params["workload"]), []).append(m)
    worst: dict[str, dict] = {}
    for (client, workload), group in groups.items():
        key = f"{slug(client)}_{workload}"
        for m in group:
            out[f"{key}_{slug(m.params['mode'])}_ops"] = rate_figure(m)
            per_read = reads_per_command(m)
            if per_read:
                out[f"{key}_{slug(m.params['mode'])}_cmds_per_read"] = quantity(per_read, "num")
        one = [m for m in group if baseline(m.params["mode"])]
        piped = [m for m in group if not baseline(m.params["mode"])]
        if not one or not piped:
            continue
        best = min(piped, key=lambda m: m.median / m.ops)
        speedup = ratio_figure(one[0], best, best.ops / one[0].ops)
        out[f"{key}_speedup"] = speedup
        out[f"{key}_best"] = quantity(0, "count", best.params["mode"])
        lang_key = f"{slug(language(client))}_{workload}_speedup_min"
        if lang_key not in worst or speedup["value"] < worst[lang_key]["value"]:
            worst[lang_key] = speedup
    return out | worst
