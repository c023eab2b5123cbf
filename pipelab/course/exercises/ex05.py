"""Exercise 5, one slot per user: user_key's hash tags on the lab's cluster."""

from __future__ import annotations

from collections.abc import Callable

import redis
from redis.crc import key_slot
from redis.exceptions import RedisClusterException

from ... import observe
from ...lab import Lab
from .common import _call, _fail, _prefix, _solved

FIELDS = ("profile", "cart", "sessions")
USERS = [f"user:{i}" for i in range(1000)]
SLOT_RANGES = ((0, 5460), (5461, 10922), (10923, 16383))  # three masters' equal shares, as redis-cli splits them
SHARE_BOUNDS = (0.20, 0.47)


def _slot(key: str) -> int:
    return key_slot(key.encode())


def _check_layout(keys: dict[str, list[str]]) -> list[float]:
    """Per-range share of the users, once every key is well formed and each user has one slot."""
    flat = [k for ks in keys.values() for k in ks]
    bad = next((k for k in flat if not isinstance(k, str)), None)
    if bad is not None:
        raise _fail(5, f"user_key returned {bad!r}, a {type(bad).__name__}; return a str")
    bad = next((k for k in flat if not k.startswith(_prefix(5))), None)
    if bad is not None:
        raise _fail(5, f"user_key returned {bad!r}; every key must start with {_prefix(5)!r}")
    if len(set(flat)) != len(flat):
        raise _fail(
            5,
            f"user_key gave {len(set(flat)):,} distinct keys for {len(flat):,} (user, field) pairs; "
            "put both the user id and the field in the key",
        )
    for user, ks in keys.items():
        for field, k in zip(FIELDS, ks):
            if user not in k or field not in k:
                raise _fail(
                    5, f"user_key({user!r}, {field!r}) returned {k!r}; the key must contain the user id and the field"
                )
        slots = {_slot(k) for k in ks}
        if len(slots) > 1:
            raise _fail(
                5,
                f"{user}'s keys hash to {len(slots)} slots ({', '.join(map(str, sorted(slots)))}); wrap "
                "the user id in a hash tag, e.g. pipelab:ex05:{user:42}:cart, so only it is hashed",
            )
    user_slots = [_slot(ks[0]) for ks in keys.values()]
    if len(set(user_slots)) == 1:
        raise _fail(
            5,
            f"all {len(flat):,} keys hash to slot {user_slots[0]}, so one master would serve every user; "
            "the hash tag should hold the user id only, e.g. pipelab:ex05:{user:42}:cart",
        )
    shares = [sum(low <= s <= high for s in user_slots) / len(user_slots) for low, high in SLOT_RANGES]
    if not all(SHARE_BOUNDS[0] <= share <= SHARE_BOUNDS[1] for share in shares):
        listed = ", ".join(f"{100 * s:.0f}%" for s in shares)
        raise _fail(
            5,
            f"the users land unevenly on the three slot ranges ({listed}; {SHARE_BOUNDS[0]:.0%} to "
            f"{SHARE_BOUNDS[1]:.0%} each expected); the hash tag should hold the whole user id, nothing "
            "shared by many users",
        )
    return shares


def _cluster_round_trip(lab: Lab, keys: dict[str, list[str]]) -> dict[int, int]:
    """One MSET and one MGET per user on the lab's cluster; MSET calls per master (by port)."""
    cluster = lab.cluster()
    rc = cluster.client()

    def mset_calls() -> dict[int, int]:
        out = {}
        for node in cluster.nodes:
            with node.client() as c:
                out[node.port] = observe.command_calls(c).get("mset", 0)
        return out

    def unlink_all() -> None:
        for ks in keys.values():
            rc.unlink(*ks)  # redis-py splits a multi-key UNLINK by slot; one slot per user here anyway

    try:
        unlink_all()
        before = mset_calls()
        written = {user: {k: f"{user}|{field}" for field, k in zip(FIELDS, ks)} for user, ks in keys.items()}
        try:
            for mapping in written.values():
                rc.mset(mapping)
            read = {user: rc.mget(list(mapping)) for user, mapping in written.items()}
        except (RedisClusterException, redis.ResponseError) as err:
            raise _fail(
                5,
                f"the cluster refused one user's MSET or MGET ({str(err)[:80]}); one user's keys must "
                "share a slot, so hash the user id alone",
            ) from None
        after = mset_calls()
        for user, mapping in written.items():
            if read[user] != [v.encode() for v in mapping.values()]:
                raise _fail(
                    5,
                    f"reading {user}'s keys back with MGET gave {read[user]!r}; user_key must return "
                    "the same key for the same user and field every time",
                )
    finally:
        unlink_all()
        rc.close()
    return {port: after[port] - before[port] for port in after}


def check_ex05(lab: Lab, user_key: Callable) -> dict:
    keys = {user: [_call(5, user_key, user, field) for field in FIELDS] for user in USERS}
    shares = _check_layout(keys)
    print(
        f"{len(USERS):,} users x {len(FIELDS)} fields: {len(USERS) * len(FIELDS):,} distinct keys, one slot per "
        f"user (e.g. {keys['user:42'][1]!r} -> slot {_slot(keys['user:42'][1])})"
    )
    print(
        "  users per slot range: "
        + ", ".join(f"{low}-{high}: {100 * s:.0f}%" for (low, high), s in zip(SLOT_RANGES, shares))
    )
    users = USERS[: lab.size(full=200, quick=50)]
    per_master = _cluster_round_trip(lab, {user: keys[user] for user in users})
    used = sum(1 for n in per_master.values() if n)
    print(
        f"  on the cluster: one MSET and one MGET per user for {len(users)} users, no CROSSSLOT; MSETs per "
        "master: " + ", ".join(f":{port} {n}" for port, n in per_master.items())
    )
    _solved(
        5,
        f"one slot per user; the busiest slot range gets {100 * max(shares):.0f}% of the users, "
        f"{used} masters served the MSETs",
    )
    return {
        "users": len(USERS),
        "range_shares": shares,
        "busiest_share": max(shares),
        "cluster_users": len(users),
        "mset_per_master": per_master,
        "masters_used": used,
    }
