"""What the lab asks of the operating system, answered in one place.

On Linux each answer comes from where it always did: the CPUs a process may use and pinning it to
them (sched_getaffinity, sched_setaffinity), a process's name, threads, context switches, memory
map and its threads' CPU time, and the CPU model (all from /proc), the first ephemeral port
(/proc/sys/net/ipv4/ip_local_port_range), a child stopped with the lab (prctl's PR_SET_PDEATHSIG,
through libc.so.6), idle CPUs kept polling (a PM QoS request on /dev/cpu_dma_latency), Debian's
libjemalloc preloaded into a server (LD_PRELOAD), and strace.

Where a facility is missing (macOS has none of them, some containers have no /proc), a function
that needs it raises Unavailable, whose message is one sentence, and lacks() gives the same sentence
without trying. Each caller turns it into the skip the book prints for a missing tool: the figure
that needs the facility is left out, never guessed.

PIPELAB_HOST=portable makes every facility above unavailable on Linux too, as on a Mac (unset, or
any other value: use what this system has). tests/test_host.py runs the harness that way, so what
a reader without Linux gets is tested without a Mac. No other module reads /proc or calls a
Linux-only function.
"""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
import signal
import struct
import sys

from .errors import LabError

MODE_VAR = "PIPELAB_HOST"

# The facilities, by the name a skip sentence gives them.
PINNING = "pinning a process to CPUs (sched_setaffinity)"
PROC = "/proc"
DIE_WITH_PARENT = "stopping a server with the lab (prctl)"
QOS_DEVICE = "/dev/cpu_dma_latency"
PM_QOS = f"the PM QoS device {QOS_DEVICE}"
PRELOAD = "preloading a library into a server (LD_PRELOAD)"
STRACE = "strace"


class Unavailable(LabError):
    """A facility this system lacks, or PIPELAB_HOST=portable hides; str(err) is one sentence."""


def portable() -> bool:
    return os.environ.get(MODE_VAR) == "portable"


def _load_prctl():
    """libc's prctl, loaded at import in the parent: a child of a threaded kernel must not dlopen after fork."""
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except OSError:
        return None


_PRCTL = _load_prctl()
PR_SET_PDEATHSIG = 1

_ON_LINUX = sys.platform.startswith("linux")
_PRESENT = {
    PINNING: lambda: hasattr(os, "sched_setaffinity"),
    PROC: lambda: os.path.isdir("/proc/self"),
    DIE_WITH_PARENT: lambda: _PRCTL is not None,
    PM_QOS: lambda: _ON_LINUX,  # a Linux without the device or the right to it: OSError, as before
    PRELOAD: lambda: _ON_LINUX,
    STRACE: lambda: _ON_LINUX,  # installed or not is another sentence (strace())
}


def lacks(facility: str) -> str | None:
    """Why `facility` (one of the names above) is not available here, in one sentence; None if it is."""
    if portable():
        return f"{facility} is not available here ({MODE_VAR}=portable)"
    if not _PRESENT[facility]():
        return f"{facility} is not available on this system"
    return None


def _need(facility: str) -> None:
    if reason := lacks(facility):
        raise Unavailable(reason)


def note() -> str | None:
    """One sentence naming every facility this system lacks, for the start of a book run; None on Linux."""
    missing = [name for name in _PRESENT if lacks(name)]
    if not missing:
        return None
    where = f"here ({MODE_VAR}=portable)" if portable() else "on this system"
    return f"not available {where}: {'; '.join(missing)}; the figures that need them are skipped, each with a sentence."


# --- CPU placement --------------------------------------------------------------------------


def allowed_cpus(pid: int = 0) -> set[int]:
    """The CPUs `pid` (0: this process) may run on."""
    _need(PINNING)
    return os.sched_getaffinity(pid)


def pin(pid: int, cpus: set[int]) -> None:
    """Every thread of `pid` onto `cpus` (a new thread inherits its creator's mask, an old one keeps its own)."""
    _need(PINNING)
    for task in _threads(pid) or [pid]:
        try:
            os.sched_setaffinity(task, cpus)
        except OSError:  # a thread that ended meanwhile
            pass


