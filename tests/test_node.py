"""The Node runner (pipelab.node) and chapter 10's Node functions: a missing or old toolchain is one sentence
and the chapter measures nothing in Node, the lock is installed once until it changes, a result line becomes
a run, made-up results fit the chapter's shaping; and, where Node is installed, the examples' direction."""

from __future__ import annotations

import json
import shutil

import pytest

from pipelab import node
from pipelab.chapters.ch10 import auto as ch10_auto
from pipelab.chapters.ch10 import node as ch10_node
from pipelab.chapters.ch10.toolchains import missing_toolchains
from pipelab.errors import LabError
from pipelab.host import Unavailable
from pipelab.jbang import JavaRun
from pipelab.server import Endpoint
from tests.conftest import executable

RESULT = {
    "example": "ch10-auto",
    "node_version": "20.20.2",
    "clients": {"ioredis": "6.0.0", "redis": "6.3.1"},
    "size": 60,
    "modes": {"ioredis_auto_c16": [0.06, 0.061], "ioredis_off_c16": [0.06, 0.07]},
    "ops": {"ioredis_auto_c16": 6000, "ioredis_off_c16": 3000},
    "cpu_s": {"ioredis_auto_c16": [0.05, 0.05], "ioredis_off_c16": [0.06, 0.06]},
    "fields": {
        "ioredis_auto_c16": {"client": "ioredis", "mode": "auto", "callers": 16, "rtt_ms": 0, "cmds_per_read": 9.5},
        "ioredis_off_c16": {"client": "ioredis", "mode": "off", "callers": 16, "rtt_ms": 0, "cmds_per_read": 1.2},
    },
    "paired": {"ioredis_auto_c16": "ioredis_auto_c16 / ioredis_off_c16", "ioredis_off_c16": "x"},
    "facts": {"hol_ioredis_shared_p99_us": 9000, "hol_ioredis_separate_p99_us": 3000, "hol_ioredis_shared_p50_us": 800},
}


@pytest.fixture
def fake_node(tmp_path, monkeypatch):
    """A stand-in node (prints its version, or its arguments and one result line) and npm (logs each
    `ci` and makes node_modules) first on PATH; examples in tmp_path/src, installs under tmp_path/tools."""
    bin_dir, src = tmp_path / "bin", tmp_path / "src"
    bin_dir.mkdir()
    src.mkdir()
    (src / "package.json").write_text('{"name": "demo"}\n')
    (src / "package-lock.json").write_text('{"lockfileVersion": 3}\n')
    (src / "demo.mjs").write_text("// a demo example\n")
    log = tmp_path / "npm.log"
    executable(
        bin_dir / "node",
        f"""\
        #!/bin/sh
        if [ "$1" = --version ]; then echo "${{FAKE_NODE_VERSION:-v20.20.2}}"; exit 0; fi
        if [ "$1" = fail.mjs ]; then echo "ReplyError: NOAUTH Authentication required." >&2; exit 1; fi
        echo "demo: $2 $3 $4 $5 url=$REDIS_URL prefix=$PIPELAB_PREFIX"
        echo 'PIPELAB-RESULT {json.dumps(RESULT)}'
        """,
    )
    executable(bin_dir / "npm", f'#!/bin/sh\necho "$@" >> {log}\n/bin/mkdir -p node_modules\n')
    monkeypatch.setenv("PATH", str(bin_dir))  # the fakes use absolute paths for the rest
    monkeypatch.setenv("PIPELAB_TOOLS", str(tmp_path / "tools"))
    monkeypatch.delenv(node.OFF_VAR, raising=False)
    monkeypatch.setattr(node, "EXAMPLES", src)
    return src, log


def test_node_off_is_one_sentence_and_the_chapter_measures_nothing_in_node(monkeypatch):
    monkeypatch.setenv(node.OFF_VAR, "off")
    with pytest.raises(Unavailable) as err:
        node.require_node()
    sentence = str(err.value)
    assert "\n" not in sentence and sentence.endswith(".") and "PIPELAB_NODE=off" in sentence
    assert node.unavailable() == sentence
    assert missing_toolchains()["Node.js"] == sentence
    # never touches the lab: None stands in for it
    assert ch10_node.measure_node_explicit(None) is None
    assert ch10_node.measure_node_auto(None) is None
    assert ch10_node.measure_node_cluster(None, None) is None


