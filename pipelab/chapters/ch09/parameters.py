"""Chapter 9's parameters, declared once (the notebook passes them to the Java examples)."""

from __future__ import annotations

from ...params import Size

# Bulk loading (section 1): keys per load, and the batch sizes compared. 100,000 keys keep the chapter within
# its 4 minutes (200,000 took 278 s) and are still ten batches of the larger size.
N_LOAD = Size(full=100_000, quick=20_000)
BATCHES = (1_000, 10_000)
VALUE_BYTES = 100
BAD_COMMANDS = 3  # commands injected into a load that the server refuses
REPEAT_LOAD = Size(full=3, quick=1)

# Deleting by pattern (section 2): keys under the pattern, keys beside it, SCAN's COUNT hints.
N_DOOMED = Size(full=200_000, quick=20_000)
N_KEPT = Size(full=100_000, quick=10_000)
SCAN_COUNTS = (100, 1_000)
REPEAT_DELETE = Size(full=1, quick=1)

# Jedis (the ch09 examples): filled in with the Java examples.
# A watched Jedis load runs again over its own keys for at least this long, so that the Watch's 5 ms
# samples catch its peaks and most of its PINGs fall while it runs, not while the JVM starts.
WATCH_LOAD_MS = 500