def before_exec(cpus: set[int] | None = None, die_with_parent: bool = False):
    """What a child runs between fork and exec (subprocess's preexec_fn), or None if nothing: stop when
    the lab is killed outright, so no server is orphaned, and run on `cpus`. Each only where this
    system has it; decided here in the parent, so the child makes one or two system calls and
    imports or allocates nothing after fork."""
    prctl = _PRCTL if die_with_parent and not lacks(DIE_WITH_PARENT) else None
    pinned = cpus if cpus and not lacks(PINNING) else None  # unpinned where placement says it cannot pin
    if not (prctl or pinned):
        return None

    def run() -> None:
        if prctl:
            prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if pinned:
            os.sched_setaffinity(0, pinned)

    return run


def cpu_latency_request(microseconds: int = 0):
    """A PM QoS request for idle CPUs' wake-up latency (0: they poll instead of halting): the kernel
    honours it while the returned file stays open. OSError where the user may not (not root)."""
    _need(PM_QOS)
    request = open(QOS_DEVICE, "wb", buffering=0)  # held open by the caller: closing it ends the request
    request.write(struct.pack("i", microseconds))
    return request


# --- processes (/proc) ----------------------------------------------------------------------


def _threads(pid: int) -> list[int]:
    """The threads of `pid` (none once it has ended)."""
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def threads_under(pid: int) -> list[int]:
    """Every thread of `pid` and of its descendants, however deep (a nice value is per thread, and a
    server started below keeps a process group of its own)."""
    _need(PROC)
    children: dict[int, list[int]] = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.split("/")[2]))
    todo, tids = [pid], []
    while todo:
        proc = todo.pop()
        tids += _threads(proc)
        todo += children.get(proc, [])
    return tids


def traced(pid: int, all_threads: bool = True) -> bool:
    """Whether a tracer holds `pid`: its main thread, or every one of its threads (TracerPid in each
    /proc/<pid>/task/<tid>/status); False once it has ended."""
    _need(PROC)
    for tid in _threads(pid) if all_threads else [pid]:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as status:
                if not any(line.startswith("TracerPid:") and line.split()[1] != "0" for line in status):
                    return False
        except OSError:  # a thread that ended meanwhile holds nothing back
            continue
    return bool(_threads(pid))


def process_name(pid: int | str) -> str:
    """The command name the kernel keeps for `pid` (/proc/<pid>/comm)."""
    _need(PROC)
    with open(f"/proc/{pid}/comm") as comm:
        return comm.read()


def context_switches(pid: int | str = "self") -> dict:
    """Voluntary switches (the process blocked, e.g. in read) and involuntary ones (preempted)."""
    _need(PROC)
    out = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if "ctxt_switches" in line:
                name, value = line.split(":")
                out[name.strip()] = int(value)
    return out


def mappings(pid: int) -> str:
    """The files mapped into `pid`'s memory, as /proc/<pid>/maps lists them."""
    _need(PROC)
    with open(f"/proc/{pid}/maps") as maps:
        return maps.read()


def threads_cpu_s(pid: int, name_prefix: str) -> float:
    """CPU seconds (user and system) the threads of `pid` whose name starts with `name_prefix` have used so far."""
    _need(PROC)
    ticks = 0
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(f"{task}/comm") as comm, open(f"{task}/stat") as stat:
                if comm.read().startswith(name_prefix):
                    fields = stat.read().rsplit(")", 1)[1].split()
                    ticks += int(fields[11]) + int(fields[12])  # utime and stime, stat's 14th and 15th fields
        except OSError:  # a thread that ended meanwhile
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


# --- the machine ----------------------------------------------------------------------------


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo's first "model name"); Unavailable where it names none."""
    _need(PROC)
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    raise Unavailable("/proc/cpuinfo names no CPU model")


def ephemeral_low() -> int:
    """The first port the kernel hands out to outgoing connections (ip_local_port_range)."""
    _need(PROC)
    with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
        return int(ports.read().split()[0])


def jemalloc() -> str | None:
    """Debian's libjemalloc2, to preload into a server; None where it is not installed."""
    _need(PRELOAD)
    return next(iter(sorted(glob.glob("/usr/lib/*/libjemalloc.so.2"))), None)


def strace() -> str:
    """strace's path, or Unavailable saying why there is none."""
    _need(STRACE)
    found = shutil.which("strace")
    if not found:
        raise Unavailable("strace is not installed (apt-get install strace)")
    return found
