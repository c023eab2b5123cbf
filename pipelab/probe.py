"""How fast the machine is at the moment a result is saved: a fixed piece of CPU work and a loopback
ping-pong, recorded beside every result, so that two runs can tell a machine that slowed down from
noise. On the book's shared 2-core VM, two runs of chapter 6 minutes apart found every rate of the
second lower, some by a third: a figure that moved with the probes moved with the machine.
"""

from __future__ import annotations

import statistics
import time

import redis

CPU_LOOP = 200_000  # additions in pure Python: about 5 ms, no allocation, no system call
PINGS = 200  # per sample: about 20 ms on loopback across CPUs
SAMPLES = 5


def cpu_ms() -> float:
    """Median milliseconds of the same loop."""

    def once() -> float:
        start = time.perf_counter()
        total = 0
        for i in range(CPU_LOOP):
            total += i
        return (time.perf_counter() - start) * 1e3

    return statistics.median(once() for _ in range(SAMPLES))


def ping_us(client: redis.Redis) -> float:
    """Median microseconds per PING, one by one on `client`."""

    def once() -> float:
        start = time.perf_counter()
        for _ in range(PINGS):
            client.ping()
        return (time.perf_counter() - start) / PINGS * 1e6

    client.ping()  # the connection, outside the timing
    return statistics.median(once() for _ in range(SAMPLES))


def take(client: redis.Redis) -> dict:
    return {"cpu_loop_ms": round(cpu_ms(), 3), "ping_us": round(ping_us(client), 1)}