def test_no_node_and_an_old_node_each_say_what_to_install(fake_node, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_NODE_VERSION", "v18.19.0")
    with pytest.raises(Unavailable, match=r"^Node\.js 18 is at .*need 20 or newer: install a newer one"):
        node.require_node()
    monkeypatch.setenv("FAKE_NODE_VERSION", "v22.1.0")
    assert node.require_node()[0].endswith("/bin/node")
    (tmp_path / "bin" / "npm").unlink()  # node without npm is no toolchain either
    with pytest.raises(Unavailable, match=r"^Node\.js 20\+ with npm is not installed here.*install it"):
        node.require_node()
    assert "\n" not in node.unavailable()


def test_the_lock_is_installed_once_until_it_changes(fake_node):
    src, log = fake_node
    target = node.install(src)
    assert target == node.install_dir() and (target / "node_modules").is_dir() and (target / "demo.mjs").exists()
    node.install(src)
    assert log.read_text().splitlines() == ["ci --ignore-scripts --no-audit --no-fund --loglevel=error"]
    (src / "package-lock.json").write_text('{"lockfileVersion": 3, "packages": {}}\n')
    node.install(src)
    assert len(log.read_text().splitlines()) == 2
    (src / "demo.mjs").write_text("// edited\n")  # an example's edit needs no new install, only its copy
    node.install(src)
    assert len(log.read_text().splitlines()) == 2 and (target / "demo.mjs").read_text() == "// edited\n"


def test_run_example_passes_host_port_and_secret_by_environment_and_reads_the_result(fake_node):
    target = Endpoint("127.0.0.1", 6399, password="s3cret")
    run = node.run_example("demo.mjs", target, 60, 2)
    assert isinstance(run, JavaRun) and run.alias == "node demo.mjs"
    assert run.lines[0].startswith("demo: 127.0.0.1 6399 60 2 url=redis://:s3cret@127.0.0.1:6399/0 prefix=pipelab:")
    assert "policy" in run.data["placement"]
    ms = run.measurements()
    assert ms["ioredis_auto_c16"].ops == 6000 and ms["ioredis_auto_c16"].params["mode"] == "auto"
    assert ms["ioredis_auto_c16"].ops_per_s > ms["ioredis_off_c16"].ops_per_s
    with pytest.raises(LabError, match="No Node example nothing.mjs"):
        node.run_example("nothing.mjs", target)


def test_a_failing_example_is_its_last_error_line(fake_node):
    src, _ = fake_node
    (src / "fail.mjs").write_text("// fails\n")
    with pytest.raises(LabError) as err:
        node.run_example("fail.mjs", Endpoint("127.0.0.1", 6399))
    assert str(err.value) == "node fail.mjs exited with 1: ReplyError: NOAUTH Authentication required."


def test_made_up_runs_fit_the_chapters_shaping():
    rtt0, rtt1 = JavaRun("node auto.mjs", RESULT), JavaRun("node auto.mjs", json.loads(json.dumps(RESULT)))
    rtt1.data["fields"]["ioredis_auto_c16"]["rtt_ms"] = 1
    rtt1.data["facts"] = {"glide_note": "GLIDE for Node could not load its native core here (x)."}
    points = ch10_auto.auto_points([rtt0, rtt1])
    assert {(m.params["mode"], m.params["rtt_ms"]) for m in points} >= {("auto", 0.0), ("auto", 1.0)}
    (ioredis,) = ch10_auto.hol_cases({}, [rtt0, rtt1]).values()  # one client, however the chapter names it
    assert ioredis["shared"] == {"p50": 800, "p99": 9000} and ioredis["separate"]["p99"] == 3000
    assert ch10_node.node_clients([rtt0, rtt1], None) == {"node": "20.20.2", "ioredis": "6.0.0", "redis": "6.3.1"}
    assert ch10_node.glide_note([rtt0, rtt1]).startswith("GLIDE for Node could not load")
    assert ch10_node.glide_note([rtt0]) is None


def test_the_batch_wait_summary_gives_each_ways_median_turn_and_the_small_gets_share():
    facts = {"batchwait_trials": 3, "batchwait_ioredis_auto_small_us": [990, 1_990, 2_990]}
    facts |= {"batchwait_ioredis_auto_big_us": [1_000, 2_000, 3_000], "batchwait_ioredis_off_small_us": [100, 90, 80]}
    facts |= {"batchwait_ioredis_off_big_us": [1_000, 1_000, 1_000]}
    s = ch10_node.batch_wait_summary([None, JavaRun("node auto.mjs", {"facts": facts})])
    assert s["ioredis_batch_wait_auto_small"]["value"] == 1_990 and s["ioredis_batch_wait_off_small"]["value"] == 90
    assert s["ioredis_batch_wait_auto_small_vs_big"]["value"] == pytest.approx(1_990 / 2_000)
    assert s["ioredis_batch_wait_off_small_vs_big"]["value"] == pytest.approx(0.09)
    assert s["ioredis_batch_wait_trials"]["value"] == 3
    assert ch10_node.batch_wait_summary(None) == {} and ch10_node.batch_wait_summary([JavaRun("x", {})]) == {}


# --- the real examples, where Node is installed (npm ci of the lock into build/tools the first time) -----


@pytest.fixture
def real_node():
    if why := node.unavailable():
        pytest.skip(why)
    if not shutil.which("npm"):
        pytest.skip("npm is not installed here")


def test_explicit_pipelines_beat_one_by_one_and_read_many_commands_at_once(lab, real_node):
    run = node.run_example("explicit.mjs", lab.endpoint, 300, 1, 1, "ping")
    ms = run.measurements()
    for client, piped in (("noderedis", "exec_as_pipeline"), ("ioredis", "pipeline_exec")):
        one, batch = ms[f"ping_{client}_one_by_one"], ms[f"ping_{client}_{piped}"]
        assert batch.median < one.median, (client, batch.median, one.median)
        assert one.params["reads"] >= 0.9 * 300  # each awaited PING arrives alone
        assert batch.params["reads"] < 300 / 4  # a pipeline's PINGs arrive many to a read
        assert run.wire[f"ping_{client}_one_by_one"]["PING"] == 300
    assert run.wire["ping_noderedis_multi_exec"]["EXEC"] == 1
    assert set(run.clients) >= {"ioredis", "redis"}


def test_auto_pipelining_puts_many_commands_in_a_read_under_concurrency(lab, real_node):
    run = node.run_example("auto.mjs", lab.endpoint, 40, 1, 1, "1,32", 0, 16, 0)
    fields = run.fields
    assert fields["ioredis_auto_c32"]["cmds_per_read"] > 2
    assert fields["ioredis_auto_c1"]["cmds_per_read"] == pytest.approx(1, abs=0.2)
    assert fields["noderedis_c32"]["cmds_per_read"] > 2
    assert fields["ioredis_auto_c32"]["p99_us"] >= fields["ioredis_auto_c32"]["p50_us"] > 0


def test_an_auto_pipelined_small_get_settles_only_with_the_big_get_of_its_batch(lab, real_node):
    # No curve (one caller, 20 ms), short head-of-line turns, then the batch wait on a 2 MB value.
    run = node.run_example("auto.mjs", lab.endpoint, 20, 1, 1, "1", 0, 16, 2_000_000, 50, 2)
    f = run.facts
    trials = f["batchwait_trials"]
    got = {(way, get): f[f"batchwait_ioredis_{way}_{get}_us"] for way in ("off", "auto") for get in ("small", "big")}
    assert all(len(v) == trials for v in got.values()), got
    med = {k: sorted(v)[len(v) // 2] for k, v in got.items()}
    # on: the small GET's promise waits for the pipeline's last reply, the big one
    assert med["auto", "small"] >= 0.5 * med["auto", "big"], med
    # off: it settles when its own reply, sent first, arrives: far sooner than the big one
    assert med["off", "small"] < 0.6 * med["off", "big"], med
    s = ch10_node.batch_wait_summary([run])
    assert s["ioredis_batch_wait_auto_small_vs_big"]["value"] > 0.9
    assert s["ioredis_batch_wait_off_small_vs_big"]["value"] < 0.6
