"""6. What TLS costs a pipeline: one server listening in plain and in TLS at once, redis-py and Jedis
at each depth, the two transports timed in turns, with the client's and the server's CPU. The SETs and
the TLS connection are the notebook's cells tagged code:depth and code:tls."""

from __future__ import annotations

import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ... import observe, plots, resp, tls
from ...errors import LabError
from ...measure import Measurement
from ...results import median_figure, quantity, ratio_figure
from ...server import EmbeddedRedis, free_port
from .parameters import TLS_ROUND_TRIPS

TRANSPORTS = ("plain", "TLS")


@contextmanager
def tls_server():
    """Debian's Redis 7.0 on loopback with a plain port and a TLS port, in one process: the same
    binary, the same memory, the same CPU. Yields the server, or one sentence on why there is none."""
    with tempfile.TemporaryDirectory(prefix="pipelab-tls-") as certs:
        try:
            files = tls.make_ca(Path(certs))
            server = EmbeddedRedis(port=free_port(), binary=tls.tls_server_binary(), tls=files).start()
        except LabError as err:
            yield str(err)
            return
        try:
            yield server
        finally:
            server.stop()


class CpuMeter:
    """CPU seconds a mode spends across all its runs: this process's, and the server's (INFO cpu
    read on a connection of its own, between the timed work)."""

    def __init__(self, info_client):
        self.info = info_client
        self.client_s = self.server_s = 0.0
        self.commands = 0

    def around(self, work, commands: int):
        def run():
            server0, client0 = self._server(), time.process_time()
            work()
            self.client_s += time.process_time() - client0
            self.server_s += self._server() - server0
            self.commands += commands

        return run

    def _server(self) -> float:
        counters = observe.server_counters(self.info)
        return counters["used_cpu_user"] + counters["used_cpu_sys"]

    def per_command_us(self) -> dict:
        return {"client": 1e6 * self.client_s / self.commands, "server": 1e6 * self.server_s / self.commands}


def measure_tls_python(lab, server: EmbeddedRedis, depths: list[int], n: int, repeat: int, set_in_batches, tls_client):
    """The notebook's `set_in_batches` at each depth over the plain port and, through its
    `tls_client(host, port, ca_file, password)`, the TLS port, in turns (plain, TLS, plain, ...):
    {depth: {transport: Measurement}} and CPU µs per command {depth: {transport: {...}}}."""
    secured = server.tls_endpoint
    plain = server.endpoint.client()
    secure = tls_client(secured.host, secured.port, secured.ca_file, secured.password)
    runs, cpu = {}, {}
    with server.endpoint.client() as info:
        for depth in depths:
            sets = max(depth, min(n, TLS_ROUND_TRIPS * depth))
            meters = {name: CpuMeter(info) for name in TRANSPORTS}
            timed = lab.measure_interleaved(
                {
                    f"redis-py {name} depth {depth}": meters[name].around(
                        lambda r=r: set_in_batches(r, sets, depth), sets
                    )
                    for name, r in zip(TRANSPORTS, (plain, secure))
                },
                ops=sets,
                repeat=repeat,
                depth=depth,
                client="redis-py",
            )
            for name, m in zip(TRANSPORTS, timed):
                m.params["transport"] = name
            runs[depth] = dict(zip(TRANSPORTS, timed))
            cpu[depth] = {name: meters[name].per_command_us() for name in TRANSPORTS}
    plain.close()
    secure.close()
    return runs, cpu


def measure_tls_java(lab, server: EmbeddedRedis, depths: list[int], n: int, repeat: int):
    """The same with Jedis (ch02-tls, given the TLS server and the plain address): Measurements and CPU
    µs per command, in the shapes of measure_tls_python."""
    plain = server.endpoint
    java = lab.java(
        "ch02-tls",
        n,
        repeat,
        1,
        ",".join(map(str, depths)),
        f"{plain.host}:{plain.port}",
        TLS_ROUND_TRIPS,
        target=server.tls_endpoint,
    )
    runs, cpu = {}, {}
    for mode, m in java.measurements().items():
        depth, name = m.params["depth"], m.params["transport"]
        m.label = f"Jedis {name} depth {depth}"
        runs.setdefault(depth, {})[name] = m
        jvm = m.params.get("client_cpu_s") or []
        client_us = 1e6 * sum(jvm) / (m.ops * len(jvm)) if jvm else None
        cpu.setdefault(depth, {})[name] = {
            "client": client_us,
            "server": 1e6 * java.facts[f"server_cpu_s_{mode}"] / java.facts[f"commands_{mode}"],
        }
    return dict(sorted(runs.items())), dict(sorted(cpu.items()))


