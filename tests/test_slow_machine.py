"""The examples whose point involves time (timeouts, queues, stalls, retries), at full size, while
another process keeps every CPU busy (tests/busy.py): each ends with its outcome recorded (how many
completed, timed out, ran twice), never with a crash. A check may still fail for a bug in an example
(a lost reply, a server count that contradicts the client's), never because the machine was slow.

`make slow-machine` runs this file, and the repository's workflow runs that on every push; `make test`
skips it, as a busy machine doubles these examples' time, past its budget. The outcomes are kept in
build/slow-machine.json, for the closing report."""

from __future__ import annotations

import json
import os

import pytest

from pipelab import paths
from pipelab.lab import Lab
from pipelab.paths import env_flag
from tests import busy

SLOW_MACHINE_VAR = "PIPELAB_SLOW_MACHINE"  # set by `make slow-machine`
pytestmark = [
    pytest.mark.slow_machine,
    pytest.mark.skipif(
        not env_flag(SLOW_MACHINE_VAR), reason="`make slow-machine` runs these (past make test's budget)"
    ),
]
OUTCOMES: dict[str, dict] = {}


@pytest.fixture(scope="module")
def busy_lab(session, jdk):
    """A lab at full sizes, every CPU kept busy meanwhile; the outcomes saved when the module ends."""
    quick = os.environ.get("PIPELAB_QUICK")
    os.environ["PIPELAB_QUICK"] = "0"  # the Java examples' own rounds, as the book runs them
    lab = Lab(session.describe(), quick=False)
    try:
        with busy.every_cpu() as cpus:
            OUTCOMES["busy_cpus"] = {"cpus": cpus}
            yield lab
    finally:
        lab.cleanup()
        os.environ["PIPELAB_QUICK"] = quick or "1"
        (paths.build_dir() / "slow-machine.json").write_text(json.dumps(OUTCOMES, indent=1, sort_keys=True))


def keep(alias: str, run, *keys: str) -> dict:
    """The facts `keys` of a run, kept for the report; each must have been recorded."""
    missing = [key for key in keys if key not in run.facts]
    assert not missing, f"{alias} recorded no {missing}"
    OUTCOMES[alias] = {key: run.facts[key] for key in keys}
    return OUTCOMES[alias]


def test_lettuces_queued_commands_and_the_firehose_end_with_every_set_accounted_for(busy_lab):
    from pipelab.chapters import ch08

    if not busy_lab.rtt_available:
        pytest.skip(busy_lab.proxy_note)
    run = ch08.measure_lettuce(busy_lab, busy_lab.size(ch08.LETTUCE_QUEUE), busy_lab.size(ch08.LETTUCE_REPEAT))
    f = keep(
        "ch08-lettuce",
        run,
        "queued_timed_out",
        "queued_bytes_per_command",
        "bounded_timed_out",
        "firehose_commands",
        "firehose_ok",
        "firehose_timed_out",
        "firehose_timed_out_ran",
        "firehose_drain_ms",
        "firehose_bounded_ok",
        "firehose_bounded_timed_out",
        "blpop_shared_get_ms",
    )
    assert f["firehose_ok"] + f["firehose_timed_out"] == f["firehose_commands"], "no bound: nothing refused"
    assert 0 <= f["firehose_timed_out_ran"] <= f["firehose_timed_out"]
    assert f["queued_bytes_per_command"] > 100, "the heap figure is kept"


def test_redissons_small_batches_count_their_timeouts_and_never_run_twice(busy_lab):
    from pipelab.chapters import ch08

    run = ch08.measure_redisson(busy_lab, busy_lab.size(ch08.REDISSON_N), busy_lab.size(ch08.REDISSON_REPEAT))
    f = keep("ch08-redisson", run, "small_batches_sent", "small_batches_timeouts", "small_batches_counters_twice")
    assert 0 <= f["small_batches_timeouts"] <= f["small_batches_sent"]
    assert f["small_batches_counters_twice"] == 0, "retryAttempts(0): no batch runs twice"


def test_small_batches_under_a_short_timeout_count_the_late_ones(busy_lab):
    from pipelab.chapters import ch04

    run = busy_lab.java("ch04-timeout", busy_lab.size(ch04.N_JAVA_TIMEOUT), 1)
    f = keep(
        "ch04-timeout",
        run,
        "redisson_small_batches_sent",
        "redisson_small_batches_late",
        "lettuce_one_flush_futures_ok",
    )
    assert 0 <= f["redisson_small_batches_late"] <= f["redisson_small_batches_sent"]


def test_a_thread_behind_anothers_unflushed_commands_waits_for_the_flush(busy_lab):
    from pipelab.chapters import ch03

    run = busy_lab.java("ch03-lettuce", busy_lab.size(ch03.N), busy_lab.size(ch03.REPEAT))
    waits = run.measurements()["shared_conn_wait"].samples
    OUTCOMES["ch03-lettuce"] = {"shared_conn_wait_s": waits}
    assert min(waits) >= 0.2, "thread B waited out thread A's 200 ms hold, however late it was scheduled"
