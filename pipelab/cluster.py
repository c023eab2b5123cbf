"""A Redis Cluster for the lab: three masters it starts itself on loopback, or the one at REDIS_CLUSTER_URL.

The embedded cluster is formed from Python (CLUSTER ADDSLOTS, SET-CONFIG-EPOCH, MEET) rather than
with `redis-cli --cluster create`: the servers' wheels ship no redis-cli, and the Python
path needs no answer to redis-cli's "type yes" prompt. The same ownership rules as for a single
server hold on every master: refuse to run beside foreign keys, delete only 'pipelab:' keys.
"""

from __future__ import annotations

import os
import random
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot

from . import host, placement
from .errors import LabError
from .server import (
    PREFIX,
    Endpoint,
    find_redis_server,
    foreign_keys,
    foreign_keys_allowed,
    parse_url,
    port_is_free,
    start_process,
    stop_process,
    wait_for_redis,
)
from .settings import DEFAULT_CLUSTER_PORT

SLOTS = 16384
BUS_OFFSET = 10_000  # the cluster bus's default offset; Redis 6.2 cannot move it, so the lab keeps it
CLUSTER_VAR = "REDIS_CLUSTER_URL"
PORT_VAR = "PIPELAB_CLUSTER_PORT"


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def cluster_info(client: redis.Redis) -> dict[str, str]:
    """CLUSTER INFO as strings (asked as two words, so redis-py's own parsing stays out of it)."""
    lines = _text(client.execute_command("CLUSTER", "INFO")).splitlines()
    return dict(line.split(":", 1) for line in lines if ":" in line)


@dataclass(frozen=True)
class NodeInfo:
    """One line of CLUSTER NODES: the address the cluster itself uses, and the slots it serves."""

    id: str
    ip: str
    port: int
    flags: frozenset[str]
    slots: frozenset[int] = field(repr=False)
    epoch: int = 0  # the config epoch: the higher one wins when two masters claim a slot

    @property
    def is_master(self) -> bool:
        return "master" in self.flags and not self.flags & {"fail", "handshake", "noaddr"}


def cluster_nodes(client: redis.Redis) -> list[NodeInfo]:
    nodes = []
    for line in _text(client.execute_command("CLUSTER", "NODES")).splitlines():
        parts = line.split()
        if len(parts) < 8:
            continue
        address = parts[1].split(",")[0]  # ip:port@cport[,hostname] (hostname from Redis 7)
        ip, _, rest = address.rpartition(":")
        slots: set[int] = set()
        for item in parts[8:]:
            if item.startswith("["):  # [slot->-id] / [slot-<-id]: a migration in flight, not ownership
                continue
            first, _, last = item.partition("-")
            slots.update(range(int(first), int(last or first) + 1))
        nodes.append(
            NodeInfo(
                parts[0], ip, int(rest.split("@")[0]), frozenset(parts[2].split(",")), frozenset(slots), int(parts[6])
            )
        )
    return nodes


def slot_map(client: redis.Redis) -> dict[int, str]:
    """{slot: id of the master serving it}, as this node believes."""
    return {slot: node.id for node in cluster_nodes(client) if node.is_master for slot in node.slots}


def ephemeral_low() -> int:
    """The first port the kernel hands out to outgoing connections (Linux's ip_local_port_range)."""
    try:
        return host.ephemeral_low()
    except (OSError, ValueError, IndexError, host.Unavailable):
        return 32_768  # Linux's default; other systems start higher


def free_cluster_port(masters: int = 3, low: int = 10_000, high: int = 30_000) -> int:
    """A base port whose next `masters` ports and their bus ports are all free, all below the ephemeral
    range: a port found free there now could be taken by any outgoing connection before the cluster starts."""
    high = min(high, ephemeral_low() - BUS_OFFSET)
    for _ in range(200):
        base = random.randrange(low, high - masters)
        if all(port_is_free(p) and port_is_free(p + BUS_OFFSET) for p in range(base, base + masters)):
            return base
    raise LabError(
        f"Found no {masters} free consecutive ports (with their bus ports) between {low} and {high}; "
        f"set {PORT_VAR} to a free base port."
    )


