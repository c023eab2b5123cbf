"""Chapter 10's parameters, declared once (the notebook and the chapter's functions pass them to the
Node, Go and Java examples as arguments)."""

from __future__ import annotations

from ...params import Size

# Explicit pipelines (section 1): chapter 1's PINGs and chapter 3's SADD job, in every language.
N_EXPLICIT = Size(full=10_000, quick=1_000)  # commands per sample, per workload
REPEAT = Size(full=3, quick=2)  # interleaved rounds; a 95% interval needs three
WARMUP = Size(full=1, quick=1)  # rounds run first and thrown away

# The auto-pipelining curve (section 2): concurrent callers on one client, at each RTT (toxiproxy).
CALLERS = (1, 4, 16, 64, 256)
RTTS_MS = (0, 1)
# Each point of the curve is bounded by time, so that a language's whole curve stays within budget.
POINT_MS = Size(full=150, quick=60)  # how long the callers GET at each caller count and RTT
VALUE_BYTES = 16  # the small value every caller GETs
BIG_BYTES = Size(full=8_000_000, quick=2_000_000)  # the big reply the head-of-line case waits behind
REPEAT_AUTO = Size(full=3, quick=1)  # three samples per point: a 95% interval in the book

# Node
NODE_HOL_MS = Size(full=600, quick=200)  # the Node readers' GETs per head-of-line case (six cases)
NODE_READERS = 8  # callers doing small GETs in those cases

# Go
GO_SAMPLE_MS = Size(full=80, quick=60)  # per sample of a curve point: Go compares six client modes at each
GO_HOL_MS = Size(full=600, quick=200)  # rueidis's readers per head-of-line and big-DoMulti case
GO_READERS = 8  # goroutines doing small GETs in those cases
# Beside the defaults on the curve: rueidis and valkey-go created and run under GOMAXPROCS 4 (the lab pins
# the example to one CPU, so Go's own GOMAXPROCS is 1), and rueidis with a MaxFlushDelay of 20 µs.
GO_SIDE_PROCS = 4
GO_FLUSH_US = 20
GO_DIRECT_GETS = Size(full=1_000, quick=300)  # one caller's GETs per phase of rueidis's direct path, per turn
