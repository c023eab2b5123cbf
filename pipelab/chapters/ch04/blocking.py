"""Section 6: a blocking command inside a pipeline. The pipeline is the notebook's cell tagged
code:blocking, passed in by the notebook."""

from __future__ import annotations

import time

from ...results import md_table, quantity
from .common import PREFIX
from .instruments import Probe


def blocking_cases(lab, timeouts: list, pipeline_with_blpop) -> list:
    """When the SETs before and after a BLPOP on an empty list (the notebook's `pipeline_with_blpop(r,
    queue, marker, timeout_s, transaction=...)`) became visible to another client."""
    r = lab.client()
    queue, mark = PREFIX + "queue", PREFIX + "mark"
    rows = []
    for transaction in (False, True):
        for timeout in timeouts:
            r.unlink(queue, f"{mark}:before", f"{mark}:after")
            seen = {}

            def watch(c, i):
                for name in ("before", "after"):
                    if name not in seen and c.exists(f"{mark}:{name}"):
                        seen[name] = time.perf_counter()

            with Probe(lab.endpoint, command=watch):
                start = time.perf_counter()
                out = pipeline_with_blpop(r, queue, mark, timeout, transaction=transaction)
                elapsed = time.perf_counter() - start
                time.sleep(0.01)
            rows.append(
                {
                    "transaction": transaction,
                    "timeout_s": timeout,
                    "elapsed_ms": elapsed * 1e3,
                    "before_ms": (seen["before"] - start) * 1e3,
                    "after_ms": (seen["after"] - start) * 1e3,
                    "blpop_reply": repr(out[1]),
                }
            )
    r.unlink(queue, f"{mark}:before", f"{mark}:after")
    r.close()
    return rows


def blocking_table(rows: list) -> str:
    return md_table(
        [
            "MULTI/EXEC",
            "BLPOP timeout",
            "pipeline took",
            "SET before visible at",
            "SET after visible at",
            "BLPOP replied",
        ],
        [
            [
                x["transaction"],
                f"{x['timeout_s'] * 1e3:.0f} ms",
                f"{x['elapsed_ms']:.1f} ms",
                f"{x['before_ms']:.1f} ms",
                f"{x['after_ms']:.1f} ms",
                x["blpop_reply"],
            ]
            for x in rows
        ],
    )


def blocking_summary(rows: list) -> dict:
    longest = max((x for x in rows if not x["transaction"]), key=lambda x: x["timeout_s"])
    in_multi = max((x for x in rows if x["transaction"]), key=lambda x: x["timeout_s"])
    return {
        "timeout_ms": quantity(longest["timeout_s"] * 1e3, "ms"),
        "pipeline_ms": quantity(longest["elapsed_ms"], "ms"),
        "after_ms": quantity(longest["after_ms"], "ms"),
        "before_ms": quantity(longest["before_ms"], "ms"),
        "multi_ms": quantity(in_multi["elapsed_ms"], "ms"),
    }
