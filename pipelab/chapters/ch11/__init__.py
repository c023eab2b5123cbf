"""Chapter 11, Rust: redis-rs and fred beside the book's other clients.

A module per part: runs (the Rust examples' runs, and the one sentence when cargo is missing), explicit
(1, chapter 1's PINGs and chapter 3's SADD job beside redis-py and Jedis; a long pipeline against the
response timeout), curve (2, the multiplexed connection, ConnectionManager and fred's auto-pipelining on
chapter 10's curve; TCP_NODELAY off and on) and cluster (3, the cluster
pipeline: its split, one failing command, a lost master).
"""

from __future__ import annotations

from ..ch05.lost import N_LOST, lost_summary, lost_table  # chapter 5's lost master, with Rust's clients
from .cluster import (
    N_SPLIT,
    errors_summary,
    errors_table,
    lost_rows,
    measure_rust_cluster,
    split_summary,
    split_table,
)
from .curve import (
    CURVE_ALT,
    PAIRS,
    chapter10_curve,
    curve_plot,
    curve_summary,
    measure_rust_auto,
    measure_rust_nodelay,
    nodelay_summary,
)
from .explicit import explicit_summary, measure_rust_explicit, measure_rust_timeout, timeout_summary, timeout_table
from .runs import PREFIX, rust_clients, rust_code, rust_note
