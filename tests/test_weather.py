"""The machine's own weather: a fixed loop pinned to each CPU, its two speeds told apart."""

import json

import pytest

from pipelab import placement, weather
from pipelab.book import agreement, build
from pipelab.errors import LabError
from pipelab.results import quantity
from tests.test_agreement import tree


def two_speeds() -> list[float]:
    """50 ms loops, with a spell of 5 at 125 ms and one of 2 at 150 ms."""
    return [50.0] * 40 + [125.0] * 5 + [50.0] * 40 + [150.0] * 2 + [50.0] * 12


def test_the_two_speeds_and_their_spells_are_told_apart():
    d = weather.describe(two_speeds())
    assert d["fast_ms"] == 50 and d["slow_share"] == pytest.approx(7 / 99)
    assert d["slowdown"] == pytest.approx(2.5), "the median slow loop over the fast one"
    assert d["spell_s"] == pytest.approx((0.625 + 0.3) / 2) and d["longest_spell_s"] == pytest.approx(0.625)
    assert d["spread_median"] == 0, "most windows of 9 fall in the fast speed"
    assert d["spread_p90"] == pytest.approx(0.6), "the window with the spell's five: (125 − 50) / 125"
    assert weather.describe([50.0] * 20)["slow_share"] == 0 and weather.describe([50.0] * 20)["spell_s"] == 0
    inside = weather.describe([100.0] * 20, fast=weather.fastest([two_speeds(), [100.0] * 20]))
    assert inside["slow_share"] == 1 and inside["slowdown"] == 2, (
        "a series wholly in a spell, against the other's speed"
    )


def test_the_loop_runs_on_each_cpu_in_turn_and_says_where(tmp_path):
    sky = weather.measure(0.2)
    expected = [f"cpu{c}" for c in placement.usable_cpus()] if placement.enabled() else ["any"]
    assert list(sky) == expected and all(len(times) >= 1 and min(times) > 0 for times in sky.values())
    doc = json.loads(weather.record({"before": sky, "after": sky}, base=tmp_path).read_text())
    assert doc["params"]["series_ms"]["before"] == sky
    assert {f"before_{expected[0]}_slow_pct", f"after_{expected[-1]}_spread_p90_pct", "slow_pct"} <= set(doc["summary"])


def test_a_cpu_the_loop_may_not_use_is_one_sentence():
    with pytest.raises(LabError, match=r"could not start on CPU 4096 \("):
        weather.series(4096, 0.1)


def test_agreement_prints_each_runs_weather_beside_its_spreads(tmp_path):
    runs = []
    for name in ("a", "b"):
        root = tree(tmp_path / name, {"x_s": quantity(1.0, "s")})
        weather.record({"before": {"cpu0": two_speeds()}}, base=root)
        runs.append(str(root))
    text, figures = agreement.report(*runs)
    assert "the machine's own weather, run B, before, cpu0: fast 50.0 ms, slow 7% of the time at 2.5x" in text
    assert "the longest 0.6 s" in text and "90th percentile 60%" in text
    saved = json.loads(agreement.save(figures, "a", "b", figures["rows"], target=tmp_path / "ref").read_text())
    assert saved["summary"]["weather_spread_p90_b_pct"]["value"] == pytest.approx(60), "for the method page's table"
    assert saved["summary"]["weather_slow_a_pct"]["value"] == pytest.approx(100 * 7 / 99)


def test_a_quick_run_times_no_weather_and_a_full_one_brackets_its_chapters(monkeypatch, tmp_path):
    taken = []
    monkeypatch.setattr(build, "_weather", lambda: taken.append("loop") or {"cpu0": two_speeds()})
    monkeypatch.setattr(build, "execute_noting_java", lambda source, params, board=None: taken.append(source.name))
    monkeypatch.setattr(build.weather, "record", lambda sky: taken.append(sorted(sky)) or tmp_path)
    monkeypatch.setattr(build.results, "load", lambda name, base=None: {"summary": {}, "params": {"series_ms": {}}})
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path / "build"))
    build._run_each(quick=True, only=["01"], server=None, fresh=True)
    assert taken == ["01-round-trip-time.ipynb"]
    taken.clear()
    build._run_each(quick=False, only=["01", "02"], server=None, fresh=True)
    assert taken == ["loop", "01-round-trip-time.ipynb", "02-system-calls.ipynb", "loop", ["after", "before"]]


