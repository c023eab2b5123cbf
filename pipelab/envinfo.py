"""The environment a result was measured in, recorded beside every result."""

from __future__ import annotations

import hashlib
import os
import platform
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import redis
from redis.utils import HIREDIS_AVAILABLE

from . import host
from .paths import REPO


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    try:
        return host.cpu_model()
    except (OSError, host.Unavailable):
        return platform.processor() or "unknown"


def lock_sha256() -> str | None:
    """The lock file's hash: which exact Python packages measured this."""
    lock = REPO / "uv.lock"
    return hashlib.sha256(lock.read_bytes()).hexdigest() if lock.exists() else None


def io_threads(client: redis.Redis) -> int | None:
    """The server's io-threads setting (read-only; None where CONFIG is disabled, e.g. a managed Redis)."""
    try:
        value = client.config_get("io-threads").get("io-threads")
    except redis.ResponseError:
        return None
    return int(value) if value is not None else None


def interpreter() -> str:
    """The Python that measured, without the machine's own paths: relative to the repository when
    it is the book's venv, else its name."""
    executable = Path(sys.executable)
    return executable.relative_to(REPO).as_posix() if executable.is_relative_to(REPO) else executable.name


def capture(client: redis.Redis, **extra) -> dict:
    server = client.info("server")
    memory = client.info("memory")

    env = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "server": server.get("server_name") or "redis",  # Valkey names itself; Redis does not
        "redis_version": server.get("valkey_version") or server.get("redis_version"),  # Valkey says 7.2.4 there
        "redis_mode": server.get("redis_mode"),
        "io_threads": io_threads(client),
        "mem_allocator": memory.get("mem_allocator"),  # jemalloc or libc: it moves the ceiling
        "redis_os": server.get("os"),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "redis_py": _version("redis"),
        "hiredis": _version("hiredis") if HIREDIS_AVAILABLE else None,
        "valkey_glide": _version("valkey-glide"),
        "executable": interpreter(),
        "lock_sha256": lock_sha256(),
    }
    env.update(extra)
    return env
