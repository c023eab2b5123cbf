"""Injected round-trip time: toxiproxy in front of Redis with latency toxics on both directions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from . import placement
from .errors import LabError
from .paths import tools_dir
from .server import Endpoint, free_port, start_process, stop_process

TOXIPROXY_VERSION = "v2.5.0"  # the newest tag the Go module proxy serves for toxiproxy/v2
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
PROXY_NAME = "pipelab-redis"  # docker-compose's toxiproxy.json creates the same name


class ToxiproxyUnavailable(LabError):
    pass


def toxic_plan(rtt_ms: float) -> list[dict]:
    """The toxics that add `rtt_ms` to every round trip.

    Toxiproxy takes latency in whole milliseconds per direction, so an odd RTT puts the extra
    millisecond upstream, and 0.5 ms is a mean: upstream delayed 0 or 1 ms with equal odds
    (latency 1, jitter 1 draws latency + rand[-1, 0]).
    """
    if rtt_ms < 0:
        raise LabError(f"An RTT cannot be negative (got {rtt_ms} ms).")
    if rtt_ms == 0:
        return []
    if rtt_ms == 0.5:
        return [
            {"name": "rtt-upstream", "type": "latency", "stream": "upstream", "attributes": {"latency": 1, "jitter": 1}}
        ]
    if rtt_ms != int(rtt_ms):
        raise LabError(f"Toxiproxy adds latency in whole milliseconds; use 0.5 or a whole number of ms, not {rtt_ms}.")
    total = int(rtt_ms)
    plan = []
    for stream, share in (("upstream", (total + 1) // 2), ("downstream", total // 2)):
        if share:
            plan.append(
                {
                    "name": f"rtt-{stream}",
                    "type": "latency",
                    "stream": stream,
                    "attributes": {"latency": share, "jitter": 0},
                }
            )
    return plan


def find_toxiproxy(build: bool = True) -> str:
    """$PIPELAB_TOXIPROXY, toxiproxy-server on PATH, a copy built earlier, or build one with Go."""
    explicit = os.environ.get("PIPELAB_TOXIPROXY")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise ToxiproxyUnavailable(f"PIPELAB_TOXIPROXY={explicit} is not executable; fix or unset it.")
        return explicit
    on_path = shutil.which("toxiproxy-server")
    if on_path:
        return on_path
    target_dir = tools_dir() / f"toxiproxy-{TOXIPROXY_VERSION}"
    built = target_dir / "server"
    if built.exists():
        return str(built)
    go = shutil.which("go")
    if not build or not go:
        raise ToxiproxyUnavailable(
            "No toxiproxy: install Go (the lab builds toxiproxy from the Go module proxy), "
            "put toxiproxy-server on PATH, or use docker compose (see README)."
        )
    target_dir.mkdir(parents=True, exist_ok=True)
    print(f"pipelab: building toxiproxy {TOXIPROXY_VERSION} with go install (once) ...", flush=True)
    env = dict(os.environ, GOBIN=str(target_dir), GOFLAGS="-modcacherw")
    done = subprocess.run(
        [go, "install", f"{TOXIPROXY_MODULE}@{TOXIPROXY_VERSION}"], env=env, capture_output=True, text=True
    )
    if done.returncode != 0 or not built.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ToxiproxyUnavailable(
            f"Building toxiproxy with Go failed ({tail[0]}); check that the Go module "
            "proxy is reachable, or put toxiproxy-server on PATH."
        )
    return str(built)


class Toxiproxy:
    """A toxiproxy API: one the lab started (own=True) or one at TOXIPROXY_URL (docker compose)."""

    def __init__(self, api_url: str, proc: subprocess.Popen | None = None, workdir=None):
        self.api_url = api_url.rstrip("/")
        self.proc = proc
        self._workdir = workdir

    @classmethod
    def start(cls, binary: str | None = None) -> Toxiproxy:
        binary = binary or find_toxiproxy()
        port = free_port()
        workdir = tempfile.TemporaryDirectory(prefix="pipelab-toxiproxy-")
        proc = start_process(
            [binary, "-host", "127.0.0.1", "-port", str(port)],
            Path(workdir.name) / "toxiproxy.log",
            cpus=placement.client_cpus(),  # its relaying is client-side work
        )
        proxy = cls(f"http://127.0.0.1:{port}", proc, workdir)
        try:
            proxy.wait()
        except LabError:
            proxy.stop()
            raise
        return proxy

    def wait(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise ToxiproxyUnavailable(f"toxiproxy exited with code {self.proc.returncode} at start.")
            try:
                self.version()
                return
            except (urllib.error.URLError, OSError):
                time.sleep(0.05)
        raise ToxiproxyUnavailable(
            f"Toxiproxy at {self.api_url} does not answer; start it (docker compose up) or unset TOXIPROXY_URL."
        )

    def _call(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.api_url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def version(self) -> str:
        req = urllib.request.Request(self.api_url + "/version")
        with urllib.request.urlopen(req, timeout=2) as resp:
            text = resp.read().decode().strip()
        try:  # newer servers answer JSON, older ones plain text
            return json.loads(text).get("version", text)
        except (ValueError, AttributeError):
            return text

    def proxy_for(self, upstream: Endpoint) -> Endpoint:
        """Where clients connect to reach `upstream` through the proxy (created when the lab owns toxiproxy)."""
        if self.proc is not None:
            listen = f"127.0.0.1:{free_port()}"
            self._call(
                "POST",
                "/proxies",
                {"name": PROXY_NAME, "listen": listen, "upstream": f"{upstream.host}:{upstream.port}", "enabled": True},
            )
        else:
            try:
                listen = self._call("GET", f"/proxies/{PROXY_NAME}")["listen"]
            except urllib.error.HTTPError:
                raise ToxiproxyUnavailable(
                    f"Toxiproxy at {self.api_url} has no proxy named {PROXY_NAME!r}; "
                    "start it with this repository's docker-compose.yml."
                ) from None
        port = int(listen.rsplit(":", 1)[1])
        return upstream.moved("127.0.0.1", port)  # TLS passes through: toxiproxy relays bytes

    def set_rtt(self, rtt_ms: float) -> None:
        plan = toxic_plan(rtt_ms)
        for toxic in self._call("GET", f"/proxies/{PROXY_NAME}/toxics") or []:
            self._call("DELETE", f"/proxies/{PROXY_NAME}/toxics/{toxic['name']}")
        for toxic in plan:
            self._call("POST", f"/proxies/{PROXY_NAME}/toxics", dict(toxic, toxicity=1.0))

    def add_toxic(self, name: str, kind: str, stream: str, **attributes) -> None:
        """One toxic on the lab's proxy, e.g. add_toxic("cut", "reset_peer", "upstream", timeout=100)."""
        self._call(
            "POST",
            f"/proxies/{PROXY_NAME}/toxics",
            {"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes},
        )

    def remove_toxic(self, name: str) -> None:
        try:
            self._call("DELETE", f"/proxies/{PROXY_NAME}/toxics/{name}")
        except urllib.error.HTTPError as err:
            if err.code != 404:  # already gone is fine
                raise

    def stop(self) -> None:
        if self.proc is None:  # someone else's toxiproxy: leave it clean, not stopped
            try:
                self.set_rtt(0)
            except (urllib.error.URLError, OSError):
                pass
            return
        stop_process(self.proc)
        self.proc = None
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None