class Cluster:
    """What the chapter uses, whoever started the cluster: nodes, a client, slot moves, cleanup."""

    def __init__(self):
        self.nodes: list[Endpoint] = []  # the masters, as clients reach them
        self.seed: Endpoint | None = None  # whose credentials and TLS every node shares

    @property
    def password(self) -> str | None:
        return self.seed.password if self.seed else None

    @property
    def username(self) -> str | None:
        return self.seed.username if self.seed else None

    @property
    def startup_nodes(self) -> list[ClusterNode]:
        return [ClusterNode(n.host, n.port) for n in self.nodes]

    def client(self, **kwargs) -> RedisCluster:
        if self.seed is not None:
            for name, value in self.seed.client_kwargs().items():
                if name not in ("host", "port", "db"):
                    kwargs.setdefault(name, value)
        return RedisCluster(startup_nodes=self.startup_nodes, **kwargs)

    def node_client(self, node: Endpoint | int, **kwargs) -> redis.Redis:
        """A plain client on one node: it sees MOVED/ASK/CROSSSLOT as errors instead of following them."""
        return (self.nodes[node] if isinstance(node, int) else node).client(**kwargs)

    def _ids(self) -> dict[str, Endpoint]:
        """{node id: endpoint}; ids asked from each node (CLUSTER MYID), so addresses need not match."""
        ids = {}
        for endpoint in self.nodes:
            with endpoint.client() as c:
                ids[_text(c.execute_command("CLUSTER", "MYID"))] = endpoint
        return ids

    def slot_owners(self) -> dict[int, Endpoint]:
        """{slot: the master serving it right now}, as the first node sees the cluster."""
        with self.nodes[0].client() as c:
            by_id = slot_map(c)
        ids = self._ids()
        return {slot: ids[node_id] for slot, node_id in by_id.items() if node_id in ids}

    def owner(self, slot_or_key: int | str | bytes) -> Endpoint:
        """The master that serves a slot (or a key's slot) right now."""
        slot = slot_or_key if isinstance(slot_or_key, int) else key_slot(_bytes(slot_or_key))
        owners = self.slot_owners()
        if slot not in owners:
            raise LabError(f"No master serves slot {slot}; the cluster is not fully formed (CLUSTER NODES).")
        return owners[slot]

    def begin_migration(self, slot: int, target: Endpoint | int) -> SlotMigration:
        """Mark `slot` IMPORTING on the target and MIGRATING on its owner; keys move with .move_keys()."""
        if isinstance(target, int):
            target = self.nodes[target] if 0 <= target < len(self.nodes) else None
        if target not in self.nodes:
            raise LabError(
                f"The target of a slot migration must be one of the cluster's masters "
                f"({self._ports()}), by index or Endpoint."
            )
        if not 0 <= slot < SLOTS:
            raise LabError(f"Slot {slot} does not exist; a Redis Cluster has slots 0 to {SLOTS - 1}.")
        return SlotMigration(self, slot, self.owner(slot), target).begin()

    def migrate_slot(self, slot: int, target: Endpoint | int) -> int:
        """Move one slot and its keys to `target`, the way redis-cli --cluster reshard does; returns keys moved."""
        migration = self.begin_migration(slot, target)
        moved = migration.move_keys()
        migration.finish()
        return moved

    def wait_agreed(self, timeout: float = 10.0) -> None:
        """Until every master reports cluster_state:ok and all see the same slot map."""
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while True:
            try:
                states, maps = [], []
                for endpoint in self.nodes:
                    with endpoint.client(socket_timeout=2) as c:
                        info = cluster_info(c)
                        states.append((endpoint.port, info.get("cluster_state"), info.get("cluster_slots_assigned")))
                        # Slot owners and every master's config epoch: a node that has not yet heard
                        # of a newer epoch can still hand a just-moved slot back to its old owner.
                        view = cluster_nodes(c)
                        maps.append((slot_map(c), {n.id: n.epoch for n in view if n.is_master}))
                if all(s == "ok" and a == str(SLOTS) for _, s, a in states) and all(m == maps[0] for m in maps):
                    return
                last = ", ".join(f"port {port}: {s}, {a} slots" for port, s, a in states)
                if any(m != maps[0] for m in maps):
                    last += "; the nodes disagree on who serves which slot, or on the config epochs"
            except (redis.ConnectionError, redis.TimeoutError, OSError) as err:
                last = str(err)
            if time.monotonic() > deadline:
                raise LabError(
                    f"The cluster on {self._ports()} did not reach cluster_state:ok with one slot map "
                    f"within {timeout:.0f} s ({last})."
                )
            time.sleep(0.05)

    def _ports(self) -> str:
        return "ports " + ", ".join(str(n.port) for n in self.nodes)

    def foreign_keys(self) -> list[tuple[Endpoint, str]]:
        found = []
        for endpoint in self.nodes:
            with endpoint.client() as c:
                found += [(endpoint, key) for key in foreign_keys(c, sample=1)]
        return found

    def delete_lab_keys(self) -> int:
        """Delete 'pipelab:' keys on every master, one key per UNLINK (a multi-key UNLINK would be CROSSSLOT)."""
        removed = 0
        for endpoint in self.nodes:
            with endpoint.client() as c:
                keys = list(c.scan_iter(match=PREFIX + "*", count=1000))
                for start in range(0, len(keys), 1000):
                    pipe = c.pipeline(transaction=False)
                    for key in keys[start : start + 1000]:
                        pipe.execute_command("ASKING")  # a key already moved into an IMPORTING slot needs it
                        pipe.unlink(key)
                    removed += sum(pipe.execute()[1::2])
        return removed

    def __enter__(self):
        return self if self.nodes else self.start()  # open_cluster() hands it over started already

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self):
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


