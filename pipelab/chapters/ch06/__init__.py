"""Chapter 6, the server's side of a pipeline: a module per section of the notebook, in its order.

servers (the builds compared), ceiling (1), io_threads (2), prefetch (3), limits (4), pushes (5), published.
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
    MODEL_ALT,
    MODEL_CORES,
    MODEL_SERVER,
    fit_costs,
    io_summary,
    io_table,
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
    SMALL_SETS,
    cut_pipeline,
    limit_counters,
    limits_server,
    limits_summary,
    limits_table,
    measure_limits,
    outcome,
    run_cut,
    run_huge_request,
    run_many_small,
)
from .prefetch import (
    MGET_KEYS,
    PREFETCH_KEYS,
    PREFETCH_SETTINGS,
    PREFETCH_WORKLOADS,
    RANDOM_KEY,
    measure_prefetch,
    populate,
    prefetch_summary,
    prefetch_table,
)
from .published import CLAIMS, PUBLISHED
from .pushes import (
    EXPECTED_PUSH_REPLIES,
    JAVA_PUSH_LABELS,
    java_push_rows,
    measure_push,
    pipeline_with_invalidation,
    push_summary,
    push_table,
)
from .servers import BENCH_CPUS, SERVER_CPUS, compiler, cpu_count, lineup, missing_servers, running, server_facts
