"""Section 5: a connection that drops in the middle of a pipeline: what ran, and retries. The jobs are
the notebook's cell tagged code:drop, passed in by the notebook."""

from __future__ import annotations

import time

from ...jbang import fact
from ...results import md_table, quantity
from ...server import delete_lab_keys
from .common import PREFIX, no_retry_client
from .instruments import incr_command_bytes
from .parameters import CUT_MS


def drop_scenarios(lab, n: int, incr_pipeline, set_pipeline, incr_exactly_once) -> dict:
    """The cut and lost-reply scenarios through toxiproxy, run with the notebook's three jobs: per
    scenario, what the client saw, what the server applied and the connections opened."""
    r = lab.client()
    counter, set_prefix = PREFIX + "drop:counter", PREFIX + "drop:set:"
    # Enough bandwidth for about a quarter of the pipeline before the reset.
    rate_kb_s = max(1, int(n * incr_command_bytes(counter) * 0.25 / 1024 / (CUT_MS / 1000)))
    cut = [
        ("slow", "bandwidth", "upstream", {"rate": rate_kb_s}),
        ("cut", "reset_peer", "downstream", {"timeout": CUT_MS}),
    ]
    # Replies lost: the whole job reaches Redis and runs; every reply is dropped and the connection closes.
    lost = [("lost", "timeout", "downstream", {"timeout": CUT_MS})]

    def count():
        return int(r.get(counter) or 0)

    def keys_set():
        return sum(1 for _ in r.scan_iter(match=set_prefix + "*", count=1000))

    drop = {}

    def attempt(name, client_factory, job, *, blip=False, toxics=cut, applied=count):
        # Connect first (toxics would also cut the handshake), then put the toxics on, then run the job.
        conns0 = r.info("stats")["total_connections_received"]
        with lab.faults() as faults:
            c = client_factory(faults.link.endpoint)
            c.ping()
            faults.add(*toxics)
            timer = faults.clear_after(4 * CUT_MS / 1000) if blip else None  # ends well after the reset
            try:
                out = job(c)
                outcome = f"returned {len(out) if isinstance(out, list) else out}"
            except Exception as err:
                outcome = type(err).__name__
            if timer:
                timer.join()
        time.sleep(0.2)  # let the server finish what reached it
        drop[name] = {
            "outcome": outcome,
            "applied": applied(),
            "connections": r.info("stats")["total_connections_received"] - conns0,
        }
        c.close()

    def then(name, job, applied=count):  # the application re-sends the whole job on a good connection
        job(r)
        drop[name] = {"outcome": "returned", "applied": applied(), "connections": 0}

    def incr(c):
        return incr_pipeline(c, counter, n)

    def incr_tx(c):
        return incr_pipeline(c, counter, n, transaction=True)

    r.unlink(counter)
    attempt("cut, no retry", no_retry_client, incr)
    then("blind retry", incr)
    r.unlink(counter)
    attempt("redis-py's own retry, blip", lambda e: e.client(), incr, blip=True)
    r.unlink(counter)
    attempt("MULTI/EXEC, no retry", no_retry_client, incr_tx)
    then("MULTI/EXEC, then retry", incr_tx)
    r.unlink(counter)
    attempt(
        "replies lost, MULTI/EXEC, redis-py's own retry, blip", lambda e: e.client(), incr_tx, blip=True, toxics=lost
    )
    r.unlink(counter)
    request = f"job-{time.time_ns()}"
    attempt(
        "replies lost, MULTI/EXEC + marker, blip",
        no_retry_client,
        lambda c: incr_exactly_once(c, counter, n, request),
        blip=True,
        toxics=lost,
    )
    r.unlink(counter, f"{PREFIX}request:{request}")

    def sets(c):
        return set_pipeline(c, set_prefix, n)

    attempt("SET (idempotent), cut, no retry", no_retry_client, sets, applied=keys_set)
    then("SET (idempotent), blind retry", sets, applied=keys_set)
    delete_lab_keys(r, set_prefix + "*")
    r.close()
    return drop


def drop_table(drop: dict, n: int) -> str:
    return md_table(
        ["scenario", "what the client saw", "applied on the server", f"÷ {n:,}", "connections"],
        [
            [name, x["outcome"], f"{x['applied']:,}", f"{x['applied'] / n:.2f}", x["connections"]]
            for name, x in drop.items()
        ],
    )


def drop_summary(drop: dict, n: int, java) -> dict:
    def applied(name):
        return quantity(drop[name]["applied"] if name in drop else None, "count")

    retry = drop.get("redis-py's own retry, blip", {})
    return {
        "n": quantity(n, "count"),
        "cut_ms": quantity(CUT_MS, "ms"),
        "cut_applied": applied("cut, no retry"),
        "cut_share": quantity(100 * drop["cut, no retry"]["applied"] / n if drop else None, "%"),
        "blind_retry_applied": applied("blind retry"),
        "library_retry_applied": applied("redis-py's own retry, blip"),
        "library_retry_outcome": quantity(0, "count", retry.get("outcome", "–")),
        "library_retry_connections": quantity(retry.get("connections"), "count"),
        "tx_cut_applied": applied("MULTI/EXEC, no retry"),
        "tx_retry_applied": applied("MULTI/EXEC, then retry"),
        "lost_tx_library_retry_applied": applied("replies lost, MULTI/EXEC, redis-py's own retry, blip"),
        "lost_exactly_once_applied": applied("replies lost, MULTI/EXEC + marker, blip"),
        "idempotent_cut_applied": applied("SET (idempotent), cut, no retry"),
        "idempotent_retry_applied": applied("SET (idempotent), blind retry"),
        "jedis_cut_applied": fact(java, "pipeline_applied"),
        "jedis_blind_retry": fact(java, "blind_retry_counter"),
        "jedis_tx_applied": fact(java, "transaction_applied"),
        "jedis_tx_retry": fact(java, "transaction_retry_counter"),
        "lettuce_futures_ok": fact(java, "lettuce_futures_ok"),
        "lettuce_futures_failed": fact(java, "lettuce_futures_failed"),
        "lettuce_counter": fact(java, "lettuce_counter"),
        "lettuce_duplicates": fact(java, "lettuce_duplicates"),
    }
