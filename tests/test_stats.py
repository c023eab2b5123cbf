"""Intervals, interleaved rounds and adaptive repetition: what makes a figure know its error."""

import importlib
import itertools
import random
import time
from types import SimpleNamespace

import pytest

from pipelab import results, stats
from pipelab.measure import MAX_FACTOR, Measurement, measure, measure_interleaved


def test_a_median_interval_holds_the_median_and_narrows_with_more_samples():
    rng = random.Random(1)
    few = [rng.gauss(10, 1) for _ in range(8)]
    many = [rng.gauss(10, 1) for _ in range(200)]
    lo, hi = stats.median_interval(few)
    assert lo <= sorted(few)[4] <= hi
    lo2, hi2 = stats.median_interval(many)
    assert lo2 < 10 < hi2 and (hi2 - lo2) < (hi - lo) / 2
    assert stats.median_interval([1.0, 2.0]) is None, "two samples give no interval"
    assert stats.median_interval(few) == stats.median_interval(few), "seeded: the same samples, the same interval"


def test_pairing_by_round_cancels_what_a_round_shared():
    # Each round the machine is slower or faster by up to 2x; B always takes twice A's time.
    rng = random.Random(2)
    load = [rng.uniform(1, 2) for _ in range(12)]
    a = [1.0 * x for x in load]
    b = [2.0 * x for x in load]
    paired = stats.ratio_interval(b, a, paired=True)
    unpaired = stats.ratio_interval(b, a, paired=False)
    assert paired[0] == pytest.approx(2) and paired[1] == pytest.approx(2)
    assert unpaired[1] - unpaired[0] > 0.3


def test_interleaved_rounds_alternate_and_are_marked_paired():
    order = []
    a, b = measure_interleaved(
        {"A": lambda: order.append("A"), "B": lambda: order.append("B")}, ops=1, repeat=3, warmup=0
    )
    assert order[:6] == ["A", "B"] * 3
    assert a.paired_with == b.paired_with == "A / B" and len(a.samples) == len(b.samples) >= 3
    assert measure("solo", lambda: None, ops=1, repeat=3, warmup=0).paired_with == ""


@pytest.mark.measures  # it times sleeps: beside the work before the notebooks a 2 ms sleep once took 3.2 ms
def test_repetitions_stop_at_the_target_or_say_the_time_cap_stopped_them(monkeypatch):
    monkeypatch.setenv("PIPELAB_QUICK", "0")
    # A task that takes 2 ms, give or take 0.5%, on a clock of the test's own: a real 2 ms sleep on a
    # busy machine once needed 7 rounds to settle, which is the machine, not the rule under test.
    clock, steps = [0.0], itertools.cycle([0.002, 0.00201, 0.00199])
    with monkeypatch.context() as m:
        m.setattr(importlib.import_module("pipelab.measure"), "time", SimpleNamespace(perf_counter=lambda: clock[0]))
        steady = measure("steady", lambda: clock.__setitem__(0, clock[0] + next(steps)), ops=1, repeat=5, warmup=1)
    assert len(steady.samples) == 5 and "time cap" not in steady.stopped, steady.stopped
    # 0.02 s of extra rounds fit about 9 of these, short of the round cap (20). Alternating, not drawn:
    # how many draws the warm-up took depends on the clock, and six slow draws of seven once settled it.
    monkeypatch.setattr(importlib.import_module("pipelab.measure"), "EXTRA_FLOOR_S", 0.02)
    swings = itertools.cycle([0.0005, 0.004])
    noisy = measure("noisy", lambda: time.sleep(next(swings)), ops=1, repeat=5, warmup=1)
    assert len(noisy.samples) > 5 and noisy.stopped.endswith("stopped by the time cap"), noisy.stopped
    # With time to spare, the round cap ends it, and says so (it read "time cap" before).
    monkeypatch.setattr(importlib.import_module("pipelab.measure"), "EXTRA_FLOOR_S", 30)
    # Alternating, not drawn: how many draws the noisy run took depends on the clock, and three equal
    # draws in a row once settled this one at ±1% after 3.
    alternate = itertools.cycle([0.0005, 0.004])
    capped = measure("capped", lambda: time.sleep(next(alternate)), ops=1, repeat=3, warmup=1)
    assert len(capped.samples) == MAX_FACTOR * 3 and capped.stopped.endswith("stopped by the round cap"), capped.stopped
    monkeypatch.setenv("PIPELAB_QUICK", "1")
    quick = measure("quick", lambda: time.sleep(next(alternate)), ops=1, repeat=3, warmup=1)
    assert len(quick.samples) == 3 and quick.stopped.endswith("stopped by the asked-for rounds"), quick.stopped


def test_figures_carry_their_interval_and_ratios_pair_when_they_can():
    one = Measurement("one", 10, [2.0, 2.2, 1.8, 2.1, 1.9], paired_with="g")
    pipe = Measurement("pipe", 10, [0.2, 0.22, 0.18, 0.21, 0.19], paired_with="g")
    ratio = results.ratio_figure(one, pipe)
    assert ratio["value"] == pytest.approx(10) and ratio["interval"][0] == pytest.approx(10)
    assert ratio["text"] == "10.0x" and ratio["interval_text"] == "10.0x – 10.0x"
    time_ms = results.median_figure(one, "ms")
    assert time_ms["interval"][0] <= time_ms["value"] <= time_ms["interval"][1]
    rate = results.rate_figure(one)
    assert rate["interval"][0] <= rate["value"] <= rate["interval"][1]
    assert "interval" not in results.quantity(12, "count"), "a count carries none"
    assert "interval" not in results.ratio_figure(Measurement("a", 1, [1.0]), Measurement("b", 1, [2.0]))
    assert results.with_interval(ratio) == "10.0x (10.0x – 10.0x)"
    assert results.with_interval(results.quantity(12, "count")) == "12" and results.with_interval(None) == "–"


def test_quick_mode_takes_exactly_the_asked_for_rounds_here_and_in_java(monkeypatch):
    monkeypatch.setenv("PIPELAB_QUICK", "1")
    rng = random.Random(4)
    noisy = measure("noisy", lambda: time.sleep(rng.choice([0.0005, 0.004])), ops=1, repeat=3, warmup=1)
    assert len(noisy.samples) == 3 and len(noisy.warmup) == 1
    assert importlib.import_module("pipelab.measure").repeat_rule() == ""
    monkeypatch.setenv("PIPELAB_QUICK", "0")
    target, floor, cap, factor, warmup_more = importlib.import_module("pipelab.measure").repeat_rule().split(",")
    assert float(target) == 0.05 and int(factor) == 4 and int(warmup_more) > 0


def test_the_reference_was_measured_in_turns_with_intervals_and_placement():
    doc = results.load("ch01/ping-10k", importlib.import_module("pipelab.paths").reference_dir())
    java = [m for m in doc["measurements"] if m.label.startswith("Jedis")]
    assert java and all(m.paired_with == java[0].paired_with != "" for m in java), "Jedis modes took turns"
    assert all(len(m.samples) >= doc["params"].get("repeat", 5) for m in java)
    assert all("interval" in doc["summary"][k] for k in ("python_speedup", "jedis_speedup"))
    assert doc["environment"]["placement"]["client_cpus"]
