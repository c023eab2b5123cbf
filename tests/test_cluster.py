"""The embedded Redis Cluster: it forms, stops without orphans, refuses cross-slot work, moves a slot."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil  # ipykernel's dependency, so always installed
import pytest
import redis
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.exceptions import ClusterCrossSlotError, CrossSlotTransactionError, RedisClusterException
from redis.retry import Retry

from pipelab.cluster import (
    BUS_OFFSET,
    SLOTS,
    AttachedCluster,
    EmbeddedCluster,
    cluster_info,
    free_cluster_port,
    open_cluster,
    slot_map,
)
from pipelab.errors import LabError
from pipelab.server import find_redis_server
from tests.conftest import unavailable

pytestmark = pytest.mark.redis  # starts real servers (or the lab) without the session's fixtures


@pytest.fixture(autouse=True)
def no_cluster_env(monkeypatch):
    """A reader's own REDIS_CLUSTER_URL or PIPELAB_CLUSTER_PORT must not steer these tests."""
    monkeypatch.delenv("REDIS_CLUSTER_URL", raising=False)
    monkeypatch.delenv("PIPELAB_CLUSTER_PORT", raising=False)
    monkeypatch.delenv("PIPELAB_ALLOW_FOREIGN_KEYS", raising=False)


@pytest.fixture(scope="module")
def cluster():
    try:
        find_redis_server()
    except LabError as err:
        unavailable(str(err))
    with EmbeddedCluster(base_port=free_cluster_port()) as c:
        yield c


@pytest.fixture
def rc(cluster):
    client = cluster.client()
    yield client
    cluster.delete_lab_keys()
    client.close()


def keys_on(cluster, node, count: int, prefix: str = "pipelab:k") -> list[str]:
    """`count` keys in distinct slots that all live on `node`."""
    client = cluster.node_client(node)
    me = client.execute_command("CLUSTER", "MYID").decode()
    owned = {slot for slot, owner in slot_map(client).items() if owner == me}
    found, slots, i = [], set(), 0
    while len(found) < count:
        key, i = f"{prefix}{i}", i + 1
        slot = key_slot(key.encode())
        if slot in owned and slot not in slots:
            found.append(key)
            slots.add(slot)
    return found


def test_three_masters_on_loopback_serve_all_16384_slots_without_persistence(cluster):
    maps = []
    for node in cluster.nodes:
        client = cluster.node_client(node)
        info = cluster_info(client)
        assert info["cluster_state"] == "ok" and info["cluster_slots_assigned"] == str(SLOTS)
        assert info["cluster_known_nodes"] == "3" and info["cluster_size"] == "3"
        config = client.config_get("*")
        assert config["bind"] == "127.0.0.1" and config["cluster-enabled"] == "yes"
        assert config["save"] == "" and config["appendonly"] == "no"
        maps.append(slot_map(client))
    assert all(m == maps[0] for m in maps) and len(maps[0]) == SLOTS
    assert len(set(maps[0].values())) == 3


def test_stop_ends_every_process_and_removes_the_temp_dir(monkeypatch):
    monkeypatch.setenv("PIPELAB_CLUSTER_PORT", str(base := free_cluster_port()))
    t0 = time.monotonic()
    with open_cluster() as c:  # no REDIS_CLUSTER_URL: an embedded cluster on PIPELAB_CLUSTER_PORT
        started = time.monotonic() - t0
        assert isinstance(c, EmbeddedCluster) and c.ports == [base, base + 1, base + 2]
        pids, folder, ports = c.pids, Path(c.dir.name), c.ports
        assert len(pids) == 3 and all(psutil.Process(p).name() == "redis-server" for p in pids)
    assert not any(psutil.pid_exists(p) for p in pids)
    assert not folder.exists() and c.procs == []
    assert all(socket.socket().connect_ex(("127.0.0.1", p)) != 0 for p in ports)
    assert started < 10, f"the cluster took {started:.1f} s to form"


