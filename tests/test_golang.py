"""The Go runner (pipelab.golang) and chapter 10's Go shaping, without Go: a missing or old toolchain is one
sentence, a build is kept until a source changes, a result line becomes a run; made-up results merge and
summarise."""

from __future__ import annotations

import json

import pytest

from pipelab import golang
from pipelab.chapters.ch10 import go as ch10_go
from pipelab.errors import LabError
from pipelab.host import Unavailable
from pipelab.jbang import JavaRun
from pipelab.server import Endpoint
from tests.conftest import executable

RESULT = {
    "size": 60,
    "modes": {"rueidis_auto_c4": [0.06, 0.062], "goredis_pool_c4": [0.09, 0.1]},
    "ops": {"rueidis_auto_c4": 4000, "goredis_pool_c4": 2500},
    "cpu_s": {"rueidis_auto_c4": [0.05, 0.05], "goredis_pool_c4": [0.07, 0.08]},
    "fields": {
        "rueidis_auto_c4": {"client": "rueidis", "mode": "auto", "callers": 4, "cmds_per_read": 3.2},
        "goredis_pool_c4": {"client": "go-redis", "mode": "pool", "callers": 4, "cmds_per_read": 1.0},
    },
    "paired": {
        "rueidis_auto_c4": "rueidis_auto_c4 / goredis_pool_c4",
        "goredis_pool_c4": "rueidis_auto_c4 / goredis_pool_c4",
    },
    "facts": {"hol_big_bytes": 2_000_000},
    "clients": {"rueidis": "1.0.79"},
}


@pytest.fixture
def module(tmp_path, monkeypatch):
    """A Go module of one example, `demo`, a stand-in go that logs each build and writes `binary` (a script
    printing one result line) where -o says, and the build caches under tmp_path."""
    mod = tmp_path / "go"
    (mod / "lab").mkdir(parents=True)
    (mod / "demo").mkdir()
    (mod / "go.mod").write_text("module pipelab/ch10\n\ngo 1.24.0\n")
    (mod / "go.sum").write_text("")
    (mod / "lab" / "lab.go").write_text("package lab\n")
    (mod / "demo" / "main.go").write_text("package main\n")
    program = executable(
        tmp_path / "program",
        f"""\
        #!/bin/sh
        echo "demo: $1 $2 $3"
        echo 'PIPELAB-RESULT {json.dumps(RESULT)}'
        """,
    )
    log = tmp_path / "builds.log"
    fake_go = executable(
        tmp_path / "fakego",
        f"""\
        #!/bin/sh
        if [ "$1" = env ]; then echo "${{FAKE_GOVERSION:-go1.26.8}}"; exit 0; fi
        echo "$GOFLAGS $GOMODCACHE" >> {log}
        cp {program} "$4"
        """,
    )
    monkeypatch.setattr(golang, "MODULE_DIR", mod)
    monkeypatch.setenv("PIPELAB_TOOLS", str(tmp_path / "tools"))
    monkeypatch.setenv(golang.GO_VAR, str(fake_go))
    return mod, log


def test_go_off_is_one_sentence_and_the_chapter_measures_nothing(monkeypatch):
    monkeypatch.setenv(golang.GO_VAR, "off")
    with pytest.raises(Unavailable) as err:
        golang.require_go()
    sentence = str(err.value)
    assert "\n" not in sentence and sentence.endswith(".") and "install Go" in sentence
    assert golang.available() == sentence
    # never touches the lab: None stands in for it
    assert ch10_go.measure_go_explicit(None) is None
    assert ch10_go.measure_go_auto(None) is None
    assert ch10_go.measure_go_cluster(None, None) is None


def test_without_a_home_gos_caches_stay_in_build(monkeypatch):
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    env = golang.go_env()
    assert env["GOMODCACHE"] == str(golang.tools_dir() / "go" / "mod")
    assert env["GOCACHE"] == str(golang.tools_dir() / "go" / "cache")


def test_no_go_on_path_and_a_too_old_go_each_say_what_to_install(module, monkeypatch, tmp_path):
    monkeypatch.setenv(golang.GO_VAR, str(tmp_path / "no-such-go"))
    with pytest.raises(Unavailable, match=r"^No Go toolchain found: install Go 1\.24 or newer"):
        golang.require_go()
    monkeypatch.setenv(golang.GO_VAR, str(tmp_path / "fakego"))
    monkeypatch.setenv("FAKE_GOVERSION", "go1.21.3")
    with pytest.raises(Unavailable, match=r"is Go 1\.21, too old for the Go examples: install Go 1\.24"):
        golang.require_go()
    monkeypatch.setenv("FAKE_GOVERSION", "go1.24.0")
    assert golang.require_go().endswith("fakego")


def test_a_build_is_kept_until_a_source_or_go_sum_changes(module, monkeypatch):
    mod, log = module
    first = golang.build("demo")
    assert first.exists() and first.parent == golang.tools_dir() / "go" / "bin"
    golang.build("demo")
    assert len(log.read_text().splitlines()) == 1  # the second run reused the binary
    assert "-mod=readonly" in log.read_text() and str(golang.tools_dir()) not in log.read_text()  # go's own caches
    (mod / "demo" / "main.go").write_text("package main // changed\n")
    golang.build("demo")
    (mod / "go.sum").write_text("example.com/x v1.0.0 h1:abc=\n")
    golang.build("demo")
    (mod / "lab" / "lab.go").write_text("package lab // changed\n")
    golang.build("demo")
    assert len(log.read_text().splitlines()) == 4
    with pytest.raises(LabError, match="No Go example 'nothing'"):
        golang.build("nothing")


