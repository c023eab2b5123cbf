"""`pipelab calm-trial`: samples that wait for a calm machine, set against samples taken as they come."""

import json
import os
import socket
import tempfile
import threading
import time

import pytest

from pipelab import placement
from pipelab.book import calmtrial


def test_pairs_agree_as_the_agreement_counts_them():
    assert calmtrial.agree([1.0, 1.1, 1.5]) == (1, 3), "1.1 is within 15% of 1.0; 1.5 of neither"
    assert calmtrial.agree([2.0]) == (0, 0)


def test_a_helper_answers_1_for_a_probe_at_its_fast_speed_and_0_for_a_slow_one(tmp_path, monkeypatch):
    times = iter([1.0] * calmtrial.CALIBRATE + [1.2, 1.5, 0.8, 1.1])
    monkeypatch.setattr(calmtrial, "loop_ms", lambda count: next(times))
    path = str(tmp_path / "cpu")
    threading.Thread(target=calmtrial.serve, args=(path,), daemon=True).start()
    link = socket.socket(socket.AF_UNIX)
    deadline = time.monotonic() + 10
    while True:  # the socket's file appears at bind(), before listen(): a connect may be refused once
        try:
            link.connect(path)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            assert time.monotonic() < deadline, "the helper never listened"
            time.sleep(0.01)
    answers = []
    with link, link.makefile("rwb", buffering=0) as f:
        for _ in range(4):
            f.write(b"?")
            answers.append(f.readline().strip())
    assert answers == [b"1", b"0", b"1", b"0"], (
        "1.2 and 1.5 against 1.0; then 0.8 is the new fast time, 1.1 over 1.25x it"
    )


def bare_gate(monkeypatch, answers: list[bool]) -> calmtrial.Gate:
    """A gate whose probes answer `answers` in turn (the last one from then on), no helpers."""
    gate = object.__new__(calmtrial.Gate)
    gate.last_calm, gate.gave_up = -calmtrial.RECHECK_S, -calmtrial.HOLD_S
    gate.probes = gate.calm_probes = gate.samples = gate.unasked = 0
    gate.waited_s = 0.0
    answers = list(answers)

    def calm() -> bool:
        gate.probes += 1
        return answers.pop(0) if len(answers) > 1 else answers[0]

    monkeypatch.setattr(gate, "calm", calm)
    return gate


def test_a_sample_waits_for_a_calm_probe_and_the_next_one_goes_ahead_soon_after(monkeypatch):
    gate = bare_gate(monkeypatch, [False, False, True])
    gate.wait()
    assert gate.probes == 3 and gate.unasked == 0 and gate.waited_s >= 2 * calmtrial.PAUSE_S
    gate.wait()
    assert gate.probes == 3, f"within {calmtrial.RECHECK_S} s of a calm probe, no probe"
    assert gate.samples == 2


def test_a_wait_gives_up_at_its_cap_and_then_samples_go_ahead_unasked_for_the_hold(monkeypatch):
    monkeypatch.setattr(calmtrial, "WAIT_CAP_S", 0.05)
    gate = bare_gate(monkeypatch, [False])
    gate.wait()
    asked = gate.probes
    assert asked >= 2 and gate.unasked == 1 and gate.waited_s >= 0.05
    gate.wait()
    assert gate.probes == asked and gate.unasked == 2, "a long spell is sampled, not waited out again"
    gate.gave_up -= calmtrial.HOLD_S
    gate.wait()
    assert gate.probes > asked, "after the hold, it asks again"


@pytest.mark.redis
@pytest.mark.skipif(not placement.enabled(), reason="the trial pins its helpers to two CPUs")
def test_the_trial_measures_both_ways_in_turns_on_a_real_server_and_ends_its_helpers(tmp_path):
    def helpers_dirs() -> set[str]:
        return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("pipelab-calm-")}

    before, cpus = helpers_dirs(), os.sched_getaffinity(0)
    path, _ = calmtrial.run(seconds=0.5, base=tmp_path)
    assert os.sched_getaffinity(0) == cpus, "the caller is left where it ran: what it starts next may use every CPU"
    doc = json.loads(path.read_text())
    runs = doc["params"]["runs"]
    assert len(runs["gated"]) == len(runs["plain"]) >= 1, "a gated and a plain measurement per turn"
    assert all(row["one"] > row["pipe"] > 0 for kind in runs.values() for row in kind), (
        f"{calmtrial.PINGS_ONE:,} PINGs one by one against {calmtrial.PINGS_PIPE:,} in a pipeline"
    )
    summary = doc["summary"]
    assert {"gated_ratio_within_pct", "plain_one_within_pct", "calm_probe_pct", "unasked_pct"} <= set(summary)
    assert 0 <= summary["calm_probe_pct"]["value"] <= 100
    assert doc["environment"]["placement"]["policy"] == "server and clients on separate CPUs"
    assert helpers_dirs() == before, "the helpers' sockets are gone with them"
    assert "gated, " in calmtrial.report(summary) and "plain, " in calmtrial.report(summary)
