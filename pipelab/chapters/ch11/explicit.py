"""Section 1: redis-rs one by one, in `redis::pipe()` and in `redis::pipe().atomic()`, with chapter 1's
PINGs and chapter 3's SADD job, at chapter 10's sizes, beside redis-py and Jedis (chapter 10's runs of
them). The tables and figures are chapter 10's (explicit_table, explicit_summary)."""

from __future__ import annotations

from ...jbang import JavaRun
from ...measure import Measurement
from ...results import ratio_figure
from ..ch10.explicit import explicit_summary as ch10_summary
from ..ch10.parameters import N_EXPLICIT, REPEAT, WARMUP
from .runs import run

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