def tls_summary(server_facts: dict, py_runs: dict, py_cpu: dict, jedis_runs: dict, jedis_cpu: dict) -> dict:
    """Per client and depth: µs per SET on each transport, what TLS adds in % of the plain time
    (paired by round) and in µs per SET, and each side's CPU µs per SET on each transport."""
    out = {
        "server_version": quantity(0, "count", server_facts["version"]),
        "tls_protocol": quantity(0, "count", server_facts["tls"].split(",")[0]),
    }
    for client, runs, cpu in (("py", py_runs, py_cpu), ("jedis", jedis_runs, jedis_cpu)):
        for depth, pair in runs.items():
            plain, secure = pair["plain"], pair["TLS"]
            for name in TRANSPORTS:
                out[f"{client}_us_{name.lower()}_d{depth}"] = median_figure(pair[name], "us", per_op=True)
                for side in ("client", "server"):
                    out[f"{client}_{side}_cpu_us_{name.lower()}_d{depth}"] = quantity(cpu[depth][name][side], "us")
            ratio = ratio_figure(secure, plain)
            interval = ratio.get("interval") and [100 * (r - 1) for r in ratio["interval"]]
            out[f"{client}_tls_extra_pct_d{depth}"] = quantity(100 * (ratio["value"] - 1), "%", interval=interval)
            # In µs per SET, with the paired ratio's interval over the plain time: judged with its noise.
            per_set = 1e6 * plain.median / plain.ops
            out[f"{client}_tls_extra_us_d{depth}"] = quantity(
                1e6 * (secure.median - plain.median) / plain.ops,
                "us",
                interval=ratio.get("interval") and [per_set * (r - 1) for r in ratio["interval"]],
            )
    return out


def tls_server_facts(server: EmbeddedRedis) -> dict:
    """The section's own server (not the lab's, which the results file's environment describes)."""
    with server.endpoint.client() as client:
        info = client.info("server")
    with resp.connect(server.tls_endpoint) as sock:  # what this machine's OpenSSL and the server agree on
        protocol, cipher = sock.version(), sock.cipher()[0]
    return {
        "build": f"{tls.tls_build().label} ({tls.tls_build().source})",
        "version": info["redis_version"],
        "tls": f"{protocol}, {cipher}, no client certificate (tls-auth-clients no)",
        "cpus": sorted(server.cpus or []),
    }


def tls_params(server_facts: dict, py_cpu: dict, jedis_cpu: dict, depths: list[int]) -> dict:
    return {"depths": depths, "server": server_facts, "redispy_cpu_us": py_cpu, "jedis_cpu_us": jedis_cpu}


def _series(doc: dict, client: str) -> dict:
    """{transport: {depth: Measurement}} of one client, from a saved results document."""
    out: dict = {name: {} for name in TRANSPORTS}
    for m in doc["measurements"]:
        if m.label.startswith(client + " "):
            out[m.params["transport"]][int(m.params["depth"])] = m
    return out


@plots.draws("ch02/tls")
def tls_plot(doc: dict) -> Figure:
    fig, (ax, ax_cpu) = plt.subplots(1, 2, figsize=(12, 4.5))
    cpu_us = {"redis-py": doc["params"]["redispy_cpu_us"], "Jedis": doc["params"]["jedis_cpu_us"]}
    for client, marker in (("redis-py", "o"), ("Jedis", "s")):
        series = _series(doc, client)
        for name, style in (("plain", "-"), ("TLS", "--")):
            runs: dict[int, Measurement] = series[name]
            if not runs:
                continue
            d = sorted(runs)
            ax.loglog(d, [1e6 * runs[x].median / runs[x].ops for x in d], marker + style, label=f"{client}, {name}")
            ax_cpu.loglog(
                d,
                [cpu_us[client][str(x)][name]["server"] for x in d],
                marker + style,
                label=f"redis-server, {client} {name}",
            )
    plots.depth_axis(ax)
    ax.set_ylabel("µs per SET (log)")
    ax.set_title("Time per command: plain against TLS, one connection")
    ax.legend(fontsize=9)
    plots.depth_axis(ax_cpu)
    ax_cpu.set_ylabel("server CPU µs per SET (log)")
    ax_cpu.set_title("The server's CPU per command")
    ax_cpu.legend(fontsize=8)
    return fig


TLS_ALT = (
    "Two log-log charts against pipeline depth: microseconds per SET for redis-py and Jedis over plain TCP "
    "and over TLS, and the server's CPU microseconds per SET for each; the TLS lines sit above the plain "
    "ones and the gap narrows as the depth grows"
)
