"""Chapter 4, pitfalls: a module per section of the notebook, in its order; the harness only.

The client code each section is about (the two ways to drop the oldest items, A's pipeline, the five
read-compute-write ways, the bad command, the jobs cut by a reset, the BLPOP, the slow pipeline and
its batches) is the notebook's cells tagged code:… (taught.py), passed in by the notebook.

instruments (what the sections observe), parameters (declared once; the notebook passes them to the Java
examples), lrem (1), interleave (2), rcw (3), errors (4), drop (5), languages (4 and 5 for Go and Node),
blocking (6), timeouts (7), published.
"""

from __future__ import annotations

from .blocking import blocking_cases, blocking_summary, blocking_table
from .common import PREFIX, no_retry_client, restore_oldest
from .drop import drop_scenarios, drop_summary, drop_table
from .errors import bad_command_cases, errors_summary, errors_table
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
)
from .languages import (
    other_drops,
    other_drops_summary,
    other_drops_table,
    other_errors,
    other_errors_summary,
    other_errors_table,
)
from .lrem import (
    LREM_ALT,
    build_list,
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
    RCW_ALT,
    RCW_MODES,
    measure_rcw,
    rcw_plot,
    rcw_summary,
    rcw_table,
)
from .timeouts import timeout_cases, timeout_summary, timeout_table