def _bytes(key: str | bytes) -> bytes:
    return key.encode() if isinstance(key, str) else key


class SlotMigration:
    """One slot on its way from `source` to `target`; between begin() and finish() clients see ASK."""

    def __init__(self, cluster: Cluster, slot: int, source: Endpoint, target: Endpoint):
        self.cluster, self.slot, self.source, self.target = cluster, slot, source, target
        ids = {endpoint: node_id for node_id, endpoint in cluster._ids().items()}
        self.source_id, self.target_id = ids[source], ids[target]

    def begin(self) -> SlotMigration:
        if self.source == self.target:
            return self
        with self.target.client() as t, self.source.client() as s:
            # Importing first, so no moment exists where the source sends ASK to a target that refuses it.
            t.execute_command("CLUSTER", "SETSLOT", self.slot, "IMPORTING", self.source_id)
            s.execute_command("CLUSTER", "SETSLOT", self.slot, "MIGRATING", self.target_id)
        return self

    def move_keys(self, count: int | None = None, batch: int = 100) -> int:
        """MIGRATE up to `count` keys (all when None) of the slot; returns how many moved."""
        if self.source == self.target:
            return 0
        with self.source.client() as s:
            # MIGRATE is run by the source, so it needs the target's address as the cluster sees it
            # (a container address under Docker), not the loopback port the host publishes.
            target = next(n for n in cluster_nodes(s) if n.id == self.target_id)
            auth = []
            if self.cluster.password is not None:
                auth = (
                    ["AUTH2", self.cluster.username, self.cluster.password]
                    if self.cluster.username
                    else ["AUTH", self.cluster.password]
                )
            moved = 0
            while count is None or moved < count:
                want = batch if count is None else min(batch, count - moved)
                keys = s.execute_command("CLUSTER", "GETKEYSINSLOT", self.slot, want)
                if not keys:
                    break
                s.execute_command("MIGRATE", target.ip, target.port, "", 0, 5000, *auth, "KEYS", *keys)
                moved += len(keys)
        return moved

    def finish(self, timeout: float = 10.0) -> None:
        """Give the slot to the target on every master (target first, then source) and wait for agreement."""
        if self.source != self.target:
            self.move_keys()  # what is left: SETSLOT NODE refuses while the source still holds keys of the slot
            order = [self.target, self.source] + [n for n in self.cluster.nodes if n not in (self.source, self.target)]
            for endpoint in order:
                with endpoint.client() as c:
                    c.execute_command("CLUSTER", "SETSLOT", self.slot, "NODE", self.target_id)
        self.cluster.wait_agreed(timeout)


