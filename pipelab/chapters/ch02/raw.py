"""5. Raw RESP: one write, many writes, or a round trip each. The three ways are the notebook's cell
tagged code:raw, passed in by the notebook."""

from __future__ import annotations

from ...resp import connect
from ...results import median_figure, quantity


def measure_raw(lab, counters, n: int, repeat: int, pings_one_write, pings_many_writes, pings_round_trips):
    """The notebook's three ways, each `fn(sock, n)` on one raw socket: {name: Measurement} and the
    server's reads per command {name: float}."""
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
