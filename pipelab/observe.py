"""Looking at the server and the processes while a benchmark runs: counters, CPU, context switches,
system calls (strace), the reply buffer, and redis-benchmark as the server's own ceiling."""

from __future__ import annotations

import re
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import redis

from . import host
from .server import Endpoint

COUNTERS = (
    "total_commands_processed",
    "total_reads_processed",
    "total_writes_processed",
    "used_cpu_user",
    "used_cpu_sys",
)


def server_counters(client: redis.Redis) -> dict:
    info = client.info("stats")
    info.update(client.info("cpu"))
    return {key: float(info[key]) for key in COUNTERS}


@dataclass
class Delta:
    """What the server counted while a block ran, less what asking for the counters costs."""

    values: dict = field(default_factory=dict)
    wall_s: float = 0.0
    client_cpu_s: float = 0.0

    def per_command(self, key: str) -> float:
        return self.values[key] / self.values["total_commands_processed"]

    @property
    def server_cpu_s(self) -> float:
        return self.values["used_cpu_user"] + self.values["used_cpu_sys"]


class Counters:
    """Server counter deltas around a block, read on a connection of their own.

    The two INFO calls are themselves commands, reads and writes; their share is measured once
    on an idle block and subtracted, so a delta counts only the benchmark.
    """

    def __init__(self, endpoint: Endpoint):
        self.client = endpoint.client()
        self.overhead = {key: 0.0 for key in COUNTERS}
        with self.measure() as idle:
            pass
        self.overhead = {key: idle.values[key] if not key.startswith("used_cpu") else 0.0 for key in COUNTERS}

    @contextmanager
    def measure(self):
        delta = Delta()
        before = server_counters(self.client)
        cpu0, t0 = time.process_time(), time.perf_counter()
        yield delta
        delta.wall_s = time.perf_counter() - t0
        delta.client_cpu_s = time.process_time() - cpu0
        after = server_counters(self.client)
        delta.values = {key: after[key] - before[key] - self.overhead[key] for key in COUNTERS}

    def close(self) -> None:
        self.client.close()


# --- processes ------------------------------------------------------------------------------


def local_server_pid(client: redis.Redis) -> int | None:
    """The server's pid if it runs on this machine (not in a container or elsewhere)."""
    pid = client.info("server").get("process_id")
    try:
        return int(pid) if host.process_name(pid).startswith(("redis-server", "valkey-server")) else None
    except (OSError, TypeError, ValueError, host.Unavailable):  # Unavailable: no /proc to tell by
        return None


context_switches = host.context_switches


# --- strace ---------------------------------------------------------------------------------


class StraceUnavailable(Exception):
    pass


_STRACE_ROW = re.compile(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:(\d+)\s+)?(\w+)\s*$")


def parse_strace_summary(text: str) -> dict[str, int]:
    """Calls per syscall from `strace -c` output."""
    calls = {}
    for line in text.splitlines():
        match = _STRACE_ROW.match(line)
        if match and match.group(3) != "total":
            calls[match.group(3)] = int(match.group(1))
    return calls


ATTACH_S = 10  # how long strace may take to attach on a busy machine


