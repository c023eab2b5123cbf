"""Chapter 6, the server's side of a pipeline: a module per section of the notebook, in its order.

servers (the builds compared), ceiling (1), io_threads (2), prefetch (3), limits (4), pushes (5), published.
The pipelines of sections 4 and 5 are the notebook's cells tagged code:… (taught.py), passed in by it.
"""

from __future__ import annotations

from .ceiling import (
    CEILING_ALT,
    GRID,
    JEDIS_N,
    N_MAX,
    REPLY_CLIENT,
    REPLY_N,
    ROUND_TRIPS,
    SET_COMMAND,
    bench_once,
    ceiling_plot,
    ceiling_summary,
    ceiling_table,
    interleaved,
    measure_ceiling,
    measure_ceiling_jedis,
    measure_reply_memory,
    rate,
    requests_for,
    to_measurements,
)
from .common import COMPARED, JEMALLOC, KEY, LABELS, PLATEAU, PREFIX, REPEAT, benchmark_missing
from .io_threads import (
    IO_GRID,
    IO_MODES,
    IO_SERVERS,
    IO_SETTINGS,
    MODEL_ALT,
    MODEL_CORES,
    MODEL_SERVER,
    fit_costs,
    io_cpu_missing,
    io_settings,
    io_summary,
    io_table,
    io_thread_active_s,
    io_thread_cpu_s,
    measure_io_threads,
    measure_io_threads_remote,
    model_plot,
    modelled_rate,
)
from .limits import (
    BIG_VALUE,
    CLIENT_MEMORY_LIMIT,
    CUT_PAIRS,
    DEFAULTS,
    HUGE_VALUE,
    LIMIT_COUNTERS,
    OUTPUT_LIMIT,
    QBUF,
    QUERY_LIMIT,
    STALL_SECONDS,
    STALL_SETS,
    STALL_VALUE,
    STALLS,
    limit_counters,
    limits_server,
    limits_summary,
    limits_table,
    measure_limits,
    outcome,
    run_cut,
    run_huge_request,
    run_stalled,
    stalled_rows,
    stalled_table,
)
from .prefetch import (
    MGET_KEYS,
    PREFETCH_COUNTERS,
    PREFETCH_KEYS,
    PREFETCH_LABELS,
    PREFETCH_SETTINGS,
    PREFETCH_WORKLOADS,
    RANDOM_KEY,
    measure_prefetch,
    populate,
    prefetch_counters,
    prefetch_summary,
    prefetch_table,
    prefetched_share,
)
from .published import CLAIMS, PUBLISHED
from .pushes import (
    EXPECTED_PUSH_REPLIES,
    GLIDE_EXPECTED_REPLIES,
    JAVA_PUSH_LABELS,
    client_info_resp,
    glide_push_row,
    java_push_rows,
    measure_push,
    push_summary,
    push_table,
)
from .servers import BENCH_CPUS, SERVER_CPUS, compiler, cpu_count, lineup, missing_servers, running, server_facts
