"""Faults on the lab's own cluster: a master stopped and started again, replication held back, a script
cache emptied, and a cluster with a replica per master to hold back.

Only a cluster the lab started (EmbeddedCluster) is touched: stopping a master or pausing a server
is not the lab's to do on someone else's cluster (refuse() says so in one sentence).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import redis

from . import placement
from .cluster import BUS_OFFSET, Cluster, EmbeddedCluster
from .errors import LabError
from .server import Endpoint, start_process, stop_process, wait_for_redis

HOLD_MS = 120_000  # a pause outlasts any run; it is lifted explicitly


def refuse(cluster: Cluster, what: str) -> str | None:
    """Why `what` cannot run on this cluster, in one sentence; None when the lab started it."""
    if isinstance(cluster, EmbeddedCluster):
        return None
    return (
        f"{what} stops or pauses servers, so it runs only on a cluster the lab starts itself; "
        "unset REDIS_CLUSTER_URL to see it."
    )


class ReplicatedCluster(EmbeddedCluster):
    """An EmbeddedCluster with `replicas` replicas per master, on the ports after the masters'.
    `nodes` stays the masters, as everywhere else; `replica_nodes` are the replicas."""

    def __init__(self, masters: int = 3, replicas: int = 1, **kwargs):
        super().__init__(masters, **kwargs)
        servers = masters * (1 + replicas)
        if self.base_port + servers - 1 + BUS_OFFSET > 65535:
            raise LabError(
                f"Cluster base port {self.base_port} is too high for {servers} servers and their bus ports "
                f"(+{BUS_OFFSET}); choose one at most {65535 - BUS_OFFSET - servers + 1}."
            )
        self.ports = list(range(self.base_port, self.base_port + servers))
        self.replicas = replicas
        self.replica_nodes: list[Endpoint] = []

    def _argv(self, port: int) -> list[str]:
        # A replica syncs at once: by default a master waits 5 s for other replicas to share a sync.
        return [*super()._argv(port), "--repl-diskless-sync-delay", "0"]

    def _form(self) -> None:
        every = self.nodes
        self.nodes, self.replica_nodes = every[: self.masters], every[self.masters :]
        super()._form()  # the masters take the slots and meet
        for endpoint in self.replica_nodes:
            with endpoint.client() as c:
                c.execute_command("CLUSTER", "MEET", self.nodes[0].host, self.nodes[0].port)

    def start(self) -> ReplicatedCluster:
        super().start()
        try:
            self._attach_replicas()
        except BaseException:
            self.stop()
            raise
        return self

    def _attach_replicas(self, timeout: float = 20.0) -> None:
        """Replica k follows master k % masters; waits until every link is up and the masters agree."""
        ids = {endpoint: node_id for node_id, endpoint in self._ids().items()}
        deadline = time.monotonic() + timeout
        for k, endpoint in enumerate(self.replica_nodes):
            with endpoint.client() as c:
                while True:  # the replica must have heard of its master through gossip first
                    try:
                        c.execute_command("CLUSTER", "REPLICATE", ids[self.nodes[k % self.masters]])
                        break
                    except redis.ResponseError as err:
                        if time.monotonic() > deadline:
                            raise LabError(f"Replica {endpoint.port} could not follow its master: {err}.") from None
                        time.sleep(0.05)
        wait_replicated(self, timeout=max(1.0, deadline - time.monotonic()))
        self.wait_agreed(timeout=timeout)
        # Clients learn of replicas from CLUSTER SLOTS, which lists them once gossip has told every master.
        per_range = 3 + self.replicas
        for endpoint in self.nodes:
            with endpoint.client() as c:
                while any(len(entry) < per_range for entry in c.execute_command("CLUSTER", "SLOTS")):
                    if time.monotonic() > deadline:
                        raise LabError(f"Master {endpoint.port} does not list its replicas within {timeout:.0f} s.")
                    time.sleep(0.05)

    def stop(self) -> None:
        super().stop()
        self.replica_nodes = []

    def describe(self) -> dict:
        return super().describe() | {"replicas": [n.shown for n in self.replica_nodes]}


def _own(cluster: Cluster, what: str) -> None:
    if (why := refuse(cluster, what)) is not None:
        raise LabError(why)


def pid_of(cluster: EmbeddedCluster, endpoint: Endpoint) -> int:
    return cluster.procs[cluster.ports.index(endpoint.port)].pid


def alive(cluster: EmbeddedCluster, endpoint: Endpoint) -> bool:
    return cluster.procs[cluster.ports.index(endpoint.port)].poll() is None


def restart(cluster: EmbeddedCluster, endpoint: Endpoint, timeout: float = 20.0) -> float:
    """Start a stopped (or killed) node again from its nodes.conf, so with its id and slots; wait until the
    masters agree again. Returns the seconds that took."""
    _own(cluster, "Restarting a master")
    start = time.monotonic()
    i = cluster.ports.index(endpoint.port)
    stop_process(cluster.procs[i])
    log = Path(cluster.dir.name) / f"redis-{endpoint.port}.log"
    cluster.procs[i] = start_process(cluster._argv(endpoint.port), log, cpus=placement.server_cpus())
    wait_for_redis(endpoint, proc=cluster.procs[i]).close()
    cluster.wait_agreed(timeout=timeout)
    return time.monotonic() - start


def pause_writes(endpoint: Endpoint, ms: int = HOLD_MS) -> None:
    """Writes that reach this server wait unrun (reads are served); on a replica that includes the
    stream from its master, so it falls behind."""
    with endpoint.client() as c:
        c.execute_command("CLIENT", "PAUSE", ms, "WRITE")


def unpause(endpoint: Endpoint) -> None:
    with endpoint.client() as c:
        c.execute_command("CLIENT", "UNPAUSE")


def wait_replicated(cluster: ReplicatedCluster, timeout: float = 10.0) -> None:
    """Until every replica's link is up and it has applied all its master has sent."""
    deadline = time.monotonic() + timeout
    for endpoint in cluster.replica_nodes:
        with endpoint.client() as c:
            while True:
                info = c.info("replication")
                if info.get("master_link_status") == "up":
                    master = Endpoint(info["master_host"], int(info["master_port"]))
                    with master.client() as m:
                        if info["slave_repl_offset"] >= m.info("replication")["master_repl_offset"]:
                            break
                if time.monotonic() > deadline:
                    raise LabError(f"Replica {endpoint.port} did not catch up with its master within {timeout:.0f} s.")
                time.sleep(0.02)


@contextlib.contextmanager
def replication_held(cluster: ReplicatedCluster):
    """Inside: every replica serves reads but applies nothing its master sends. After: they catch up."""
    _own(cluster, "Holding back replication")
    try:
        for endpoint in cluster.replica_nodes:
            pause_writes(endpoint)
        yield
    finally:
        for endpoint in cluster.replica_nodes:
            unpause(endpoint)
        wait_replicated(cluster)


@contextlib.contextmanager
def script_flushed(cluster: Cluster, body: str, flushed: int = -1):
    """The script loaded on every master, then its cache emptied on one (as after a failover or on a new
    shard); yields (sha1, the flushed master). Afterwards the caches are emptied where the lab loaded it."""
    _own(cluster, "Emptying a master's script cache")
    shas = set()
    for endpoint in cluster.nodes:
        with endpoint.client() as c:
            shas.add(c.script_load(body))
    victim = cluster.nodes[flushed]
    with victim.client() as c:
        c.script_flush()
    try:
        yield shas.pop(), victim
    finally:
        for endpoint in cluster.nodes:
            with endpoint.client() as c:
                c.script_flush()
