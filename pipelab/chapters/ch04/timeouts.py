"""Section 7: client timeouts shorter than a pipeline's reply time. The slow pipeline and the batching
are the notebook's cell tagged code:timeout, passed in by the notebook."""

from __future__ import annotations

import time

from ...jbang import fact
from ...results import md_table, quantity
from .common import PREFIX, no_retry_client
from .instruments import server_time
from .lrem import build_list
from .parameters import DEFAULT_RETRIES, LONG, TIMEOUT_S


def timeout_cases(lab, n_fast: int, slow_pipeline, in_batches) -> tuple[list, dict]:
    """A fast big pipeline, a slow one (the notebook's `slow_pipeline`) without and with redis-py's
    retries, and the slow one cut by its `in_batches`, each under a TIMEOUT_S socket timeout; sized
    from the server's measured LREM cost."""
    r = lab.client()
    slow_list, counter = PREFIX + "long", PREFIX + "timeout:counter"
    build_list(r, slow_list, LONG)
    samples = []
    for _ in range(5):
        with server_time(lab.endpoint, "lrem") as usec:
            slow_pipeline(r, counter, slow_list, LONG, 5)
        samples.append(usec["lrem"] / 1e6)
    per_call_s = min(samples)  # the fastest the server did it: sizes below hold even on a quiet server
    slow_n = max(4, int(5 * TIMEOUT_S / per_call_s))  # about five timeouts' worth of server time
    batch = max(1, int(0.3 * TIMEOUT_S / max(samples)))  # under a third of a timeout even on a busy server
    rows = []

    def case(name, client, job, runs_expected=1, sends=2):
        r.unlink(counter)
        start = time.perf_counter()
        try:
            job(client)
            outcome = "ok"
        except Exception as err:
            outcome = type(err).__name__
        elapsed = time.perf_counter() - start
        time.sleep(slow_n * per_call_s * sends + 0.2)  # copies still queued on the server finish first
        # Each pipeline starts with an INCR: the counter says how many pipelines the server ran.
        rows.append(
            {
                "case": name,
                "outcome": outcome,
                "elapsed_s": elapsed,
                "head_ran": int(r.get(counter) or 0),
                "runs_expected": runs_expected,
            }
        )
        client.close()

    fast_keys = [f"{PREFIX}fast:{i}" for i in range(n_fast)]

    def fast_job(c):
        pipe = c.pipeline(transaction=False)
        pipe.incr(counter)
        for key in fast_keys:
            pipe.set(key, 1)
        pipe.execute()

    case(f"{n_fast:,} SET, one pipeline", lab.client(socket_timeout=TIMEOUT_S), fast_job)
    r.unlink(*fast_keys)

    def slow(c):
        return slow_pipeline(c, counter, slow_list, LONG, slow_n)

    case(f"{slow_n} LREM, one pipeline, no retry", no_retry_client(lab.endpoint, socket_timeout=TIMEOUT_S), slow)
    case(
        f"{slow_n} LREM, one pipeline, redis-py's default retry",
        lab.client(socket_timeout=TIMEOUT_S),
        slow,
        sends=1 + DEFAULT_RETRIES,
    )

    # list(range(slow_n)), batch
    def batched(c):
        return in_batches(
            lambda part: slow_pipeline(c, counter, slow_list, LONG, len(part)), list(range(slow_n)), batch
        )

    case(
        f"{slow_n} LREM in batches of {batch}",
        lab.client(socket_timeout=TIMEOUT_S),
        batched,
        runs_expected=-(-slow_n // batch),
    )
    r.unlink(slow_list, counter)
    r.close()
    return rows, {"slow_n": slow_n, "batch": batch, "lrem_per_call_s": per_call_s, "timeout_s": TIMEOUT_S}


def timeout_table(rows: list) -> str:
    return md_table(
        ["case", "outcome", "client time", "pipelines the server ran", "pipelines sent by the application"],
        [[x["case"], x["outcome"], f"{x['elapsed_s']:.2f} s", x["head_ran"], x["runs_expected"]] for x in rows],
    )


def timeout_summary(rows: list, sizing: dict, n_fast: int, java) -> dict:
    fast, slow_once, slow_retry, in_parts = rows
    return {
        "timeout_ms": quantity(TIMEOUT_S * 1e3, "ms"),
        "fast_n": quantity(n_fast, "count"),
        "fast_s": quantity(fast["elapsed_s"], "s"),
        "fast_outcome": quantity(0, "count", fast["outcome"]),
        "slow_n": quantity(sizing["slow_n"], "count"),
        "batch": quantity(sizing["batch"], "count"),
        "lrem_ms": quantity(sizing["lrem_per_call_s"] * 1e3, "ms"),
        "slow_outcome": quantity(0, "count", slow_once["outcome"]),
        "retry_head_ran": quantity(slow_retry["head_ran"], "count"),
        "retry_s": quantity(slow_retry["elapsed_s"], "s"),
        "batched_outcome": quantity(0, "count", in_parts["outcome"]),
        "java_n": quantity(java.data["size"], "count"),
        "redisson_timeout_ms": fact(java, "redisson_response_timeout_ms", "ms"),
        "redisson_once_outcome": fact(java, "redisson_timeout_no_retry_outcome"),
        "redisson_once_elapsed_ms": fact(java, "redisson_timeout_no_retry_elapsed_ms", "ms"),
        "redisson_once_applied": fact(java, "redisson_timeout_no_retry_applied"),
        "redisson_retry_outcome": fact(java, "redisson_timeout_default_retry_outcome"),
        "redisson_retry_set_calls": fact(java, "redisson_timeout_default_retry_set_calls"),
        "redisson_batch": fact(java, "redisson_small_batch_size"),
        "redisson_batches_sent": fact(java, "redisson_small_batches_sent"),
        "redisson_batches_late": fact(java, "redisson_small_batches_late"),
        "jedis_so_timeout_ms": fact(java, "jedis_so_timeout_ms", "ms"),
        "jedis_outcome": fact(java, "jedis_pipeline_outcome"),
        "lettuce_timeout_ms": fact(java, "lettuce_timeout_ms", "ms"),
        "lettuce_futures_ok": fact(java, "lettuce_one_flush_futures_ok"),
        "lettuce_applied": fact(java, "lettuce_one_flush_applied"),
    }
