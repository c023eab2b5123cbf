"""Chapter 9, bulk work: loading many keys, and deleting or expiring every key that matches a
pattern, by each means a reader has, with what each costs the server and the other clients.

A module per section: parameters (declared once; the notebook passes them to the Java examples),
instruments (the Watch every job runs in), load (1), delete (2), cluster (the same per master),
valkey (section 2's jobs on Valkey), java (the ch09 Jedis examples), published. The harness only: the code each section teaches is the
notebook's cells tagged code:… (taught.py), passed in by the notebook.
"""

from __future__ import annotations

from .cluster import cluster_summary, cluster_table, measure_cluster_delete, populate_cluster
from .common import DOOMED, KEPT, PATTERN, PREFIX, check_safe, foreign_keys_now
from .delete import (
    BIG_FIELDS,
    DELETE_ALT,
    LIST_ITEMS,
    delete_plot,
    delete_summary,
    delete_table,
    measure_delete,
    populate,
    watches_to_save,
)
from .instruments import Watch
from .java import (
    java_delete_summary,
    java_delete_table,
    java_load_summary,
    java_load_table,
    measure_java_delete,
    measure_java_load,
)
from .load import (
    bad_commands,
    bad_table,
    cli_available,
    load_key,
    load_summary,
    load_table,
    measure_bad_commands,
    measure_lf_file,
    measure_load,
    parse_cli_summary,
    value,
)
from .parameters import (
    BAD_COMMANDS,
    BATCHES,
    N_DOOMED,
    N_KEPT,
    N_LOAD,
    REPEAT_DELETE,
    REPEAT_LOAD,
    SCAN_COUNTS,
    VALUE_BYTES,
)
from .published import CLAIMS, PUBLISHED
from .valkey import (
    N_VALKEY_DOOMED,
    N_VALKEY_KEPT,
    measure_valkey_delete,
    valkey_params,
    valkey_summary,
    valkey_table,
)
