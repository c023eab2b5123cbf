"""Exercise 4, keep the latest 100, cheaply: LPUSH and LTRIM, not LREM."""

from __future__ import annotations

from collections.abc import Callable

from ...lab import Lab
from .common import _at_server, _call, _fail, _own_keys, _prefix, _solved
from .ex03 import _max_reads


def check_ex04(lab: Lab, push_keep_latest: Callable) -> dict:
    n, keep = 5_000, 100
    key = f"{_prefix(4)}latest"
    items = [f"item:{i}" for i in range(n)]
    with _own_keys(lab, 4) as client:
        with _at_server(lab, "lpush", "ltrim") as server:
            _call(4, push_keep_latest, client, key, items, keep)
        calls = server["calls"]
        if calls.get("lrem", 0):
            raise _fail(
                4,
                f"push_keep_latest called LREM {calls['lrem']:,} times; LREM scans the list to find its "
                "value, O(N) per call, so drop the oldest by position with LTRIM key 0 keep-1",
            )
        got = client.lrange(key, 0, -1)
        want = [item.encode() for item in reversed(items[-keep:])]
        if got != want:
            head = ", ".join(v.decode() for v in got[:3])
            raise _fail(
                4,
                f"the list holds {len(got):,} items starting {head or 'nothing'}, not the newest {keep} "
                f"newest first (item:{n - 1}, item:{n - 2}, ...); LPUSH each item, then keep 0..keep-1",
            )
        if not calls.get("ltrim"):
            raise _fail(4, "push_keep_latest never called LTRIM; trim the list by position with LTRIM key 0 keep-1")
        if server["reads"] > _max_reads(n):
            raise _fail(
                4,
                f"the server read its socket {server['reads']:,} times for {n:,} items, about one read "
                "per command; queue the LPUSHes and LTRIMs on one pipeline",
            )
    usec = server["usec"]
    print(f"{n:,} items, keep {keep}: the list holds item:{n - 1} ... item:{n - keep}, newest first")
    print(
        f"  the server ran {calls.get('lpush', 0):,} LPUSH ({usec['lpush'] or 0:.2f} µs each), "
        f"{calls['ltrim']:,} LTRIM ({usec['ltrim']:.2f} µs each), 0 LREM, in {server['reads']:,} socket reads"
    )
    _solved(4, f"{usec['ltrim']:.2f} µs per LTRIM on the server, and no LREM")
    return {
        "n": n,
        "keep": keep,
        "ltrim_calls": calls["ltrim"],
        "lrem_calls": 0,
        "ltrim_usec": usec["ltrim"],
        "lpush_usec": usec["lpush"],
        "server_reads": server["reads"],
    }
