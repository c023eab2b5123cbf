"""Exercise 6, stay under the reply budget: get_all's batches against client-output-buffer-limit."""

from __future__ import annotations

from collections.abc import Callable

import redis

from ... import observe
from ...chapters.ch04 import no_retry_client  # a retried pipeline would only be cut again
from ...lab import Lab
from ...server import EmbeddedRedis, free_port
from .common import _call, _fail, _prefix, _solved
from .ex02 import _ExecuteCounter

EX06_SIZES = (1_000, 4_000, 16_000, 64_000, 100_000)  # value sizes, cycled over the keys
EX06_BUDGET = 256 * 1024  # bytes of values one execute() may ask for
EX06_LIMIT = "normal 512kb 0 0"  # the check's own server cuts a connection whose replies pass this


def _greedy_batches(sizes: list[int], budget: int) -> int:
    """How many pipelines filling each up to the budget, in key order, take: the fewest in order."""
    batches, used = 0, budget
    for size in sizes:
        if used + size > budget:
            batches, used = batches + 1, 0
        used += size
    return batches


def check_ex06(lab: Lab, get_all: Callable) -> dict:

    n = lab.size(full=300, quick=120)
    keys = [f"{_prefix(6)}{i}" for i in range(n)]
    sizes = [EX06_SIZES[i % len(EX06_SIZES)] for i in range(n)]
    values = [(f"{i}:".encode() * size)[:size] for i, size in enumerate(sizes)]
    # A server of the check's own, so the limit is set on nothing else.
    with (
        EmbeddedRedis(port=free_port(), args=["--client-output-buffer-limit", EX06_LIMIT]) as server,
        server.endpoint.client() as admin,
        no_retry_client(server.endpoint) as handed,
    ):
        for start in range(0, n, 20):
            admin.mset(dict(zip(keys[start : start + 20], values[start : start + 20])))
        counter = _ExecuteCounter(handed)
        before = observe.command_calls(admin)
        cuts = int(admin.info("stats")["client_output_buffer_limit_disconnections"])
        try:
            got = _call(6, get_all, handed, keys, EX06_BUDGET)
        except redis.ConnectionError:
            cut = int(admin.info("stats")["client_output_buffer_limit_disconnections"]) - cuts
            raise _fail(
                6,
                f"the server closed the connection ({cut} output-buffer disconnection"
                f"{'s' if cut != 1 else ''} in INFO stats): one execute() asked for more replies than "
                f"`client-output-buffer-limit {EX06_LIMIT}` lets it queue; stop adding GETs to a pipeline "
                f"before their values pass the budget",
            ) from None
        calls = {k: v - before.get(k, 0) for k, v in observe.command_calls(admin).items()}
    total = sum(sizes)
    print(
        f"{n:,} keys, {total / 2**20:.1f} MiB of values ({', '.join(f'{s:,}' for s in EX06_SIZES)} bytes, cycled); "
        f"budget {EX06_BUDGET // 1024} KiB of values per execute(); the check's server cuts at {EX06_LIMIT!r}"
    )
    got = list(got) if got is not None else []
    if len(got) != n or any(g != v for g, v in zip(got, values)):
        wrong = next((i for i, (g, v) in enumerate(zip(got, values)) if g != v), min(len(got), n))
        raise _fail(
            6,
            f"get_all returned {len(got):,} values for {n:,} keys, the first wrong at position {wrong}; "
            "return every key's value, as bytes, in the order of the keys",
        )
    size_of = dict(zip(keys, sizes))
    piped = [[args[1] for args in stack if str(args[0]).upper() == "GET"] for stack in counter.stacks]
    piped = [batch for batch in piped if batch]
    if sum(map(len, piped)) < n or calls.get("get", 0) > n:
        raise _fail(
            6,
            f"the server ran {calls.get('get', 0):,} GETs of which {sum(map(len, piped)):,} came in "
            f"pipelines, for {n:,} keys; send each key's GET once, in a pipeline (MGET counts as one "
            "command with all its replies, so it does not help here)",
        )
    biggest = max(sum(size_of[k] for k in batch) for batch in piped)
    if biggest > EX06_BUDGET:
        raise _fail(
            6,
            f"one execute() asked for {biggest:,} bytes of values, over the budget of {EX06_BUDGET:,}; "
            "learn the sizes first (STRLEN, pipelined) and start a new pipeline before a GET would pass "
            "the budget",
        )
    fewest = _greedy_batches(sizes, EX06_BUDGET)
    if len(piped) > 2 * fewest:
        raise _fail(
            6,
            f"get_all used {len(piped):,} pipelines of GETs where {fewest:,} suffice; fill each pipeline "
            "up to the budget before executing it",
        )
    print(
        f"  {len(piped)} pipelines of GETs (the fewest in key order: {fewest}), the largest asking for "
        f"{biggest / 1024:.0f} KiB; STRLEN calls: {calls.get('strlen', 0):,}; no disconnection"
    )
    _solved(6, f"{total / 2**20:.1f} MiB in {len(piped)} pipelines, none over {EX06_BUDGET // 1024} KiB of replies")
    return {
        "n": n,
        "bytes": total,
        "pipelines": len(piped),
        "fewest": fewest,
        "largest_batch_bytes": biggest,
        "strlen_calls": calls.get("strlen", 0),
    }