class EmbeddedCluster(Cluster):
    """`masters` throw-away redis-server processes in cluster mode on loopback, no persistence, one temp dir."""

    def __init__(
        self, masters: int = 3, base_port: int | None = None, binary: str | None = None, node_timeout_ms: int = 3000
    ):
        super().__init__()
        if masters < 3:
            raise LabError(f"A Redis Cluster needs at least 3 masters to form; asked for {masters}.")
        self.masters = masters
        self.base_port = base_port or int(os.environ.get(PORT_VAR) or DEFAULT_CLUSTER_PORT)
        if not 1024 <= self.base_port <= 65535 - BUS_OFFSET - masters + 1:
            raise LabError(
                f"Cluster base port {self.base_port} is out of range: the {masters} ports and their "
                f"bus ports (+{BUS_OFFSET}) must lie within 1024-65535; set {PORT_VAR} to e.g. "
                f"{DEFAULT_CLUSTER_PORT}."
            )
        self.binary = binary or find_redis_server()
        self.node_timeout_ms = node_timeout_ms
        self.procs: list[subprocess.Popen] = []
        self.dir: tempfile.TemporaryDirectory | None = None
        self.ports = list(range(self.base_port, self.base_port + masters))

    def start(self) -> EmbeddedCluster:
        self._check_ports()
        self.dir = tempfile.TemporaryDirectory(prefix="pipelab-cluster-")
        try:
            for port in self.ports:
                self.procs.append(
                    start_process(
                        self._argv(port), Path(self.dir.name) / f"redis-{port}.log", cpus=placement.server_cpus()
                    )
                )
            self.nodes = [Endpoint("127.0.0.1", port) for port in self.ports]
            for endpoint, proc in zip(self.nodes, self.procs):
                try:
                    wait_for_redis(endpoint, proc=proc).close()
                except LabError:
                    raise LabError(
                        f"redis-server ({self.binary}) did not start on port {endpoint.port}: "
                        f"{self._last_log_line(endpoint.port)}."
                    ) from None
            self._form()
            self.wait_agreed(timeout=20)  # about 2 s: a fresh master waits a fixed 2000 ms before it says ok
        except BaseException:
            self.stop()
            raise
        return self

    def _check_ports(self) -> None:
        for port in self.ports:
            for p, what in ((port, ""), (port + BUS_OFFSET, f" (the cluster bus of port {port})")):
                if not port_is_free(p):
                    raise LabError(
                        f"Port {p} on 127.0.0.1{what} is in use (another cluster lab?); stop what holds "
                        f"it, set {PORT_VAR} to a base port whose {self.masters} ports and their bus "
                        f"ports (+{BUS_OFFSET}) are free, or set {CLUSTER_VAR} to use a running cluster."
                    )

    def _argv(self, port: int) -> list[str]:
        return [
            self.binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--protected-mode",
            "yes",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            self.dir.name,
            "--daemonize",
            "no",
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            f"{self.dir.name}/nodes-{port}.conf",
            "--cluster-node-timeout",
            str(self.node_timeout_ms),
        ]

    def _form(self) -> None:
        clients = [n.client() for n in self.nodes]
        try:
            for i, c in enumerate(clients):
                # An equal share of slots each; ADDSLOTS rather than ADDSLOTSRANGE, which needs Redis 7.
                first, last = i * SLOTS // self.masters, (i + 1) * SLOTS // self.masters
                c.execute_command("CLUSTER", "ADDSLOTS", *range(first, last))
                # Distinct epochs up front, as redis-cli does: otherwise the nodes spend a while resolving
                # the collision before they agree on the slot map.
                c.execute_command("CLUSTER", "SET-CONFIG-EPOCH", i + 1)
            # Every pair meets directly: leaving it to gossip costs 1-4 s more, at random.
            for i, c in enumerate(clients):
                for endpoint in self.nodes[i + 1 :]:
                    c.execute_command("CLUSTER", "MEET", endpoint.host, endpoint.port)
        finally:
            for c in clients:
                c.close()

    def _last_log_line(self, port: int) -> str:
        log = (Path(self.dir.name) / f"redis-{port}.log").read_text(errors="replace").strip()
        return log.splitlines()[-1] if log else "no output"

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def stop(self) -> None:
        for proc in self.procs:  # signal all first, so the nodes shut down side by side
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            stop_process(proc)
        self.procs = []
        self.nodes = []
        if self.dir is not None:
            self.dir.cleanup()
            self.dir = None

    def describe(self) -> dict:
        return {
            "cluster_url": self.nodes[0].shown if self.nodes else None,
            "owned": True,
            "nodes": [n.shown for n in self.nodes],
        }


