"""The lab a notebook opens: a Redis to measure, an optional toxiproxy for RTT, results and Java runs.

`make book` and `make lab` start one Session and hand it to every notebook kernel through the
PIPELAB_SESSION variable; a notebook opened on its own starts (and later stops) its own.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import redis

from . import envinfo, jbang, placement, probe, results, workspace
from .cluster import Cluster, open_cluster
from .errors import LabError
from .measure import Measurement, measure, measure_interleaved
from .params import Size
from .paths import env_flag, results_dir
from .proxy import TOXIPROXY_VERSION, Toxiproxy, ToxiproxyUnavailable
from .server import (
    EmbeddedRedis,
    Endpoint,
    check_ownership,
    delete_lab_keys,
    foreign_keys_allowed,
    parse_url,
    wait_for_redis,
)

SESSION_VAR = "PIPELAB_SESSION"


class Session:
    """Starts what the lab needs (or attaches to REDIS_URL / TOXIPROXY_URL) and stops what it started."""

    def __init__(self, *, with_proxy: bool = True, port: int | None = None):
        self.with_proxy = with_proxy
        self.port = port
        self.redis: EmbeddedRedis | None = None
        self.toxiproxy: Toxiproxy | None = None
        self.endpoint: Endpoint | None = None
        self.proxy_endpoint: Endpoint | None = None
        self.proxy_note = "toxiproxy not requested"
        self.owned = False

    def start(self) -> Session:
        try:
            self._start_redis()
            if self.with_proxy:
                self._start_proxy()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_redis(self) -> None:
        url = os.environ.get("REDIS_URL")
        if url:
            self.endpoint = parse_url(url)
            client = wait_for_redis(self.endpoint, timeout=3)
            check_ownership(client, self.endpoint.shown, allow_foreign=foreign_keys_allowed())
            client.close()
        else:
            self.redis = EmbeddedRedis(port=self.port).start()
            self.endpoint = self.redis.endpoint
            self.owned = True

    def _start_proxy(self) -> None:
        try:
            api = os.environ.get("TOXIPROXY_URL")
            if api:
                self.toxiproxy = Toxiproxy(api)
                self.toxiproxy.wait(timeout=3)
            else:
                self.toxiproxy = Toxiproxy.start()
            self.proxy_endpoint = self.toxiproxy.proxy_for(self.endpoint)
            version = self.toxiproxy.version()
            if version in {"git", "", "undefined"} and self.toxiproxy.proc is not None:
                version = f"{TOXIPROXY_VERSION} (built from the Go module)"  # go install leaves no version stamp
            self.proxy_note = f"toxiproxy {version}"
        except ToxiproxyUnavailable as err:
            if self.toxiproxy is not None:
                self.toxiproxy.stop()
            self.toxiproxy = None
            self.proxy_note = str(err)

    def stop(self) -> None:
        if self.toxiproxy is not None:
            self.toxiproxy.stop()
            self.toxiproxy = None
        if self.redis is not None:
            self.redis.stop()
            self.redis = None

    def server_identity(self) -> str:
        """What the results depend on of the server: the binary's content when the lab started it,
        else the attached server's URL (hashed: it may hold a password; it names user, TLS and
        database, which all change figures), name, version and build id."""
        if self.redis is not None:
            return "binary sha256 " + hashlib.sha256(Path(self.redis.binary).read_bytes()).hexdigest()
        with self.endpoint.client() as client:
            info = client.info("server")
        return (
            f"REDIS_URL sha256 {hashlib.sha256(self.endpoint.url.encode()).hexdigest()} "
            f"{info.get('server_name', 'redis')} "
            f"{info.get('valkey_version') or info.get('redis_version')} {info.get('redis_build_id', '')}"
        )

    def describe(self) -> dict:
        return {
            "redis_url": self.endpoint.url,
            "owned": self.owned,
            "toxiproxy_api": self.toxiproxy.api_url if self.toxiproxy else None,
            "proxy_url": self.proxy_endpoint.url if self.proxy_endpoint else None,
            "proxy_note": self.proxy_note,
            "server_pid": self.redis.proc.pid if self.redis is not None else None,
        }

    def env(self) -> dict:
        """Variables that let a child process (a notebook kernel) attach to this session."""
        return {SESSION_VAR: json.dumps(self.describe())}

    def __enter__(self) -> Session:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@dataclass(frozen=True)
class Link:
    """A way to reach Redis with a given injected RTT (0: straight to Redis on loopback)."""

    endpoint: Endpoint
    rtt_ms: float
    via_proxy: bool

    def client(self, **kwargs) -> redis.Redis:
        return self.endpoint.client(**kwargs)


@dataclass
class Faults:
    """Toxics on the lab's proxy: add() puts them on every connection, new or open; clear()
    lifts them (a network blip that ends)."""

    link: Link
    toxiproxy: Toxiproxy
    names: list = field(default_factory=list)

    def add(self, *toxics: tuple) -> None:
        """Each toxic a tuple (name, type, stream, {attributes}), e.g. ("cut", "reset_peer", "downstream", {"timeout": 100})."""
        for name, kind, stream, attributes in toxics:
            self.toxiproxy.add_toxic(name, kind, stream, **attributes)
            self.names.append(name)

    def clear(self) -> None:
        for name in self.names:
            self.toxiproxy.remove_toxic(name)
        self.names = []

    def clear_after(self, seconds: float) -> threading.Timer:
        timer = threading.Timer(seconds, self.clear)
        timer.start()
        return timer


class Lab:
    def __init__(self, description: dict, quick: bool, session: Session | None = None):
        self._session = session  # set only when this Lab started its own processes
        self.endpoint = parse_url(description["redis_url"])
        self.proxy_endpoint = parse_url(description["proxy_url"]) if description.get("proxy_url") else None
        self.proxy_note = description.get("proxy_note", "")
        self.toxiproxy = Toxiproxy(description["toxiproxy_api"]) if description.get("toxiproxy_api") else None
        self.quick = quick
        self.owned = bool(description.get("owned"))  # the lab started this Redis: it may reconfigure it
        self.server_pid = description.get("server_pid")
        self._java_clients: dict = {}
        self._jvms: dict = {}  # alias: the collector and CPU count its JVM chose
        self._cluster: Cluster | None = None

    # --- sizes and connections -------------------------------------------------------------
    def size(self, full, quick=None):
        """The full size for the book, the small one for tests (quick mode); `full` may be a Size."""
        if isinstance(full, Size):
            full, quick = full
        return quick if self.quick else full

    def client(self, **kwargs) -> redis.Redis:
        return self.endpoint.client(**kwargs)

    @property
    def rtt_available(self) -> bool:
        return self.toxiproxy is not None and self.proxy_endpoint is not None

    @contextmanager
    def rtt(self, rtt_ms: float):
        """Yield a Link whose round trips carry `rtt_ms` more; 0 goes straight to Redis."""
        if rtt_ms == 0:
            yield Link(self.endpoint, 0, False)
            return
        if not self.rtt_available:
            raise LabError(f"Cannot inject {rtt_ms} ms of RTT: {self.proxy_note}")
        self.toxiproxy.set_rtt(rtt_ms)
        try:
            yield Link(self.proxy_endpoint, rtt_ms, True)
        finally:
            self.toxiproxy.set_rtt(0)

    @contextmanager
    def proxied(self):
        """The proxy hop with no toxic: what toxiproxy itself adds to a round trip."""
        if not self.rtt_available:
            raise LabError(f"No proxy: {self.proxy_note}")
        self.toxiproxy.set_rtt(0)
        yield Link(self.proxy_endpoint, 0, True)

    @contextmanager
    def faults(self):
        """Yield a Faults: a link through the proxy on which toxics can be put (Faults.add) and
        lifted (Faults.clear); whatever is left is lifted when the block ends."""
        if not self.rtt_available:
            raise LabError(f"Cannot inject network faults: {self.proxy_note}")
        self.toxiproxy.set_rtt(0)
        faults = Faults(Link(self.proxy_endpoint, 0, True), self.toxiproxy)
        try:
            yield faults
        finally:
            faults.clear()

    # --- measuring ------------------------------------------------------------------------
    measure = staticmethod(measure)
    measure_interleaved = staticmethod(measure_interleaved)

    def java(
        self,
        alias: str,
        *args,
        link: Link | None = None,
        target: Endpoint | None = None,
        cluster: Endpoint | None = None,
    ) -> jbang.JavaRun:
        """Run a JBang example against Redis, a `link` to it (RTT, faults) or another `target` (a cluster
        node); `cluster`: a node of the cluster the run also reaches (its settings may differ)."""
        target = target or (link.endpoint if link else self.endpoint)
        run = jbang.run_example(alias, target, *args, cluster=cluster)
        self._java_clients.update(run.clients)
        self._java_clients["java"] = run.data.get("java_version")
        if jvm := run.data.get("jvm"):
            self._jvms[alias] = f"{jvm['gc']}, {jvm['cpus']} CPU{'s' if jvm['cpus'] != 1 else ''}"
        return run

    def environment(self, **extra) -> dict:
        with self.client() as client:
            return envinfo.capture(
                client,
                toxiproxy=self.proxy_note,
                java_clients=dict(self._java_clients),
                jvms=dict(self._jvms),
                quick_mode=self.quick,
                placement=placement.describe(self.server_pid),
                probe=probe.take(client),
                **extra,
            )

    def save(
        self,
        name: str,
        measurements: list[Measurement] = (),
        *,
        summary: dict | None = None,
        params: dict | None = None,
        notes: list[str] | None = None,
        alt: str | None = None,
        **env_extra,
    ) -> str:
        """Write results/<name>.json with the environment; the plot registered for `name` (plots.draws),
        drawn from the file just written, goes beside it as <name>.png and stays open for the notebook."""
        path = results.save(
            name,
            environment=self.environment(**env_extra),
            measurements=list(measurements),
            params=params,
            summary=summary,
            notes=notes,
            plot_alt=alt,
        )
        # From the file, not the objects in hand: what the site and the reference draw, exactly.
        from . import plots  # noqa: PLC0415  (matplotlib: only a save draws, and `pipelab` commands start faster)

        plots.save(name, results.load(name), results_dir() / f"{name}.png")
        if workspace.in_workspace():  # a learner's run in `make lab`: their figures beside the book's
            print(workspace.beside(name, summary or {}))
        return str(path)

    def cluster(self) -> Cluster:
        """Chapter 5's Redis Cluster: REDIS_CLUSTER_URL's, or 3 embedded masters stopped with this kernel."""
        if self._cluster is None:
            self._cluster = open_cluster()
            atexit.register(self._cluster.stop)
        return self._cluster

    def cleanup(self) -> int:
        """Delete the lab's own keys (prefix pipelab:) and nothing else."""
        with self.client() as client:
            return delete_lab_keys(client)

    def close(self) -> None:
        if self._session is not None:
            self._session.stop()
            self._session = None


def open_lab(quick: bool | None = None) -> Lab:
    """The notebook's entry point: attach to the running session, or start one for this kernel."""
    if quick is None:
        quick = env_flag("PIPELAB_QUICK")
    placement.pin_clients()  # before any client, JVM or thread starts: they inherit the mask
    placement.keep_cpus_awake()
    description = os.environ.get(SESSION_VAR)
    if description:
        return Lab(json.loads(description), quick)
    session = Session().start()
    lab = Lab(session.describe(), quick, session)
    atexit.register(lab.close)
    return lab
