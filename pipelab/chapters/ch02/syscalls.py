"""1. Reads and writes per command, counted by the server and by strace. The SETs are the notebook's
cell tagged code:depth, passed in by the notebook."""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import redis
from matplotlib.figure import Figure

from ... import host, observe, plots
from ...results import md_table, quantity
from .parameters import STRACE_DEPTHS


def measure_syscalls(counters, r: redis.Redis, depths: list[int], n: int, set_in_batches) -> dict:
    """Server reads and writes per command at each depth, from INFO counter deltas, for the notebook's
    `set_in_batches(r, n, depth)`."""
    per_command = {}
    for depth in depths:
        sets = max(n, 2 * depth)
        with counters.measure() as delta:
            set_in_batches(r, sets, depth)
        per_command[depth] = {
            "reads": delta.per_command("total_reads_processed"),
            "writes": delta.per_command("total_writes_processed"),
            "n": sets,
        }
    return per_command


def pid_text(server_pid: int | None) -> str:
    """The server's pid as the notebook prints it, or why this machine cannot see it."""
    if server_pid:
        return str(server_pid)
    return host.lacks(host.PROC) or "not visible (remote or container)"


def measure_strace(r: redis.Redis, server_pid: int | None, n: int, set_in_batches) -> tuple[dict, str | None]:
    """System calls per command of the server and of this process's main thread, at depth 1 and 1,000."""
    rows = {}
    try:
        if server_pid is None:  # where strace itself is missing, say that first
            raise observe.StraceUnavailable(host.lacks(host.STRACE) or "the server is not a process on this machine")
        for depth in STRACE_DEPTHS:
            with (
                observe.strace_count(server_pid) as server,
                observe.strace_count(os.getpid(), all_threads=False, only="%network") as client,
            ):
                set_in_batches(r, n, depth)
            rows[depth] = {
                "server read": server.get("read", 0) / n,
                "server write": server.get("write", 0) / n,
                "server epoll_wait": server.get("epoll_wait", 0) / n,
                "client sendto": client.get("sendto", 0) / n,
                "client recvfrom": client.get("recvfrom", 0) / n,
            }
    except observe.StraceUnavailable as err:
        return {}, f"strace skipped: {err}"
    return rows, None


def strace_table(rows: dict) -> str:
    low, high = STRACE_DEPTHS
    return md_table(
        ["system calls per command", f"depth {low:,}", f"depth {high:,}"],
        [[name, f"{rows[low][name]:.3f}", f"{rows[high][name]:.4f}"] for name in rows[low]],
    )


@plots.draws("ch02/syscalls")
def syscalls_plot(doc: dict) -> Figure:
    per_command = {int(depth): row for depth, row in doc["params"]["per_command"].items()}  # JSON keys are text
    fig, ax = plt.subplots()
    depths = sorted(per_command)
    ax.loglog(depths, [per_command[d]["reads"] for d in depths], "o-", label="server read() per command")
    ax.loglog(depths, [per_command[d]["writes"] for d in depths], "s--", label="server write() per command")
    ax.loglog(depths, [1 / d for d in depths], ":", color=plots.COLORS["bound"], label="1 / depth")
    plots.depth_axis(ax)
    ax.set_ylabel("system calls per command (log)")
    ax.set_title("The server's reads and writes per command against pipeline depth")
    ax.legend()
    return fig


SYSCALLS_ALT = "Log-log chart: server reads and writes per command fall as 1/depth as the pipeline deepens"


def syscalls_summary(per_command: dict, strace_rows: dict) -> dict:
    def straced(depth, name):
        return strace_rows[depth][name] if strace_rows else None

    return {
        "reads_per_cmd_depth1": quantity(per_command[1]["reads"], "num"),
        "writes_per_cmd_depth1": quantity(per_command[1]["writes"], "num"),
        "reads_per_cmd_depth1000": quantity(per_command[1_000]["reads"], "num"),
        "writes_per_cmd_depth1000": quantity(per_command[1_000]["writes"], "num"),
        "commands_per_read_depth1000": quantity(1 / per_command[1_000]["reads"], "num"),
        "strace_client_sends_depth1": quantity(straced(1, "client sendto"), "num"),
        "strace_server_epoll_depth1": quantity(straced(1, "server epoll_wait"), "num"),
        "strace_server_epoll_depth1000": quantity(straced(1_000, "server epoll_wait"), "num"),
    }
