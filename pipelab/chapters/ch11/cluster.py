"""Section 3: the cluster pipeline on chapter 5's three masters, redis-rs's and fred's: how one pipeline
splits over the masters (each master's INFO, around one untimed pipeline) and what one by one costs
beside it; what the caller gets when one command fails, plain and with redis-rs's `ignore_errors()` or
fred's `try_all()`; and, through chapter 5's harness, what it gets when a master dies mid-pipeline."""

from __future__ import annotations

from ...cluster_faults import pid_of
from ...jbang import JavaRun
from ...params import Size
from ...results import md_table, quantity, rate_figure, ratio_figure, with_interval
from ..ch05 import PREFIX as CH05_PREFIX
from ..ch05.clients import cell
from ..ch05.lost import N_LOST, lose_master
from ..ch10.parameters import REPEAT, WARMUP
from .runs import run, rust_note

N_SPLIT = Size(full=3_000, quick=300)  # SETs over the three masters, per sample
CLIENTS = {"redis-rs": "redisrs", "fred": "fred"}  # as the chapter names them, and as the example does
# The failing-command cases: (the example's fact prefix, the client, how the pipeline was sent).
ERROR_CASES = (
    ("rs_plain", "redis-rs", "`query_async`, keys on three masters"),
    ("rs_ignore", "redis-rs", "`.ignore_errors()`, keys on three masters"),
    ("rs_plain_oneslot", "redis-rs", "`query_async`, keys in one slot"),
    ("rs_ignore_oneslot", "redis-rs", "`.ignore_errors()`, keys in one slot"),
    ("rs_atomic", "redis-rs", "`.atomic()`, keys in one slot"),
    ("fred_all", "fred", "`all()`, keys on three masters"),
    ("fred_tryall", "fred", "`try_all()`, keys on three masters"),
)
GOOD_COMMANDS = 3  # of the four in the failing pipeline
# The split scenario's timed modes, as the table names them.
SPLIT_MODES = {
    ("redis-rs", "one_by_one"): "one by one",
    ("redis-rs", "pipeline"): "a `pipe()` per master, split by hand",
    ("fred", "pipeline"): "one `pipeline()`",
}


def measure_rust_cluster(lab, cluster) -> dict:
    """{"split": the split scenario's run, "errors": the failing command's}, each None without Rust."""
    if rust_note(lab):
        return {"split": None, "errors": None}
    seed = cluster.nodes[0]
    n = lab.size(N_SPLIT)
    return {
        "split": run(lab, "cluster", seed, "split", n, lab.size(REPEAT), lab.size(WARMUP), cluster=seed),
        "errors": run(lab, "cluster", seed, "errors", cluster=seed),
    }


def split_table(split: JavaRun) -> str:
    """What one pipeline over the three masters did: what each client's call returned and, per master,
    the SETs it ran and the reads it took; then the timed modes, redis-rs's split by hand among them."""
    f = split.facts
    masters = range(int(f.get("masters", 0)))
    rows = [
        [
            client,
            cell(f.get(f"{c}_pipeline_outcome", "–")),
            *(f"{f.get(f'{c}_node{i}_commands', '–')} / {f.get(f'{c}_node{i}_reads', '–')}" for i in masters),
        ]
        for c, client in (("rs", "redis-rs, one `pipe()`"), ("fred", "fred, one `pipeline()`"))
    ]
    timed = [
        [
            m.params.get("client", ""),
            SPLIT_MODES.get((m.params.get("client"), m.params.get("mode")), m.params.get("mode", "")),
            f"{m.ops:,}",
            f"{m.params.get('reads', '–'):,}" if isinstance(m.params.get("reads"), int) else "–",
            f"{m.median * 1e3:,.1f} ms",
            with_interval(rate_figure(m)),
        ]
        for m in split.measurements().values()
    ]
    header = ["Client", "What the call returned", *(f"master {i + 1}: SETs / reads" for i in masters)]
    return "\n\n".join(
        (
            md_table(header, rows),
            md_table(["Client", "Mode", "SETs", "Server reads", "Time (median)", "ops/s (95% interval)"], timed),
        )
    )


def split_summary(split: JavaRun | None) -> dict:
    """Per client and master `<rs|fred>_node<i>_commands` and `_reads`, the masters, the pipeline's
    speed-up over one by one (`rs_split_speedup`), whether replies kept the commands' order, and what a
    cross-slot `.atomic()` did."""
    if split is None:
        return {}
    f, out = split.facts, {"masters": quantity(split.facts.get("masters"), "count")}
    for name, value in f.items():
        if name.endswith(("_commands", "_reads", "_multis")):
            out[name] = quantity(value, "count")
        elif name.endswith(("_order_kept", "_outcome")):  # None: nothing came back to compare
            out[name] = quantity(0, "count", "–" if value is None else str(value))
    ms = {m.params.get("mode"): m for m in split.measurements().values() if m.params.get("client") == "redis-rs"}
    if "one_by_one" in ms and "pipeline" in ms:
        one, piped = ms["one_by_one"], ms["pipeline"]
        out["rs_split_speedup"] = ratio_figure(one, piped, piped.ops / one.ops)
    for m in split.measurements().values():
        out[f"{CLIENTS.get(m.params.get('client'), 'x')}_{m.params.get('mode')}_ops"] = rate_figure(m)
    out["n"] = quantity(split.data.get("size"), "count")
    return out


def errors_table(errors: JavaRun) -> str:
    f = errors.facts
    rows = []
    for key, client, how in ERROR_CASES:
        if f"{key}_outcome" not in f and f"{key}_replies_ok" not in f:
            continue
        ok, failed = f.get(f"{key}_replies_ok"), f.get(f"{key}_replies_failed")
        rows.append(
            [
                client,
                how,
                cell(f.get(f"{key}_outcome", "ok")),
                "–" if ok is None else f"{ok} / {failed}",
                f"{f.get(f'{key}_ran', '–')} of {GOOD_COMMANDS}",
                f.get(f"{key}_server_errors", "–"),
            ]
        )
    header = ["Client", "Sent with", "What the caller got", "Replies ok / failed", "Good commands that ran",
              "Error replies the masters sent"]  # fmt: skip
    return md_table(header, rows)


def errors_summary(errors: JavaRun | None) -> dict:
    """Each case's facts as figures, `<case>_<fact>`: texts for what the caller got, counts for the rest."""
    if errors is None:
        return {}
    out = {"good_commands": quantity(GOOD_COMMANDS, "count")}
    for name, value in errors.facts.items():
        if isinstance(value, bool | str):
            out[name] = quantity(0, "count", str(value))
        elif isinstance(value, int | float):
            out[name] = quantity(value, "count")
    return out


def lost_rows(lab, cluster) -> dict:
    """Chapter 5's lost master (its pause, kill, wait and restart) with redis-rs and fred."""

    def case(name):
        def rust_case(victim, keys, wait_ms):
            got = run(
                lab,
                "cluster",
                cluster.nodes[0],
                "lost",
                CLIENTS[name],
                victim.port,
                pid_of(cluster, victim),
                len(keys),
                wait_ms,
                cluster=cluster.nodes[0],
            )
            return rust_note(lab) if got is None else dict(got.facts)

        return rust_case

    return lose_master(lab, cluster, CH05_PREFIX, lab.size(N_LOST), {name: case(name) for name in CLIENTS})