def test_run_example_passes_host_and_port_and_reads_the_result_line(module):
    run = golang.run_example("demo", Endpoint("127.0.0.1", 6399), 60, 2)
    assert run.lines == ["demo: 127.0.0.1 6399 60"]
    ms = run.measurements()
    assert ms["rueidis_auto_c4"].ops == 4000 and ms["rueidis_auto_c4"].params["client"] == "rueidis"
    assert run.clients == {"rueidis": "1.0.79"}


def test_a_failing_example_is_one_sentence(module, tmp_path):
    mod, _ = module
    executable(golang.build("demo"), "#!/bin/sh\necho 'Cannot reach Redis at x:1: refused.' >&2\nexit 4\n")
    with pytest.raises(LabError) as err:
        golang.run_example("demo", Endpoint("127.0.0.1", 1))
    assert str(err.value) == "The Go example demo exited with 4: Cannot reach Redis at x:1: refused."


def test_the_runs_at_each_rtt_merge_into_one_with_suffixed_modes():
    zero = JavaRun("go:auto", json.loads(json.dumps(RESULT)))
    one = JavaRun("go:auto", {**json.loads(json.dumps(RESULT)), "facts": {}})
    merged = ch10_go.merge_rtts({0: zero, 1: one})
    assert set(merged.data["modes"]) == {f"{m}_rtt{r}" for m in RESULT["modes"] for r in (0, 1)}
    assert merged.data["paired"]["goredis_pool_c4_rtt1"] == "rueidis_auto_c4_rtt1 / goredis_pool_c4_rtt1"
    ms = merged.measurements()
    assert ms["rueidis_auto_c4_rtt1"].ops == 4000 and ms["rueidis_auto_c4_rtt1"].params["cmds_per_read"] == 3.2
    assert merged.facts == {"hol_big_bytes": 2_000_000}


def test_the_facts_summary_shapes_made_up_facts():
    facts = {"hol_big_bytes": 2_000_000}
    for i, case in enumerate(ch10_go.HOL_CASES):
        facts |= {f"hol_{case}_p50_us": 50 * (i + 1), f"hol_{case}_p99_us": 100 * (i + 1)}
        facts |= {f"hol_{case}_max_us": 900, f"hol_{case}_gets": 1000}
    for case in ch10_go.MULTI_CASES:
        facts |= {f"multi_{case}_{k}": 2 for k in ("batch", "connections", "batches", "p50_us", "p99_us")}
    cluster = {"masters": 2, "node0_commands": 40, "node0_reads": 2, "node1_commands": 60, "node1_reads": 3}
    cluster |= {"crossslot_mget_error": "CROSSSLOT Keys in request don't hash to the same slot"}
    cluster |= {
        "crossslot_tx_error": "",
        "crossslot_mget_values": 0,
        "crossslot_mget_nodes": 2,
        "crossslot_tx_execs": 2,
    }
    cluster |= {"crossslot_mget_server_errors": 1, "crossslot_tx_commands": 4}
    out = ch10_go.go_facts_summary(
        JavaRun("go:auto", {"facts": facts}), JavaRun("go:cluster", {"facts": cluster, "size": 100})
    )
    assert out["go_hol_shared_gets"]["value"] == 1000 and "go_hol_shared_p99" not in out  # hol_summary's
    assert out["go_hol_big_mb"]["text"] == "2 MB"
    assert out["go_cluster_node1_commands"]["value"] == 60 and "go_cluster_node2_commands" not in out
    assert out["go_crossslot_mget_error"]["text"].startswith("CROSSSLOT")
    assert out["go_crossslot_tx_error"]["text"] == "none" and out["go_cluster_n"]["value"] == 100
    assert ch10_go.go_facts_summary(None) == {}


def test_the_direct_path_phases_become_p50s_with_costs_paired_by_turn():
    before, cancel, after = [100, 110, 90, 105, 95], [120, 132, 108, 126, 114], [150, 165, 135, 157, 142]
    facts = {"direct_turns": 5, "direct_gets": 300, "direct_overlap_goroutines": 10, "gomaxprocs": 1}
    for phase, rounds, grown in (
        ("background_before", before, 0),
        ("cancel", cancel, 10),
        ("background_after", after, 0),
    ):
        facts |= {f"direct_{phase}_p50_us_rounds": rounds, f"direct_{phase}_p50_us": sorted(rounds)[2]}
        facts |= {f"direct_{phase}_goroutines": grown}
    out = ch10_go.go_facts_summary(JavaRun("go:auto", {"facts": facts}))
    assert out["go_direct_background_before_p50"]["value"] == 100 and "interval" in out["go_direct_cancel_p50"]
    cost = out["go_direct_cancel_cost"]
    assert cost["value"] == pytest.approx(1.2) and 1.15 < cost["interval"][0] <= 1.2 <= cost["interval"][1] < 1.25
    assert out["go_direct_background_after_cost"]["value"] == pytest.approx(1.5)
    assert out["go_direct_cancel_goroutines"]["value"] == 10 and out["go_direct_overlap_goroutines"]["value"] == 10
    assert out["go_gomaxprocs"]["value"] == 1 and "go_direct_background_before_cost" not in out
