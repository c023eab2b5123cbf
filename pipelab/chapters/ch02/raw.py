"""5. Raw RESP: one write, many writes, or a round trip each."""

from __future__ import annotations

import socket

from ...resp import connect, encode, read_bytes
from ...results import median_figure, quantity


# --8<-- [start:raw]
def pings_one_write(sock: socket.socket, n: int) -> None:
    sock.sendall(encode("PING") * n)  # every command in one buffer, one write
    read_bytes(sock, len(b"+PONG\r\n") * n)


def pings_many_writes(sock: socket.socket, n: int) -> None:
    one = encode("PING")
    for _ in range(n):
        sock.sendall(one)  # still no waiting, but one write per command
    read_bytes(sock, len(b"+PONG\r\n") * n)


def pings_round_trips(sock: socket.socket, n: int) -> None:
    one = encode("PING")
    for _ in range(n):
        sock.sendall(one)
        read_bytes(sock, len(b"+PONG\r\n"))  # wait for each reply: no pipelining


# --8<-- [end:raw]


def measure_raw(lab, counters, n: int, repeat: int) -> tuple[dict, dict]:
    runs, reads = {}, {}
    sock = connect(lab.endpoint)
    for name, fn in (
        ("one write", pings_one_write),
        ("many writes", pings_many_writes),
        ("round trips", pings_round_trips),
    ):
        with counters.measure() as delta:
            runs[name] = lab.measure(f"raw {name}", lambda: fn(sock, n), ops=n, repeat=repeat)
        reads[name] = delta.per_command("total_reads_processed")
    sock.close()
    return runs, reads


def raw_summary(runs: dict, reads: dict) -> dict:
    one = runs["one write"].median
    return {
        "raw_one_write_s": quantity(one, "s"),
        "raw_many_writes_s": median_figure(runs["many writes"]),
        "raw_round_trips_s": median_figure(runs["round trips"]),
        "raw_reads_one_write": quantity(reads["one write"], "num"),
        "raw_reads_many_writes": quantity(reads["many writes"], "num"),
        "raw_reads_round_trips": quantity(reads["round trips"], "num"),
        "raw_many_vs_one": quantity(runs["many writes"].median / one, "x"),
        "raw_trips_vs_one": quantity(runs["round trips"].median / one, "x"),
    }