def test_a_killed_lab_takes_its_cluster_with_it(isolated_build):
    """Even kill -9 on the Python process leaves no redis-server behind (PR_SET_PDEATHSIG)."""
    code = (
        "import time; from pipelab.cluster import EmbeddedCluster, free_cluster_port; "
        "c = EmbeddedCluster(base_port=free_cluster_port()).start(); "
        "print(c.dir.name, *c.pids, flush=True); time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        folder, *pids = child.stdout.readline().split()
        assert len(pids) == 3
        servers = [psutil.Process(int(p)) for p in pids]
    finally:
        child.kill()
        child.wait()
    shutil.rmtree(folder, ignore_errors=True)  # killed outright, the lab could not tidy up itself
    gone, alive = psutil.wait_procs(servers, timeout=5)
    alive = [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]  # dead, waiting for init to reap it
    assert not alive, f"orphaned redis-server processes: {alive}"


def test_a_transaction_across_slots_is_refused_by_the_server(cluster, rc):
    node = cluster.nodes[0]
    a, b = keys_on(cluster, node, 2)  # one node, two slots: the refusal is CROSSSLOT, not MOVED
    direct = cluster.node_client(node)
    pipe = direct.pipeline(transaction=True)
    pipe.set(a, 1)
    pipe.set(b, 2)
    with pytest.raises(ClusterCrossSlotError, match="don't hash to the same slot"):
        pipe.execute()
    assert direct.exists(a) == 0 and direct.exists(b) == 0  # refused at EXEC: nothing ran
    with pytest.raises(ClusterCrossSlotError):
        direct.mset({a: 1, b: 2})
    with pytest.raises(ClusterCrossSlotError):
        direct.sunionstore(a, [b])


def test_redis_py_refuses_cross_slot_work_before_sending_it(rc):
    a, b = "pipelab:a", "pipelab:b"
    assert key_slot(a.encode()) != key_slot(b.encode())
    pipe = rc.pipeline(transaction=True)
    pipe.set(a, 1)
    pipe.set(b, 2)
    with pytest.raises(CrossSlotTransactionError):
        pipe.execute()
    with pytest.raises(RedisClusterException, match="same key slot"):
        rc.mset({a: 1, b: 2})
    assert rc.mset_nonatomic({a: 1, b: 2}) == [True, True]  # one MSET per slot: no atomicity across them


def test_hash_tagged_keys_share_a_slot_and_their_transaction_succeeds(rc):
    s1, s2, out, n = "pipelab:{ch05}:s1", "pipelab:{ch05}:s2", "pipelab:{ch05}:union", "pipelab:{ch05}:n"
    assert len({key_slot(k.encode()) for k in (s1, s2, out, n)}) == 1
    pipe = rc.pipeline(transaction=True)
    pipe.sadd(s1, "x")
    pipe.sadd(s2, "y")
    pipe.incr(n)
    pipe.execute_command("SUNIONSTORE", out, s1, s2)  # pipe.sunionstore() is blocked in cluster pipelines
    assert pipe.execute() == [1, 1, 1, 2]
    assert rc.mset({"pipelab:{ch05}:m1": 1, "pipelab:{ch05}:m2": 2})
    assert rc.sunionstore(out, [s1, s2]) == 2


def test_migrating_a_slot_moves_its_keys_and_old_clients_follow_moved_and_ask(cluster, rc):
    keys = [f"pipelab:{{migrate}}:{i}" for i in range(10)]
    slot = key_slot(keys[0].encode())
    for i, key in enumerate(keys):
        rc.set(key, i)
    source = cluster.owner(slot)
    target = next(n for n in cluster.nodes if n != source)
    stale = cluster.client()
    assert stale.get(keys[0]) == b"0"  # its slot cache now points at the source

    migration = cluster.begin_migration(slot, target)
    assert migration.move_keys(count=4) == 4
    asked = []
    for key in keys:  # which 4 moved is up to GETKEYSINSLOT (its order differs between Redis 6 and 7)
        try:
            cluster.node_client(source).get(key)  # not yet moved: still served by the source
        except redis.exceptions.AskError as err:  # moved: the source sends the client on, for this once
            assert str(err) == f"{slot} 127.0.0.1:{target.port}"
            asked.append(key)
    assert len(asked) == 4
    assert [stale.get(k) for k in keys] == [str(i).encode() for i in range(10)]
    migration.finish()

    assert cluster.owner(slot) == target
    assert cluster.node_client(source).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
    assert cluster.node_client(target).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 10
    with pytest.raises(redis.exceptions.MovedError, match=f"{slot} 127.0.0.1:{target.port}"):
        cluster.node_client(source).get(keys[0])
    assert [stale.get(k) for k in keys] == [str(i).encode() for i in range(10)]  # followed MOVED
    assert stale.nodes_manager.get_node_from_slot(slot).port == target.port  # and refreshed its map
    assert cluster.migrate_slot(slot, source) == 10  # and back, all at once


def test_mid_migration_a_pipeline_follows_ask_a_transaction_does_not_and_cleanup_still_works(cluster, rc):
    keys = [f"pipelab:{{mid}}:{i}" for i in range(6)]
    for i, key in enumerate(keys):
        rc.set(key, i)
    slot = key_slot(keys[0].encode())
    target = next(n for n in cluster.nodes if n != cluster.owner(slot))
    migration = cluster.begin_migration(slot, target)
    migration.move_keys(count=3)  # the slot now lives on two nodes
    pipe = rc.pipeline(transaction=False)
    for key in keys:
        pipe.incr(key)
    assert pipe.execute() == [1, 2, 3, 4, 5, 6]
    # MULTI runs on one node, so redis-py cannot follow ASK: it retries, then raises. With the default
    # retry (10 attempts, jittered exponential backoff) that takes about 4 s; two quick ones show the same.
    quick = cluster.client(retry=Retry(NoBackoff(), retries=2))
    tx = quick.pipeline(transaction=True)
    for key in keys:
        tx.get(key)
    with pytest.raises(redis.exceptions.AskError):
        tx.execute()
    assert cluster.delete_lab_keys() == 6  # on both sides of the open migration
    migration.finish()
    assert cluster.owner(slot) == target


def test_attaching_refuses_a_cluster_with_foreign_keys_and_cleans_only_lab_keys(cluster, rc, monkeypatch):
    monkeypatch.setenv("REDIS_CLUSTER_URL", f"redis://127.0.0.1:{cluster.nodes[1].port}")
    rc.set("pipelab:{x}:ours", 1)
    rc.set("customer:1", "precious")
    try:
        with pytest.raises(LabError, match=r"holds keys that are not the lab's \(e.g. 'customer:1' on master"):
            open_cluster()
        assert rc.get("customer:1") == b"precious"
    finally:
        rc.delete("customer:1")  # our own throw-away cluster: the test may remove what it planted
    with open_cluster() as attached:
        assert isinstance(attached, AttachedCluster)
        assert sorted(n.port for n in attached.nodes) == cluster.ports
        assert attached.client().get("pipelab:{x}:ours") == b"1"
        assert attached.delete_lab_keys() == 1
    assert all(psutil.pid_exists(p) for p in cluster.pids)  # attaching never stops what it did not start


def test_a_taken_port_is_one_sentence():
    base = free_cluster_port()
    for held in (base + 1, base + 2 + BUS_OFFSET):
        with socket.socket() as holder:
            # As redis-server binds: a closed bus connection's TIME_WAIT must not make the port look taken.
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            holder.bind(("127.0.0.1", held))
            holder.listen()
            with pytest.raises(LabError, match=f"Port {held} on 127.0.0.1") as err:
                EmbeddedCluster(base_port=base).start()
            text = str(err.value)
            assert "PIPELAB_CLUSTER_PORT" in text and text.endswith(".") and ". " not in text


def test_bad_cluster_settings_are_one_sentence(cluster, other_redis, monkeypatch):
    with pytest.raises(LabError, match="must name one node"):
        AttachedCluster("http://127.0.0.1:17000")
    with pytest.raises(LabError, match="only database 0"):
        AttachedCluster("redis://127.0.0.1:17000/2")
    with pytest.raises(LabError, match="Cannot reach Redis .* unset REDIS_CLUSTER_URL"):
        AttachedCluster(f"redis://127.0.0.1:{free_cluster_port()}").start()
    with pytest.raises(LabError, match="is not in cluster mode"):
        AttachedCluster(other_redis.endpoint.url).start()
    with pytest.raises(LabError, match="at least 3 masters"):
        EmbeddedCluster(masters=2)
    with pytest.raises(LabError, match="must be one of the cluster's masters"):
        cluster.begin_migration(0, 7)
    with pytest.raises(LabError, match="Slot 16384 does not exist"):
        cluster.begin_migration(SLOTS, 0)
    monkeypatch.setenv("PIPELAB_CLUSTER_PORT", "60000")
    with pytest.raises(LabError, match="out of range"):
        EmbeddedCluster()


def test_a_chosen_cluster_port_stays_out_of_the_ephemeral_range():
    """A free port in the ephemeral range can be taken by any outgoing connection before the cluster
    starts (chapter 7's notebook opens hundreds before it starts one)."""
    from pipelab.cluster import ephemeral_low

    for _ in range(50):
        base = free_cluster_port()
        assert base + 2 + BUS_OFFSET < ephemeral_low(), base
