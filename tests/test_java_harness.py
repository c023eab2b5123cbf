"""LabSupport on programs the test writes: its result line escapes what JSON must escape; a collection the
young generation would start falls before a timed task, not inside it; a first recorded round still
warming up joins the warm-up."""

from __future__ import annotations

import json
import math
import subprocess

import pytest

from pipelab import jbang
from pipelab.book import citations
from pipelab.paths import REPO


def _run(tmp_path, name: str, body: str, *, options: str = "", env: dict | None = None) -> dict:
    """A Java program on LabSupport whose main runs `body` (which ends by printing one JSON line); that line."""
    script = tmp_path / f"{name}.java"
    (jedis,) = citations.java_deps()["redis.clients:jedis"]  # LabSupport compiles against the examples' one Jedis
    script.write_text(f"""//DEPS redis.clients:jedis:{jedis}
//SOURCES {REPO / "java-examples" / "common" / "LabSupport.java"}
{options}
import java.util.LinkedHashMap;
import java.util.Map;

public class {name} {{
    static final Object[] SINK = new Object[64];

    public static void main(String[] args) throws Exception {{
        {body}
    }}
}}
""")
    done = subprocess.run(
        jbang.jbang_argv([str(script)]),
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**jbang.jbang_env(), **(env or {})},  # after jbang_env, which sets the repeat rule
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _measured(task: str) -> str:
    """A body that times `task` (a LabSupport.Step) with LabSupport.measure: 20 rounds after 1 warm-up."""
    return f"""LabSupport.Settings s = new LabSupport.Settings("harness", "127.0.0.1", 6379, 0, 20, 1);
        LabSupport.Step task = {task};
        LabSupport.Samples samples = LabSupport.measure(s, null, task, null);
        System.out.println(LabSupport.toJson(Map.of("wall", samples.wall, "warmup", samples.warmup,
                "collected", samples.collected)));"""


@pytest.mark.times_nothing  # a JBang build and one JVM: beside the work before the notebooks
def test_the_result_line_escapes_what_json_must_escape(jdk, tmp_path):
    """LabSupport writes its JSON with Gson: quotes, backslashes, newlines and control characters in keys
    and texts reach Python intact, and a NaN stays a number Python reads."""
    parsed = _run(
        tmp_path,
        "EscapeCheck",
        """Map<String, Object> facts = new LinkedHashMap<>();
        facts.put("key \\" \\\\ \\n \\u0001", "text \\" \\\\ \\n \\u0001 <&>");
        facts.put("nan", Double.NaN);
        System.out.println(LabSupport.toJson(facts));""",
    )
    assert parsed['key " \\ \n \x01'] == 'text " \\ \n \x01 <&>'
    assert math.isnan(parsed["nan"])


@pytest.mark.times_nothing  # it counts collections, which a busy machine does not move
def test_a_young_collection_falls_before_a_timed_task_not_inside_it(jdk, tmp_path):
    # Each run allocates 16 MiB that escapes, in a 48 MiB young generation: left alone, a collection
    # would fall inside about one run in three. Twenty recorded runs, none with a collection inside.
    ran = _run(
        tmp_path,
        "RoomCheck",
        _measured("""() -> {
            for (int i = 0; i < 256; i++) {
                SINK[i % SINK.length] = new byte[64 * 1024];
            }
        }"""),
        options="//JAVA_OPTIONS -XX:+UseSerialGC -Xms256m -Xmx256m -Xmn60m",
        env={"PIPELAB_REPEAT_RULE": ""},  # exactly the asked-for rounds
    )
    assert len(ran["wall"]) == 20
    assert ran["collected"] == 0, f"{ran['collected']} of 20 timed runs had a collection inside"


@pytest.mark.measures  # it times sleeps
def test_a_first_recorded_round_still_warming_up_joins_the_warm_up(jdk, tmp_path):
    # Two 40 ms runs, then one of 30 ms, then 5 ms each: a warm-up capped at 0.05 s stops after the
    # two slow ones, so the 30 ms run comes first among the recorded ones, and the next is 6x faster:
    # over the rule's 4x even when the shared VM stretches a 5 ms sleep by a third (20 ms against a
    # 5.3 ms round fell short of 4x in CI).
    ran = _run(
        tmp_path,
        "TailCheck",
        _measured("""new LabSupport.Step() {
            int calls;

            public void run() throws Exception {
                Thread.sleep(++calls <= 2 ? 40 : calls == 3 ? 30 : 5);
            }
        }"""),
        env={"PIPELAB_REPEAT_RULE": "0.05,0.3,0.05,4,60"},
    )
    # A 5 ms round the machine delayed by 10% may join it too: the rule at work, not a fault.
    assert len(ran["warmup"]) >= 3 and min(ran["warmup"][:3]) > 0.015, ran["warmup"]
    # The 30 ms run is not the first recorded one; a later 5 ms round the shared VM stalled (one read
    # 27.7 ms in CI) says nothing about the warm-up, so only the first and the typical round are held.
    assert ran["wall"][0] < 0.015 and sorted(ran["wall"])[len(ran["wall"]) // 2] < 0.015, ran["wall"]
