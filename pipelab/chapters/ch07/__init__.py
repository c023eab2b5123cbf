"""Chapter 7, pipelining without asking: a module per section of the notebook, in its order.

gather (1), stall (1, the event loop), mux (2, Java), glide (3) and glide_java (3, Java), variadic (4),
cluster_keys (4, the cluster), watch (5, Python and Java), published (the sources' figures and the claims).
"""

from __future__ import annotations

from .cluster_keys import (
    CLUSTER_KEYS,
    cluster_summary,
    cluster_table,
    master_calls,
    measure_cluster,
)
from .common import PREFIX, REPEAT, LoopThread
from .gather import (
    DEFAULT_POOL_N,
    GATHER_N,
    GATHER_RTTS,
    POOL_CAP_THREADS,
    POOL_HOLD_S,
    POOLS,
    count_pool_requests,
    default_pool_outcome,
    gather_summary,
    gather_table,
    gather_tag,
    measure_gather,
    pool_outcome,
    threads_past_the_pool,
)
from .glide import (
    GLIDE_CLUSTER_CALLS,
    GLIDE_CLUSTER_SETS,
    GLIDE_HOLD_S,
    GLIDE_INFLIGHT_N,
    GLIDE_SADD_N,
    GLIDE_TIMEOUT_N,
    cluster_batches,
    glide_batches,
    glide_client,
    glide_cluster_client,
    glide_connections,
    glide_inflight,
    glide_summary,
    glide_table,
    inflight_summary,
    measure_glide,
    measure_glide_cluster,
    measure_glide_gather,
    node_counters,
    settled_count,
)
from .glide_java import GLIDE_JAVA_TIMEOUT_N, glide_java_summary, java_clients_table, measure_glide_java
from .mux import (
    HOL_CASES,
    HOL_LIST,
    HOL_MS,
    HOL_READERS,
    MUX_CLIENTS,
    MUX_N,
    MUX_REPEAT,
    MUX_THREADS,
    hol_table,
    measure_mux,
    mux_summary,
    mux_table,
)
from .published import CLAIMS, PUBLISHED
from .stall import (
    STALL_ALT,
    STALL_CHUNKS,
    STALL_ONCE,
    STALL_REPEAT,
    STALL_SIZES,
    TICK_S,
    measure_stall,
    stall_plot,
    stall_summary,
    stall_table,
    ticker,
    worst_lag,
)
from .variadic import (
    COUNTED,
    REPLY_CLIENT,
    REPLY_KEYS,
    VALUE,
    VARIADIC,
    VARIADIC_ALT,
    VARIADIC_REPEAT,
    VARIADIC_SIZES,
    measure_reply_memory,
    measure_variadic,
    variadic_plot,
    variadic_summary,
    variadic_table,
)
from .watch import (
    INCREMENTS,
    MODES,
    WRITERS,
    contend,
    lost,
    measure_watch,
    measure_watch_java,
    retries_per_increment,
    watch_java_summary,
    watch_java_table,
    watch_summary,
    watch_table,
)
