"""Exercise 3, a pipeline, not a transaction: sadd_pipeline's server reads and no MULTI."""

from __future__ import annotations

from collections.abc import Callable

from ...lab import Lab
from .common import REPEAT, _at_server, _call, _fail, _own_keys, _prefix, _solved, _timed_in_turns


def _max_reads(commands: int) -> int:
    """A pipeline's bytes arrive in a few dozen socket reads; one by one costs a read per command."""
    return max(10, commands // 10)


def check_ex03(lab: Lab, sadd_pipeline: Callable) -> dict:
    n = lab.size(full=10_000, quick=2_000)
    key = f"{_prefix(3)}set"
    tx_key = f"{_prefix(3)}transaction"
    members = [f"member:{i}" for i in range(n)]
    with _own_keys(lab, 3) as client:
        with _at_server(lab) as server:
            replies = _call(3, sadd_pipeline, client, key, members)
        calls = server["calls"]
        if calls.get("multi", 0) or calls.get("exec", 0):
            raise _fail(
                3,
                f"the server ran {calls.get('multi', 0)} MULTI and {calls.get('exec', 0)} EXEC: "
                "redis-py's pipeline() is a transaction unless you pass transaction=False",
            )
        replies = list(replies) if replies is not None else []
        if replies != [1] * n:
            raise _fail(
                3,
                f"sadd_pipeline returned {len(replies):,} replies for {n:,} members, not all 1; queue "
                "one SADD per member and return execute()'s list",
            )
        size = client.scard(key)
        if size != n or calls.get("sadd", 0) != n:
            raise _fail(
                3,
                f"the set holds {size:,} members after {calls.get('sadd', 0):,} SADDs for {n:,} "
                "members; send one SADD per member",
            )
        if server["reads"] > _max_reads(n):
            raise _fail(
                3,
                f"the server read its socket {server['reads']:,} times for {n:,} SADDs, about one "
                "read per command; queue every SADD on one pipeline and call execute() once",
            )
        print(
            f"{n:,} SADDs: replies all 1, SCARD {size:,}; the server ran {calls.get('sadd', 0):,} SADD, "
            f"0 MULTI, 0 EXEC in {server['reads']:,} socket reads"
        )

        def transaction():
            pipe = client.pipeline(transaction=True)
            for member in members:
                pipe.sadd(tx_key, member)
            pipe.execute()

        print(f"warm-up + {REPEAT} timed rounds, the two in turns:")
        yours, tx = _timed_in_turns(
            {
                "sadd_pipeline (yours)": lambda: sadd_pipeline(client, key, members),
                "the same SADDs with transaction=True": transaction,
            },
            n,
            setup=lambda: client.unlink(key, tx_key),
        )
    ratio = tx.median / yours.median
    print(f"  the transaction took {ratio:.2f}x the time of your pipeline")
    _solved(3, f"{n:,} SADDs in a plain pipeline, no MULTI/EXEC; a transaction took {ratio:.2f}x its time")
    return {
        "n": n,
        "sadd_calls": calls.get("sadd", 0),
        "multi_calls": 0,
        "exec_calls": 0,
        "server_reads": server["reads"],
        "pipeline_median_s": yours.median,
        "transaction_median_s": tx.median,
        "transaction_ratio": ratio,
    }