class AttachedCluster(Cluster):
    """A running cluster the lab did not start (REDIS_CLUSTER_URL names one seed node); it is never stopped."""

    def __init__(self, url: str | None = None):
        super().__init__()
        self.url = url or os.environ.get(CLUSTER_VAR) or ""
        self.seed = parse_url(self.url, CLUSTER_VAR, "name one node, like redis://127.0.0.1:17000")
        if self.seed.db != 0:
            raise LabError(
                f"{CLUSTER_VAR} names database {self.seed.db}, but a Redis Cluster has only database 0; "
                "drop the /db part."
            )

    def start(self, allow_foreign: bool | None = None) -> AttachedCluster:
        seed = wait_for_redis(self.seed, timeout=3, variable=CLUSTER_VAR)
        with seed:
            if seed.info("cluster").get("cluster_enabled") != 1:
                raise LabError(
                    f"The Redis at {self.seed.host}:{self.seed.port} is not in cluster mode; set "
                    f"{CLUSTER_VAR} to a cluster node (REDIS_URL is for a single server)."
                )
            deadline = time.monotonic() + 10  # `docker compose up -d` returns before cluster-init has run
            while not (slots := seed.execute_command("CLUSTER", "SLOTS")) and time.monotonic() < deadline:
                time.sleep(0.2)
            self.nodes = self._masters(slots)
        self.wait_agreed(timeout=5)
        if allow_foreign is None:
            allow_foreign = foreign_keys_allowed()
        others = [] if allow_foreign else self.foreign_keys()
        if others:
            endpoint, key = others[0]
            raise LabError(
                f"The cluster at {self.seed.shown} holds keys that are not the lab's (e.g. {key!r} on master "
                f"{endpoint.host}:{endpoint.port}); point {CLUSTER_VAR} at an empty cluster, or set "
                "PIPELAB_ALLOW_FOREIGN_KEYS=1 to write beside them (the lab never deletes keys outside "
                "its 'pipelab:' prefix)."
            )
        return self

    def _masters(self, slots: list) -> list[Endpoint]:
        """Masters as CLUSTER SLOTS names them: it honours cluster-preferred-endpoint-type, CLUSTER NODES does not."""
        masters: dict[str, Endpoint] = {}
        for entry in slots:
            host, port, node_id = _text(entry[2][0]), int(entry[2][1]), _text(entry[2][2])
            if host in ("", "?"):  # no preferred endpoint announced: the address we used works for all
                host = self.seed.host
            masters[node_id] = self.seed.moved(host, port, 0)
        if not masters:
            raise LabError(
                f"The cluster at {self.seed.shown} serves no slots yet; form it first (e.g. "
                "`docker compose --profile cluster up -d` runs the one-shot cluster-init)."
            )
        return sorted(masters.values(), key=lambda e: (e.host, e.port))

    def stop(self) -> None:
        pass  # not ours to stop; call delete_lab_keys() to leave it as found

    def describe(self) -> dict:
        return {"cluster_url": self.seed.shown, "owned": False, "nodes": [n.shown for n in self.nodes]}


def open_cluster(masters: int = 3) -> Cluster:
    """The cluster named by REDIS_CLUSTER_URL when set, otherwise a new embedded one; started, use it with `with`."""
    if os.environ.get(CLUSTER_VAR):
        return AttachedCluster().start()
    return EmbeddedCluster(masters).start()
