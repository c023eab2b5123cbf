"""Chapter 10, auto-pipelining across languages: Node.js and Go clients beside Python and Java.

A module per part: parameters (declared once; passed to the Node, Go and Java examples), explicit (1, with
redis-py and Jedis), auto (2, with chapter 7's Lettuce and GLIDE, and the head-of-line case), cluster (3),
node and go (the Node.js and Go examples' runs), toolchains (which are missing), published.
"""

from __future__ import annotations

from .auto import (
    AUTO_ALT,
    auto_plot,
    auto_points,
    auto_summary,
    auto_table,
    hol_cases,
    hol_summary,
    hol_table,
    java_points,
    measure_java_auto,
    measure_python_auto,
)
from .cluster import cluster_facts, cluster_summary, cluster_table
from .common import LANGUAGES, PREFIX, language
from .explicit import (
    explicit_measurements,
    explicit_summary,
    explicit_table,
    measure_jedis_explicit,
    measure_redispy_explicit,
)
from .go import go_facts_summary, measure_go_auto, measure_go_cluster, measure_go_explicit
from .node import (
    batch_wait_summary,
    glide_note,
    measure_node_auto,
    measure_node_cluster,
    measure_node_explicit,
    node_clients,
)
from .parameters import (
    BIG_BYTES,
    CALLERS,
    N_EXPLICIT,
    POINT_MS,
    REPEAT,
    REPEAT_AUTO,
    RTTS_MS,
    VALUE_BYTES,
    WARMUP,
)
from .published import CLAIMS, PUBLISHED
from .toolchains import missing_toolchains, toolchain_note
