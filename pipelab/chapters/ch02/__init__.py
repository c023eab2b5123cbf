"""Chapter 2, system calls: a module per section of the notebook, in its order; the harness only.

The workloads (the SETs in batches, the GETs in batches, the raw PINGs, the TLS connection) are the
notebook's cells tagged code:… (taught.py), passed in by the notebook. parameters (declared once; the
notebook passes them to the Java example), syscalls (1), depth (2), batches (3), busy_loop (4, with
where the two processes run), raw (5), tls (6), published.
"""

from __future__ import annotations

from .batches import BATCHES_ALT, batches_params, batches_plot, batches_summary, measure_batches
from .busy_loop import (
    BUSY_LOOP_ALT,
    busy_loop_histogram,
    busy_loop_plot,
    busy_loop_summary,
    measure_busy_loop,
    measure_placement,
    percentiles_us,
    ping_latencies,
    pipelined_latencies,
    placement_summary,
    switches_missing,
    switches_text,
)
from .depth import (
    DEPTH_ALT,
    depth_plot,
    depth_series,
    depth_summary,
    gain,
    jedis_share_of_benchmark,
    jvm_cpu_share,
    measure_depth_benchmark,
    measure_depth_java,
    measure_depth_python,
)
from .parameters import (
    BATCH,
    BATCH_REPEAT,
    BENCH_DEPTH,
    BENCH_ROUND_TRIPS,
    BENCH_SECONDS,
    CLIENT_NAME,
    DEPTH_LAT,
    DEPTHS,
    JEDIS_BAR_PCT,
    N_BENCH,
    N_JAVA,
    N_LAT,
    N_PLACE,
    N_PY,
    N_RAW,
    N_STRACE,
    N_SYS,
    N_TLS,
    PLACE_REPEAT,
    PY_ROUND_TRIPS,
    REPEAT,
    SET_KEY,
    SIZES,
    STRACE_DEPTHS,
    SYS_DEPTHS,
    TLS_DEPTHS,
    TLS_ROUND_TRIPS,
    VALUE_BYTES,
    VALUE_KEY,
    java_depths,
)
from .published import CLAIMS, PUBLISHED
from .raw import measure_raw, raw_summary
from .syscalls import (
    SYSCALLS_ALT,
    measure_strace,
    measure_syscalls,
    pid_text,
    strace_table,
    syscalls_plot,
    syscalls_summary,
)
from .tls import (
    TLS_ALT,
    measure_tls_java,
    measure_tls_python,
    tls_params,
    tls_plot,
    tls_server,
    tls_server_facts,
    tls_summary,
)