def test_the_machines_own_agreement_sets_the_loop_before_a_run_against_the_loop_after_it(tmp_path):
    # Windows of 9: before, two at 50 ms; after, one whose median fell in a spell (100 ms) and one at 50 ms.
    before, after = [50.0] * 18, [50.0] * 4 + [100.0] * 5 + [50.0] * 9
    roots = [tree(tmp_path / name, {"x_s": quantity(1.0, "s")}) for name in ("a", "b")]
    weather.record({"before": {"cpu0": before}, "after": {"cpu0": after}}, base=roots[0])
    weather.record({"alone": {"cpu0": before}}, base=roots[1])  # one moment: nothing to set against
    text, figures = agreement.report(*map(str, roots))
    assert figures["loop_within_a"] == {"median": (2, 4), "fastest": (4, 4)}, (
        "a spell moves the median, not the fastest"
    )
    assert figures["loop_within_b"] is None and "the machine's own agreement, run B" not in text
    assert "run A: its weather loop in windows of 9, each summed up as a measurement is" in text
    assert "median 2 of 4 (50%), fastest 4 of 4 (100%)" in text
    # Between the runs: A's four runs of nine (medians 50, 50, 100, 50) against B's two at 50 ms.
    assert figures["loop_between"] == {"median": (6, 8), "fastest": (8, 8)}
    assert "between the runs: run A's weather loop against run B's, in runs of 9 likewise" in text
    saved = json.loads(agreement.save(figures, "a", "b", figures["rows"], target=tmp_path / "ref").read_text())
    assert saved["summary"]["loop_median_within_a_pct"]["value"] == 50
    assert saved["summary"]["loop_fastest_within_a_pct"]["value"] == 100
    assert "loop_median_within_b_pct" not in saved["summary"]
    assert saved["summary"]["loop_median_between_pct"]["value"] == 75
    # Only the loops after a fast one: the spell's first loop stays (its predecessor was fast), the rest
    # and the fast loop after it go, which leaves after's twelve one run of nine with its median at 50 ms.
    assert figures["loop_calm_kept_a"] == (17 + 12, 17 + 17)
    assert figures["loop_calm_within_a"] == {"median": (1, 1), "fastest": (1, 1)}
    assert "the same, of the loops that followed a fast one only (29 of 34 (85%))" in text
    assert "median 1 of 1 (100%), fastest 1 of 1 (100%)" in text
    assert figures["loop_calm_between"] == {"median": (2, 2), "fastest": (2, 2)}
    assert saved["summary"]["loop_calm_median_within_a_pct"]["value"] == 100
    assert saved["summary"]["loop_calm_kept_a_pct"]["value"] == pytest.approx(100 * 29 / 34)
    assert saved["summary"]["loop_calm_median_between_pct"]["value"] == 100
    assert "loop_calm_median_within_b_pct" not in saved["summary"]


def test_a_calm_loop_is_one_that_followed_a_loop_at_the_fast_speed():
    assert weather.calm([50.0, 100.0, 100.0, 50.0, 60.0, 70.0], fast=50.0) == [100.0, 60.0, 70.0]
    assert weather.calm([100.0] * 9, fast=50.0) == [], "a series wholly in a spell leaves nothing calm"
    wholly_slow = {
        "params": {"window": 9, "series_ms": {"before": {"cpu0": [100.0] * 18}, "after": {"cpu0": [50.0] * 18}}}
    }
    wholly_slow["summary"] = {"before_cpu0_fast_ms": {"value": 50.0}, "after_cpu0_fast_ms": {"value": 50.0}}
    assert agreement.run_loop_within(wholly_slow, calm=True) is None, "no calm run of nine before the chapters"
    assert agreement.run_loop_within(wholly_slow) == {"median": (0, 4), "fastest": (0, 4)}


def test_a_source_edited_while_its_chapter_runs_leaves_the_chapter_unrecorded(monkeypatch, tmp_path, capsys):
    # The key is taken after the run (it needs the Java aliases the run used); an edit made meanwhile
    # would otherwise be recorded as measured.
    seen, recorded = (
        iter([{"notebook": "before"}, {"notebook": "edited"}, {"notebook": "same"}, {"notebook": "same"}]),
        [],
    )
    log = tmp_path / "runs.log"
    log.write_text("ch01-ping\n")
    monkeypatch.setattr(build, "execute_noting_java", lambda source, params, board=None: source.name)
    monkeypatch.setattr(build.inputs, "last_run", lambda source: None)
    monkeypatch.setattr(build.inputs, "sources", lambda source, aliases, quick=False: next(seen))
    monkeypatch.setattr(build.inputs, "chapter_key", lambda source, **kw: {"key": "k"})
    monkeypatch.setattr(build.inputs, "runs_log", lambda source: log)
    monkeypatch.setattr(build.inputs, "record", lambda source, key: recorded.append(source.name))
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path / "build"))
    build._run_each(quick=True, only=["01"], server="redis 8.2.3", fresh=True)
    assert recorded == [] and "changed while 01-round-trip-time.ipynb ran" in capsys.readouterr().out
    build._run_each(quick=True, only=["01"], server="redis 8.2.3", fresh=True)
    assert recorded == ["01-round-trip-time.ipynb"]
