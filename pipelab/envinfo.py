"""The environment a result was measured in, recorded beside every result."""
from __future__ import annotations

import os
import platform
import sys
from datetime import datetime, timezone
from importlib import metadata

import redis


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def capture(client: redis.Redis, **extra) -> dict:
    server = client.info("server")
    from redis.utils import HIREDIS_AVAILABLE  # noqa: PLC0415

    env = {
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "redis_version": server.get("redis_version"),
        "redis_mode": server.get("redis_mode"),
        "redis_os": server.get("os"),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "redis_py": _version("redis"),
        "hiredis": _version("hiredis") if HIREDIS_AVAILABLE else None,
        "executable": sys.executable,
    }
    env.update(extra)
    return env
