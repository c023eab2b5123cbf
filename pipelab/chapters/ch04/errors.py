"""Section 4: one bad command in a pipeline, and what each client does with the rest. The pipeline is
the notebook's cell tagged code:bad, passed in by the notebook."""

from __future__ import annotations

import redis

from ...results import md_table, quantity
from .common import PREFIX
from .parameters import yes_no


def bad_command_cases(r: redis.Redis, pipeline_with_bad_command) -> list:
    """What redis-py returns or raises for each bad command (the notebook's `pipeline_with_bad_command`),
    with and without MULTI/EXEC and raise_on_error, and whether the INCR after the bad command ran."""
    bad_key, counter = PREFIX + "bad", PREFIX + "bad:counter"
    rows = []
    for bad in ("wrongtype", "arity"):
        for transaction in (False, True):
            for raise_on_error in (True, False):
                r.unlink(bad_key, counter)
                try:
                    out = pipeline_with_bad_command(
                        r, bad_key, counter, transaction=transaction, raise_on_error=raise_on_error, bad=bad
                    )
                    seen = "results: " + ", ".join(
                        type(x).__name__ if isinstance(x, Exception) else repr(x) for x in out
                    )
                except Exception as err:  # what surfaces is the finding
                    seen = f"raises {type(err).__name__}: {str(err)[:70]}"
                rows.append(
                    {
                        "bad": bad,
                        "transaction": transaction,
                        "raise_on_error": raise_on_error,
                        "seen": seen,
                        "later_ran": r.get(counter) == b"1",
                    }
                )
    r.unlink(bad_key, counter)
    return rows


def errors_table(rows: list) -> str:
    return md_table(
        ["bad command", "MULTI/EXEC", "raise_on_error", "what redis-py returns", "INCR after it ran"],
        [[x["bad"], x["transaction"], x["raise_on_error"], x["seen"], "yes" if x["later_ran"] else "no"] for x in rows],
    )


def errors_summary(rows: list, java_facts: dict) -> dict:
    def row(bad, transaction, raise_on_error):
        return next(
            x for x in rows if (x["bad"], x["transaction"], x["raise_on_error"]) == (bad, transaction, raise_on_error)
        )

    java_clients = sorted({k.split("_")[0] for k in java_facts if k.endswith("_later_commands_ran")})
    plain = row("wrongtype", False, True)
    return {
        "redispy_later_ran": yes_no(plain["later_ran"]),
        "redispy_multi_later_ran": yes_no(row("wrongtype", True, True)["later_ran"]),
        "redispy_arity_multi_later_ran": yes_no(row("arity", True, False)["later_ran"]),
        "redispy_raise": quantity(0, "count", plain["seen"]),
        "later_ran_everywhere": quantity(
            sum(1 for c in java_clients if java_facts[f"{c}_later_commands_ran"]) + plain["later_ran"], "count"
        ),
        "clients_checked": quantity(len(java_clients) + 1, "count"),
    } | {
        f"{c}_{what}": quantity(0, "count", java_facts.get(f"{c}_{what}", "not reported"))
        for c in ("jedis", "lettuce", "redisson", "spring")
        for what in ("error_surfaced", "results")
    }
