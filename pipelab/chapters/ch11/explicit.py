"""Section 1: redis-rs one by one, in `redis::pipe()` and in `redis::pipe().atomic()`, with chapter 1's
PINGs and chapter 3's SADD job, at chapter 10's sizes, beside redis-py and Jedis (chapter 10's runs of
them). The tables and figures are chapter 10's (explicit_table, explicit_summary). Then one long
`redis::pipe()` against redis-rs's default response timeout, at each RTT (measure_rust_timeout)."""

from __future__ import annotations

from ...jbang import JavaRun
from ...measure import Measurement
from ...params import Size
from ...results import md_table, quantity, ratio_figure
from ..ch05.clients import cell
from ..ch10.common import each_rtt
from ..ch10.explicit import explicit_summary as ch10_summary
from ..ch10.parameters import N_EXPLICIT, REPEAT, WARMUP
from .runs import run, rust_note

WORKLOADS = ("ping", "sadd")


def measure_rust_explicit(lab) -> JavaRun | None:
    """The explicit example: each workload's three modes take turns round by round."""
    return run(
        lab, "explicit", lab.endpoint, lab.size(N_EXPLICIT), lab.size(REPEAT), lab.size(WARMUP), ",".join(WORKLOADS)
    )


def explicit_summary(ms: list[Measurement]) -> dict:
    """Chapter 10's figures for these runs, and per workload what MULTI/EXEC costs redis-rs:
    `redis_rs_<workload>_atomic_cost`, the pipeline's ops/s ÷ the atomic pipeline's (paired by round)."""
    out = ch10_summary(ms)
    modes = {(m.params["workload"], m.params["mode"]): m for m in ms if m.params.get("client") == "redis-rs"}
    for workload in WORKLOADS:
        piped, atomic = modes.get((workload, "pipeline")), modes.get((workload, "atomic"))
        if piped and atomic:
            out[f"redis_rs_{workload}_atomic_cost"] = ratio_figure(atomic, piped, piped.ops / atomic.ops)
    return out


# A long pipeline against redis-rs's default response timeout (500 ms on MultiplexedConnection and
# ConnectionManager): growing sizes until one fails, stopping there. 2,000,000 runs only where 1,000,000
# passed (a fast machine); quick runs skip the small steps, which cannot fail.
TIMEOUT_SIZES = Size(
    full=(10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000),
    quick=(100_000, 1_000_000, 2_000_000),
)
LONG_TIMEOUT_MS = 30_000  # the response timeout the failing size is sent again with


def measure_rust_timeout(lab) -> dict[float, JavaRun]:
    """The timeout example at each RTT the lab can inject: {rtt: its run}; {} without Rust."""
    if rust_note(lab):
        return {}
    runs = {}
    for rtt, link in each_rtt(lab):
        got = run(lab, "timeout", link.endpoint, ",".join(map(str, lab.size(TIMEOUT_SIZES))), LONG_TIMEOUT_MS)
        if got is None:
            return {}
        runs[rtt] = got
    return runs


def timeout_table(runs: dict[float, JavaRun]) -> str:
    rows = []
    for rtt, got in runs.items():
        f = got.facts
        failed = f.get("first_failed") or 0
        rows.append(
            [
                f"{rtt:g} ms",
                f"{f.get('last_passed', 0):,}",
                f"{failed:,}" if failed else "none",
                cell(f.get(f"{failed}_outcome", "–")),
                f"{f.get(f'{failed}_ms', 0):,.0f} ms" if failed else "–",
                f"{f.get('manager_first_failed') or 0:,}",
                f"{cell(f.get('long_outcome', '–'))}, {f.get('long_ms', 0):,.0f} ms" if failed else "–",
                f"{f.get('server_ran', 0):,}" if failed else "–",
            ]
        )
    header = ["RTT", "Largest that passed", "First that failed", "What the caller got", "After",
              "ConnectionManager: first that failed", f"Timeout {LONG_TIMEOUT_MS:,} ms, same size",
              "SETs the server ran of the failed one"]  # fmt: skip
    return md_table(header, rows)


def timeout_summary(runs: dict[float, JavaRun]) -> dict:
    """Per RTT `r<rtt>_`: `first_failed` and `last_passed` (0: none), `manager_first_failed` (the
    ConnectionManager's, 0: none), `failed_ms` (the failing call's time), `error`, `long_ok` (1 or 0),
    `long_ms`, `server_ran`."""
    out = {"long_timeout_ms": quantity(LONG_TIMEOUT_MS, "ms")}
    for rtt, got in runs.items():
        f, key = got.facts, f"r{rtt:g}"
        failed = int(f.get("first_failed") or 0)
        out[f"{key}_first_failed"] = quantity(failed, "count")
        out[f"{key}_last_passed"] = quantity(int(f.get("last_passed") or 0), "count")
        out[f"{key}_manager_first_failed"] = quantity(int(f.get("manager_first_failed") or 0), "count")
        if not failed:
            continue
        out[f"{key}_failed_ms"] = quantity(f.get(f"{failed}_ms"), "ms")
        out[f"{key}_error"] = quantity(0, "count", str(f.get(f"{failed}_outcome")))
        out[f"{key}_long_ok"] = quantity(int(f.get("long_outcome") == "ok"), "count")
        out[f"{key}_long_ms"] = quantity(f.get("long_ms"), "ms")
        out[f"{key}_server_ran"] = quantity(f.get("server_ran"), "count")
    return out
