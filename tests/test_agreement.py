"""`pipelab agreement`: two runs compared figure by figure, with flips and noise named."""

import json

import pytest

from pipelab.book import agreement, cli
from pipelab.errors import LabError
from pipelab.results import quantity


def tree(root, figures: dict, samples=(1.0, 1.1, 0.9), probe=None, cpu=None):
    (root / "ch01").mkdir(parents=True)
    doc = {"summary": figures, "measurements": [{"label": "m", "samples_s": list(samples)}], "environment": {}}
    if probe:
        doc["environment"]["probe"] = probe
    if cpu:
        doc["environment"] |= {"cpu_model": cpu, "cpu_count": 2}
    (root / "ch01" / "ping-10k.json").write_text(json.dumps(doc))
    return root


def test_agreement_counts_agreeing_figures_and_names_every_flip(tmp_path, capsys):
    a = tree(
        tmp_path / "a",
        {
            "python_speedup": quantity(20.0, "x", interval=(19, 21)),
            "jedis_speedup": quantity(1.3, "x"),
            "python_unpipelined_s": quantity(0.7, "s", interval=(0.69, 0.71)),
            "n": quantity(10_000, "count"),
        },
        probe={"cpu_loop_ms": 5.0, "ping_us": 100.0},
    )
    b = tree(
        tmp_path / "b",
        {
            "python_speedup": quantity(21.0, "x", interval=(20, 22)),
            "jedis_speedup": quantity(0.8, "x"),
            "python_unpipelined_s": quantity(1.4, "s", interval=(1.3, 1.5)),
            "n": quantity(10_000, "count"),
        },
        samples=(1.0, 2.0, 1.5),
        probe={"cpu_loop_ms": 6.0, "ping_us": 150.0},
    )
    text, figures = agreement.report(str(a), str(b))
    assert figures["within"] == (2, 4) and figures["ratios_within"] == (1, 2)
    assert figures["flips"] == 1 and "ch01/ping-10k#jedis_speedup: 1.3x against 0.80x" in text
    assert figures["flips_in_prose"] == 1, "chapter 1's page prints the Jedis speed-up"
    assert figures["flips_stated"] == 1, "and states its direction (> 1)"
    assert figures["beyond_noise"] == (1, 2), "the 0.7 s and 1.4 s intervals are apart, 20x and 21x overlap"
    assert figures["spread_a"][0] == pytest.approx(0.2) and figures["spread_b"][0] == pytest.approx(2 / 3)
    assert figures["error_a"][0] == pytest.approx((0.05 + 0.01 / 0.7) / 2), "the median of ±5% (20x) and ±1.4% (0.7 s)"
    assert figures["drift"]["ping_us"][0] == pytest.approx(1.5) and figures["drift"]["cpu_loop_ms"][0] == 1.2
    assert "run B ÷ run A, a PING one by one: median 1.50x" in text
    assert figures["steady_within"] == (0, 0), "the PING probe moved 1.5x: no file held still"
    # Samples 1.0, 1.1, 0.9 against 1.0, 2.0, 1.5: medians 1.0 and 1.5 are apart, the fastest 0.9 and 1.0 not.
    assert figures["estimates_within"] == {"median": (0, 1), "fastest": (1, 1)}
    assert "median 0 of 1 (0%), fastest 1 of 1 (100%)" in text
    assert cli.main(["agreement", str(a), str(b)]) == 0
    assert "direction flips" in capsys.readouterr().out
    saved = json.loads(agreement.save(figures, "a", "b", figures["rows"], target=tmp_path / "ref").read_text())
    assert saved["summary"]["within_pct"]["value"] == 50 and saved["summary"]["flips"]["value"] == 1
    assert saved["params"]["per_chapter"][0]["chapter"] == "ch01"
    assert saved["summary"]["probe_ping_us_b_over_a"]["value"] == pytest.approx(1.5)
    assert saved["summary"]["measurement_fastest_within_pct"]["value"] == 100
    assert saved["summary"]["measurement_median_within_pct"]["value"] == 0
    assert saved["summary"]["measurements"]["value"] == 1


def test_agreement_says_when_the_two_runs_had_different_cpus(tmp_path):
    figure = {"python_speedup": quantity(20.0, "x")}
    text, figures = agreement.report(
        str(tree(tmp_path / "a", figure, cpu="AMD EPYC")), str(tree(tmp_path / "b", figure, cpu="Intel Xeon"))
    )
    assert (
        figures["machines"] == ("AMD EPYC, 2 CPUs", "Intel Xeon, 2 CPUs") and "different CPUs" in text.splitlines()[0]
    )
    text, _ = agreement.report(str(tmp_path / "a"), str(tmp_path / "a"))
    assert "different CPUs" not in text
    mixed = {"a": {"environment": {"cpu_model": "AMD EPYC", "cpu_count": 2}}, "b": {"environment": {}}}
    mixed["c"] = mixed["a"]
    assert agreement.machine(mixed) == "AMD EPYC, 2 CPUs (2 files); an unrecorded CPU, ? CPUs (1 file)"


def test_agreement_refuses_a_tree_without_results_in_one_sentence(tmp_path):
    with pytest.raises(LabError, match="no results files"):
        agreement.report(str(tmp_path), "reference")


def test_the_committed_reference_agrees_with_itself():
    _, figures = agreement.report("reference", "reference")
    hit, total = figures["within"]
    assert total > 500 and hit == total and figures["flips"] == 0


def test_a_direction_the_prose_states_is_one_its_conditions_compare_with_more_or_less():
    printed, stated = agreement.read_by_prose()
    assert ("ch01/ping-10k", "jedis_speedup") in stated, "chapter 1: jedis_speedup > 1"
    assert ("ch07/variadic", "get_cpu_ratio") in stated
    printed_either_way = ("ch06/ceiling", "reply_peak_8_vs_6")
    assert printed_either_way in printed and printed_either_way not in stated, "~ 1 ±25%"
    ordered_only = ("ch07/cluster", "tagged_pipeline_vs_pipeline")  # #tagged_mget_vs_pipeline > #tagged_pipeline_...
    assert ordered_only in printed and ordered_only not in stated, "an order between two figures, not a side of 1"
    assert ("ch07/cluster", "tagged_mget_vs_pipeline") in stated, "#tagged_mget_vs_pipeline > 1"


def test_measurements_pair_up_by_label_and_place_not_by_their_measured_params():
    def run(cpu_s):
        measured = [
            {"label": "depth", "samples_s": [1.0, 1.0, 1.0], "params": {"client_cpu_s": cpu_s}},
            {"label": "depth", "samples_s": [2.0, 2.0, 2.0], "params": {"client_cpu_s": cpu_s}},
            {"label": "short", "samples_s": [1.0, 1.0]},  # too few samples to sum up
        ]
        return {"ch02/depth": {"measurements": measured}}

    taken = agreement.samples(run([0.1]))
    assert taken == {("ch02/depth", "depth", 1): [1.0, 1.0, 1.0], ("ch02/depth", "depth", 2): [2.0, 2.0, 2.0]}
    assert agreement.estimates_within(run([0.1]), run([0.3])) == {"median": (2, 2), "fastest": (2, 2)}
