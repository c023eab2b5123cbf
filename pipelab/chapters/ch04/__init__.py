"""Chapter 4, pitfalls: a module per section of the notebook, in its order.

instruments (what the sections observe), parameters (declared once; the notebook passes them to the Java
examples), lrem (1), interleave (2), rcw (3), errors (4), drop (5), blocking (6), timeouts (7), published.
"""

from __future__ import annotations

from .blocking import blocking_cases, blocking_summary, blocking_table, pipeline_with_blpop
from .common import PREFIX, no_retry_client, restore_oldest
from .drop import drop_scenarios, drop_summary, drop_table, incr_exactly_once, incr_pipeline, set_pipeline
from .errors import bad_command_cases, errors_summary, errors_table, pipeline_with_bad_command
from .instruments import (
    Probe,
    incr_command_bytes,
    last_slowlog_id,
    net_input_bytes,
    seed_numbers,
    server_time,
    slowlog_entries,
    slowlog_threshold,
)
from .interleave import (
    foreign_entries_inside,
    interleave_summary,
    interleave_table,
    interleave_trials,
    measure_transaction_cost,
    push_in_pipeline,
)
from .lrem import (
    LREM_ALT,
    build_list,
    drop_oldest_lrem,
    drop_oldest_ltrim,
    lrem_plot,
    lrem_summary,
    lrem_table,
    measure_lrem,
)
from .parameters import (
    BLPOP_TIMEOUTS,
    CUT_MS,
    DEFAULT_RETRIES,
    LENGTHS,
    LONG,
    N_DROP,
    N_FAST,
    N_IL,
    N_JAVA_TIMEOUT,
    RCW_KEYS,
    REPEAT,
    REPEAT_IL,
    REPEAT_RCW,
    SLOWLOG_US,
    TIMEOUT_S,
    TRIALS,
    P,
    fact_table,
    yes_no,
)
from .published import CLAIMS, PUBLISHED
from .rcw import (
    COLLATZ_LUA,
    RCW_ALT,
    RCW_MODES,
    collatz,
    measure_rcw,
    rcw_eval_each,
    rcw_eval_pipelined,
    rcw_evalsha_pipelined,
    rcw_plot,
    rcw_round_trips,
    rcw_summary,
    rcw_table,
    rcw_two_pipelines,
)
from .timeouts import in_batches, slow_pipeline, timeout_cases, timeout_summary, timeout_table
