"""Where each timed process runs: the server on a CPU of its own, every client on the others.

Left to the scheduler, a ping-pong between client and server sometimes shares one vCPU (no wake-up
of an idle CPU per reply) and sometimes not, and the same 10,000 PINGs took 160 ms or 570 ms on
this book's 2-core VM. So the lab places them: the embedded server on the last CPU it may use, the
notebook's kernel, its JVMs, redis-benchmark and toxiproxy (children inherit the mask) on the rest.
With a single CPU, or PIPELAB_PLACEMENT=off, nothing is pinned, and the results say so; where the
system cannot pin (pipelab.host: macOS), nothing is pinned either, and the lab says why in one line.

Where a CPU waits also matters: an idle vCPU that halts takes tens of microseconds, and a varying
time, to wake for the next reply. So, where the user may, the lab asks the kernel to keep idle CPUs
polling while it runs (a PM QoS latency of 0 µs on /dev/cpu_dma_latency, as latency benchmarks do),
and lets go when the process ends. PIPELAB_CPU_IDLE=default leaves the kernel's choice alone.
"""

from __future__ import annotations

import os
import sys

from . import host

try:
    _ALLOWED = sorted(host.allowed_cpus())  # read at import, before pin_clients narrows this process
except host.Unavailable:
    _ALLOWED = list(range(os.cpu_count() or 1))  # nothing is pinned: every CPU


def usable_cpus() -> list[int]:
    """Every CPU the lab may use, also after this process was pinned to the clients' ones."""
    return list(_ALLOWED)


def unpinnable() -> str | None:
    """Why this system pins nothing (one sentence), or None where it can pin."""
    return host.lacks(host.PINNING)


def enabled() -> bool:
    return len(_ALLOWED) >= 2 and os.environ.get("PIPELAB_PLACEMENT", "on") != "off" and not unpinnable()


def server_cpus() -> set[int] | None:
    return {_ALLOWED[-1]} if enabled() else None


def client_cpus() -> set[int] | None:
    return set(_ALLOWED[:-1]) if enabled() else None


def pin(pid: int, cpus: set[int]) -> None:
    """Every thread of `pid` (a new thread inherits its creator's mask, an old one keeps its own)."""
    host.pin(pid, cpus)


def pin_clients() -> None:
    """This process, and so whatever it starts from now on, onto the clients' CPUs, or says why not."""
    if enabled():
        pin(os.getpid(), client_cpus())
    elif reason := unpinnable():
        print(f"pipelab: CPU placement skipped: {reason}; server and clients run unpinned.", file=sys.stderr)


QOS_DEVICE = host.QOS_DEVICE
_QOS: list = []  # the open request: the kernel honours it while the file stays open


def keep_cpus_awake() -> bool:
    """Hold a 0 µs PM QoS request (idle CPUs poll instead of halting); False where not allowed."""
    if _QOS:
        return True
    if os.environ.get("PIPELAB_CPU_IDLE", "poll") != "poll":
        return False
    try:
        request = host.cpu_latency_request(0)  # held open: closing it ends the request
    except (OSError, host.Unavailable):  # no such device (macOS), or not root
        return False
    _QOS.append(request)
    return True


def let_cpus_sleep() -> None:
    """Drop the request: idle CPUs halt again, as the kernel would have them."""
    while _QOS:
        _QOS.pop().close()


def cpu_idle() -> str:
    """How idle CPUs wait while the lab measures, as the results record it."""
    if _QOS:
        return f"polling (PM QoS 0 µs on {QOS_DEVICE})"
    if os.environ.get("PIPELAB_CPU_IDLE", "poll") != "poll":
        return "the kernel's default (PIPELAB_CPU_IDLE=default)"
    if reason := host.lacks(host.PM_QOS):
        return f"the system's default: {reason}"
    return f"the kernel's default ({QOS_DEVICE} not writable here)"


def describe(server_pid: int | None = None) -> dict:
    """The placement as the results record it: the CPUs each side may use, as they are now."""

    reason = unpinnable()

    def mask(pid: int) -> list[int] | None:
        return None if reason else sorted(host.allowed_cpus(pid))

    unpinned = f"unpinned: {reason}" if reason else "unpinned"
    out = {
        "policy": "server and clients on separate CPUs" if enabled() else unpinned,
        "client_cpus": mask(0),
        "cpu_idle": cpu_idle(),
    }
    if server_pid is not None:
        try:
            out["server_cpus"] = mask(server_pid)
        except OSError:
            out["server_cpus"] = None
    return out