@contextmanager
def strace_count(pid: int, *, all_threads: bool = True, only: str | None = None):
    """Count the system calls of `pid` while the block runs: all its threads, or its main thread only
    (a notebook kernel's other threads talk to Jupyter, not to Redis); `only` is strace's -e trace=."""
    try:
        host.strace()
    except host.Unavailable as err:
        raise StraceUnavailable(str(err)) from None
    argv = (
        ["strace", "-c", "-p", str(pid)] + (["-f"] if all_threads else []) + (["-e", f"trace={only}"] if only else [])
    )
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        proc = subprocess.Popen(argv + ["-o", out.name], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # The work starts once the kernel says strace holds the threads: a fixed wait once counted nothing.
        deadline = time.monotonic() + ATTACH_S
        while proc.poll() is None and not host.traced(pid, all_threads) and time.monotonic() < deadline:
            time.sleep(0.02)
        if proc.poll() is not None:
            reason = (proc.stderr.read() or "").strip().splitlines()
            raise StraceUnavailable(
                f"strace cannot attach to pid {pid}: {reason[-1] if reason else 'no reason given'}"
                " (ptrace not permitted here)"
            )
        if not host.traced(pid, all_threads):
            proc.kill()
            proc.wait()
            raise StraceUnavailable(f"strace did not attach to pid {pid} within {ATTACH_S} s (the machine is busy)")
        result: dict[str, int] = {}
        try:
            yield result
        finally:
            proc.send_signal(signal.SIGINT)  # detach; strace then writes its summary
            proc.wait(timeout=30)
            result.update(parse_strace_summary(out.read()))


# --- the reply buffer -----------------------------------------------------------------------


@contextmanager
def reply_buffer_peak(endpoint: Endpoint, client_name: str, every_s: float = 0.002):
    """Sample CLIENT LIST and INFO memory while the block runs; the peaks seen land in the dict."""
    peaks = {"omem": 0, "tot_mem": 0, "used_memory": 0, "samples": 0}
    stop = threading.Event()
    watcher = endpoint.client()
    base_memory = watcher.info("memory")["used_memory"]

    def sample():
        while not stop.is_set():
            for entry in watcher.client_list():
                if entry.get("name") == client_name:
                    peaks["omem"] = max(peaks["omem"], int(entry["omem"]))
                    peaks["tot_mem"] = max(peaks["tot_mem"], int(entry["tot-mem"]))
            peaks["used_memory"] = max(peaks["used_memory"], watcher.info("memory")["used_memory"] - base_memory)
            peaks["samples"] += 1
            stop.wait(every_s)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peaks
    finally:
        stop.set()
        thread.join()
        watcher.close()


# --- redis-benchmark ------------------------------------------------------------------------


BENCHMARK_NO_PASSWORD = (
    "redis-benchmark takes a password only on its command line, where `ps` shows it to every user "
    "of this machine; the lab does not run it against a password-protected server"
)


class BenchmarkUnavailable(Exception):
    pass


@dataclass
class BenchmarkRun:
    rps: float  # requests per second, as redis-benchmark reports them
    wall_s: float
    cpu_s: float  # the load generator's own CPU time (user + system)


def run_benchmark(
    endpoint: Endpoint,
    *command: str,
    depth: int,
    requests: int,
    clients: int = 1,
    keyspace: int | None = None,
    cpus: set[int] | None = None,
) -> BenchmarkRun:
    """One redis-benchmark run of `command` at pipeline depth `depth` from `clients` connections,
    optionally pinned to `cpus`; `keyspace` replaces each __rand_int__ in the command by a random
    number below it. `requests` is rounded up to whole pipelines (the rate is what a caller reads)."""
    # redis-benchmark 7.0 issues whole pipelines, so its count of finished requests overshoots a -n
    # that is not a multiple of -P; when its 250 ms timer then fires as the last client leaves, it
    # reads that overshoot as "All clients disconnected... aborting." and exits 1 (seen here).
    requests = -(-requests // depth) * depth
    tool = shutil.which("redis-benchmark")
    if not tool:
        raise BenchmarkUnavailable("redis-benchmark is not installed (Debian: apt-get install redis-tools)")
    argv = [
        tool,
        "-h",
        endpoint.host,
        "-p",
        str(endpoint.port),
        "-c",
        str(clients),
        "-n",
        str(requests),
        "-P",
        str(depth),
        "--csv",
        *(["-r", str(keyspace)] if keyspace else []),
        *command,
    ]
    if endpoint.password is not None:
        raise BenchmarkUnavailable(BENCHMARK_NO_PASSWORD)
    if endpoint.tls:
        argv[1:1] = ["--tls", *(["--cacert", endpoint.ca_file] if endpoint.ca_file else [])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=host.before_exec(cpus),
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rows = [line for line in done.stdout.splitlines() if line.startswith('"') and not line.startswith('"test"')]
    if done.returncode != 0 or not rows:
        raise BenchmarkUnavailable(f"redis-benchmark failed: {(done.stderr or done.stdout).strip()[-200:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return BenchmarkRun(float(rows[-1].split(",")[1].strip('"')), wall, cpu)


def redis_benchmark(endpoint: Endpoint, *command: str, depth: int, requests: int, clients: int = 1) -> float:
    """Requests/s that redis-benchmark reaches for `command` at pipeline depth `depth`."""
    return run_benchmark(endpoint, *command, depth=depth, requests=requests, clients=clients).rps


# --- what went over the wire ----------------------------------------------------------------


def command_stats(client: redis.Redis) -> dict[str, tuple[int, float]]:
    """(calls, total microseconds) per command name since the server started, from INFO commandstats."""
    return {
        name.removeprefix("cmdstat_"): (int(stats["calls"]), float(stats["usec"]))
        for name, stats in client.info("commandstats").items()
    }


def command_calls(client: redis.Redis) -> dict[str, int]:
    """Calls per command name since the server started."""
    return {name: calls for name, (calls, _) in command_stats(client).items()}


@contextmanager
def wire(endpoint: Endpoint):
    """The commands the server executed while the block ran (less the INFO readings themselves)."""
    reader = endpoint.client()
    before = command_calls(reader)
    calls: dict[str, int] = {}
    try:
        yield calls
    finally:
        after = command_calls(reader)
        reader.close()
        calls.update(
            {
                name: n - before.get(name, 0)
                for name, n in after.items()
                if n - before.get(name, 0) > 0 and name != "info"
            }
        )
