"""Chapter 4, pitfalls: a module per section of the notebook, in its order.

instruments (what the sections observe), parameters (declared once; the notebook passes them to the Java
examples), lrem (1), interleave (2), rcw (3), errors (4), drop (5), blocking (6), timeouts (7), published.
"""
from __future__ import annotations

from .common import PREFIX, build_list, drop_oldest_lrem, drop_oldest_ltrim, no_retry_client, restore_oldest
from .instruments import COLLATZ_LUA, Probe, collatz, foreign_entries_inside, in_batches, incr_command_bytes, incr_exactly_once, incr_pipeline, last_slowlog_id, net_input_bytes, pipeline_with_bad_command, pipeline_with_blpop, push_in_pipeline, rcw_eval_each, rcw_eval_pipelined, rcw_evalsha_pipelined, rcw_round_trips, rcw_two_pipelines, seed_numbers, server_time, set_pipeline, slow_pipeline, slowlog_entries, slowlog_threshold
from .parameters import BLPOP_TIMEOUTS, CUT_MS, DEFAULT_RETRIES, LENGTHS, LONG, N_DROP, N_FAST, N_IL, N_JAVA_TIMEOUT, P, RCW_KEYS, REPEAT, REPEAT_IL, REPEAT_RCW, SLOWLOG_US, TIMEOUT_S, TRIALS, fact_table, yes_no
from .lrem import LREM_ALT, lrem_plot, lrem_summary, lrem_table, measure_lrem
from .interleave import interleave_summary, interleave_table, interleave_trials, measure_transaction_cost
from .rcw import RCW_ALT, RCW_MODES, measure_rcw, rcw_plot, rcw_summary, rcw_table
from .errors import bad_command_cases, errors_summary, errors_table
from .drop import drop_scenarios, drop_summary, drop_table
from .blocking import blocking_cases, blocking_summary, blocking_table
from .timeouts import timeout_cases, timeout_summary, timeout_table
from .published import CLAIMS, PUBLISHED
