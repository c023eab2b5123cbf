"""Every JBang catalog entry builds; each example runs in quick mode and its JSON tells the truth."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pipelab import jbang
from pipelab.course import timings as course
from pipelab.errors import LabError
from tests.conftest import java_examples_run, needed_in_session

ALIASES = sorted(jbang.catalog_aliases())
EXAMPLES = [a for a in ALIASES if not a.startswith("ex")]  # the course's exercises: tests/test_course.py
# Arguments after host and port for a quick run; None: the chapter's notebook test runs it (JMH takes
# ~30 s; ch04-drop needs the proxy and its API; ch04-timeout's 100,000 SETs are the notebook's; chapter 5's examples need the notebook's cluster).
QUICK_ARGS = {
    "ch01-ping": (300, 3),
    "ch01-sadd": (300, 2),
    "ch02-depth": (2000, 2, 1, "1,16,1000"),
    "ch02-tls": None,  # a TLS server of its own: in the chapter 2 notebook
    "lab-connect": None,  # an ACL user over TLS: tests/test_redis_url.py
    "ch03-jedis": (1000, 2),
    "ch03-lettuce": (1000, 2),
    "ch03-spring": (1000, 2),
    "ch03-redisson": (1000, 2),
    "ch03-jmh": None,
    "ch04-lrem": (100_000, 2, 1, "1000,10000,100000", 100),
    "ch04-errors": (1, 2),
    "ch04-timeout": None,
    "ch04-drop": None,
    "ch05-sadd": None,
    "ch05-moved": None,
    "ch05-failures": None,
    "ch06-cut": None,
    "ch06-push": None,
    "ch07-mux": None,
    "ch07-watch": None,
    "ch07-glide": None,
    "ch08-lettuce": None,
    "ch08-jedis": None,
    "ch08-jedis-shared": None,
    "ch08-redisson": None,
    "ch08-spring": None,
    "ch08-hangs": None,
    "ch09-load": None,  # the chapter 9 notebook runs it, each mode inside its Watch
    "ch09-delete": None,  # needs chapter 5's cluster, which the chapter 9 notebook starts
}


def lrem_grows_ltrim_stays_flat(run) -> None:
    usec = {
        way: {int(k.rsplit("_", 1)[1]): v for k, v in run.facts.items() if k.startswith(f"{way}_usec_per_call_")}
        for way in ("lrem", "ltrim")
    }
    small, large = min(usec["lrem"]), max(usec["lrem"])
    assert large >= 100 * small, usec
    # Against the fastest smaller list: one stalled call (a slow spell of the VM) can inflate any one size.
    fastest_smaller = min(v for length, v in usec["lrem"].items() if length < large)
    assert usec["lrem"][large] >= 5 * fastest_smaller, usec
    # LTRIM removes one element whatever the length; commandstats counts whole microseconds, and a
    # slow spell of the VM during 100 calls of under a microsecond adds some (9.65 µs a call once in CI).
    assert usec["ltrim"][large] <= 3 * usec["ltrim"][small] + 15, usec
    assert usec["ltrim"][large] * 20 <= usec["lrem"][large], usec
    m = run.measurements()
    assert m[f"lrem_{large}"].median > 10 * m[f"ltrim_{large}"].median, m


def bad_command_runs_the_rest(run) -> None:
    clients = ("jedis", "lettuce", "redisson", "spring")
    for c in clients:
        assert run.facts[f"{c}_later_commands_ran"] is True, f"{c}: the commands after the failed one ran"
        assert run.facts[f"{c}_wrongtype_seen"] is True, f"{c} surfaced the WRONGTYPE error"
        assert run.facts[f"{c}_server_failed_calls"] == 1, run.facts
        assert {"set", "lpush", "incr", "get"} <= set(run.wire[c]), run.wire[c]
    # Which clients keep the good commands' results is the finding; Spring on Lettuce loses them.
    assert [run.facts[f"{c}_good_results_available"] for c in clients] == [True, True, True, False], run.facts


DIRECTIONS = {"ch04-lrem": lrem_grows_ltrim_stays_flat, "ch04-errors": bad_command_runs_the_rest}


def pipelining_wins(alias: str, measurements: dict) -> None:
    """The direction each example exists to show, with tolerant bounds."""
    if alias == "ch02-depth":
        depth1 = measurements["depth_1"]
        deepest = max(measurements.values(), key=lambda m: m.params["depth"])
        assert deepest.ops_per_s >= 3 * depth1.ops_per_s, f"{deepest} vs {depth1}"
        return
    baseline_mode = next(iter(measurements))  # every other example reports its one-by-one loop first
    assert "one_by_one" in baseline_mode, baseline_mode
    baseline = measurements[baseline_mode]
    same_work = {mode: m for mode, m in measurements.items() if mode != baseline_mode and m.ops == baseline.ops}
    if alias.startswith("ch01"):  # each Jedis pipeline beats the loop; a cold Redisson needs chapter 3's warm-up
        same_work = {mode: m for mode, m in same_work.items() if not mode.startswith("redisson")}
        assert all(m.ops_per_s > baseline.ops_per_s for m in same_work.values()), same_work
    else:
        best = max(same_work.values(), key=lambda m: m.ops_per_s)
        assert best.ops_per_s > baseline.ops_per_s, f"{best} vs {baseline}"


@pytest.mark.parametrize("alias", ALIASES)
def test_catalog_entry_builds(alias, jdk, isolated_build, request):
    if alias in java_examples_run(isolated_build):  # a notebook ran it, so JBang built it
        return
    # The course's tests run every exercise and solution: when this session has them, their runs
    # are the proof that JBang built the alias.
    exercise = next((ex for ex in course.EXERCISES if alias in (ex.alias(False), ex.alias(True))), None)
    if exercise and alias == exercise.alias(True) and needed_in_session(request, "course_run"):
        assert request.getfixturevalue("course_run")["summary"][f"ex{exercise.number}_java_printed"]["text"]
        return
    if exercise and alias == exercise.alias(False) and needed_in_session(request, "unsolved_java_runs"):
        done, _ = request.getfixturevalue("unsolved_java_runs")[alias]
        assert "not solved yet" in done.stdout + done.stderr, done.stdout + done.stderr
        return
    jbang.jbang(["build", alias], quiet=True)


def test_every_alias_has_a_quick_run():
    assert set(QUICK_ARGS) == set(EXAMPLES)


@pytest.mark.parametrize("alias", EXAMPLES)
def test_example_runs_quick_and_shows_its_direction(alias, jdk, lab):
    if QUICK_ARGS[alias] is None:
        pytest.skip(f"{alias} runs in its chapter's notebook test")
    size, repeat, *rest = QUICK_ARGS[alias]
    run = lab.java(alias, size, repeat, *rest)
    assert run.data["example"] == alias and run.data["size"] == size
    assert run.clients and all(run.clients.values()), "each example reports its client versions"
    measurements = run.measurements()
    # Quick mode (the tests'): exactly the asked-for repetitions, as run by hand.
    assert all(len(m.samples) == repeat for m in measurements.values())
    if alias in DIRECTIONS:
        DIRECTIONS[alias](run)
    else:
        pipelining_wins(alias, measurements)
    with lab.client() as client:
        assert client.dbsize() == 0, "the example left keys behind"


def test_an_example_run_by_hand_prints_its_readable_lines_and_files_the_result_line(jdk, session, isolated_build):
    """`pipelab jbang` is how a reader or trainer runs an example: the line the harness reads goes to a file."""
    where = [session.endpoint.host, str(session.endpoint.port)]
    done = subprocess.run(
        [sys.executable, "-m", "pipelab", "jbang", "ch01-ping", *where, "200", "2", "0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert jbang.RESULT_MARK not in done.stdout and "jedis one by one" in done.stdout, done.stdout
    saved = isolated_build / "examples" / "ch01-ping.json"
    assert f"the full result, as the book reads it: {saved}" in done.stdout, done.stdout
    assert json.loads(saved.read_text())["example"] == "ch01-ping"


def test_the_depth_example_runs_the_depths_it_is_given_and_refuses_a_bad_list(jdk, lab):
    run = lab.java("ch02-depth", 500, 1, 0, "3,7")
    assert sorted(run.measurements()) == ["depth_3", "depth_7"]
    jvm = run.data["jvm"]  # the JVM inherits this process's CPUs, and HotSpot picks its collector from them
    assert jvm["cpus"] == len(os.sched_getaffinity(0)), jvm
    # HotSpot's default: Serial on one CPU; G1 on more, unless memory is small (then Serial too).
    assert (jvm["gc"] == "Serial") if jvm["cpus"] == 1 else (jvm["gc"] in ("G1", "Serial")), jvm
    assert lab.environment()["jvms"]["ch02-depth"].startswith(f"{jvm['gc']}, {jvm['cpus']} CPU")
    with pytest.raises(LabError, match="depths must be a comma-separated list"):
        lab.java("ch02-depth", 500, 1, 0, "1,two")


def test_the_shared_connection_example_runs_only_the_clients_it_is_given_and_no_list_leaves_out_head_of_line(jdk, lab):
    # Chapter 10 runs ch07-mux this way: Jedis and Lettuce, no Redisson, no head-of-line part.
    run = lab.java("ch07-mux", 200, 1, 1, "1,4", 0, 2, 200, "jedis,lettuce")
    assert sorted(run.measurements()) == ["jedis_pool_t1", "jedis_pool_t4", "lettuce_t1", "lettuce_t4"]
    assert not [name for name in run.facts if name.startswith(("hol_", "redisson", "list_length"))], run.facts
    with pytest.raises(LabError, match="clients must be some of jedis,lettuce,redisson, not redis"):
        lab.java("ch07-mux", 200, 1, 1, "1", 0, 2, 200, "redis")


def test_example_refuses_a_database_with_foreign_keys(jdk, lab, foreign_key):
    with pytest.raises(LabError, match="not the lab's"):
        lab.java("ch01-sadd", 10, 1)


def test_a_failure_is_told_by_its_cause_not_by_a_stack_frame():
    trace = (
        'Exception in thread "main" java.lang.IllegalStateException: round 3 failed\n'
        "\tat Ex09.main(Ex09.java:40)\n"
        "Caused by: java.net.SocketTimeoutException: Read timed out\n"
        "\tat java.base/sun.nio.ch.NioSocketImpl.timedRead(NioSocketImpl.java:288)\n"
        "\t... 4 more\n"
    )
    assert jbang.failure_line(trace) == "Caused by: java.net.SocketTimeoutException: Read timed out"
    assert jbang.failure_line("npm ERR! 404 Not Found\n") == "npm ERR! 404 Not Found"
    assert jbang.failure_line("\n \n") == "no output"
    jbang_says = "[jbang] [ERROR] Error creating/updating jar\n[jbang] Run with --verbose for more details.\n"
    assert jbang.failure_line(jbang_says) == "[jbang] [ERROR] Error creating/updating jar"


def test_two_processes_compiling_one_alias_into_a_fresh_cache_both_get_its_command(jdk, tmp_path):
    """What the course and a notebook do at once after a change to a common source: unserialised,
    one of the two JBangs failed with "Error creating/updating jar"."""
    learn = "from pipelab import jbang; print(jbang.launch('ch01-ping')['command'].split()[-1])"
    env = dict(os.environ, JBANG_CACHE_DIR=str(tmp_path / "cache"))
    both = [
        subprocess.Popen(
            [sys.executable, "-c", learn], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    said = [run.communicate(timeout=600) for run in both]
    assert [run.returncode for run in both] == [0, 0], said
    assert [out.strip() for out, _ in said] == ["PingBench"] * 2, said


def test_a_run_that_dies_of_an_exception_keeps_its_whole_stack_without_the_password(tmp_path, monkeypatch):
    from urllib.parse import quote

    from pipelab.server import Endpoint

    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path))
    monkeypatch.setattr(jbang, "require_jdk", lambda: "java")
    secret = "p@ss/w rd"
    # Stands in for the JVM: what an uncaught exception in a client library's thread prints.
    printed = (
        f"connecting with {secret} ({quote(secret, safe='')})\n"
        "java.lang.StringIndexOutOfBoundsException: begin 0, end -1, length 0\n\tat Lib.parse(Lib.java:7)\n"
    )
    script = f"import sys; sys.stderr.write({printed!r}); sys.exit(1)"
    monkeypatch.setattr(jbang, "jbang_argv", lambda args: [sys.executable, "-c", script])
    with pytest.raises(LabError) as failed:
        jbang.run_example("ch01-sadd", Endpoint("127.0.0.1", 1, password=secret))
    log = tmp_path / "logs" / "jbang-ch01-sadd.log"
    assert str(failed.value) == (
        "jbang ch01-sadd exited with 1: java.lang.StringIndexOutOfBoundsException: begin 0, end -1, length 0 "
        f"(the whole stack is in {log})"
    )
    kept = log.read_text()
    assert "at Lib.parse(Lib.java:7)" in kept and "connecting with *** (***)" in kept, kept


def test_a_known_launch_starts_no_jvm_and_one_whose_jar_is_gone_is_asked_for_again(tmp_path, monkeypatch):
    jar = tmp_path / "jars" / "PingBench.jar"
    jar.parent.mkdir()
    jar.write_bytes(b"")
    asked = []

    def launcher(args):  # JBang's launcher, as it answers for an alias: the command, then the mark
        asked.append(args[0])
        return subprocess.CompletedProcess(args, 255, f"/usr/bin/java -classpath {jar} PingBench {args[1]}\n", "")

    monkeypatch.setenv("JBANG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(jbang, "require_jdk", lambda: "/usr/bin/java")
    monkeypatch.setattr(jbang, "_from_jar", launcher)
    monkeypatch.setattr(jbang.shutil, "which", lambda name: None)  # no jbang on PATH: the jar's protocol
    first = jbang.launch("ch01-ping")
    assert first == {"command": f"/usr/bin/java -classpath {jar} PingBench", "jars": [str(jar)]}
    assert jbang.launch("ch01-ping") == first and asked == ["ch01-ping"], "the second ask reads the cache"
    assert jbang.jbang_argv(["ch01-ping", "h", "1"])[-1].endswith("PingBench h 1") and len(asked) == 1
    jar.unlink()
    jbang.launch("ch01-ping")
    assert asked == ["ch01-ping", "ch01-ping"], "a command naming a jar that is gone is not run"


def test_two_processes_learning_launches_at_once_keep_both(tmp_path, monkeypatch):
    jar = tmp_path / "PingBench.jar"
    jar.write_bytes(b"")
    store = tmp_path / "cache" / jbang.LAUNCHES

    def launcher(args):  # while this process asks JBang, another one stores the launch it learned
        store.parent.mkdir(exist_ok=True)
        store.write_text(json.dumps({"learned-elsewhere": {"command": "java Other", "jars": [str(jar)]}}))
        return subprocess.CompletedProcess(args, 255, f"/usr/bin/java -classpath {jar} PingBench {args[1]}\n", "")

    monkeypatch.setenv("JBANG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(jbang, "require_jdk", lambda: "/usr/bin/java")
    monkeypatch.setattr(jbang, "_from_jar", launcher)
    monkeypatch.setattr(jbang.shutil, "which", lambda name: None)
    jbang.launch("ch01-ping")
    assert set(json.loads(store.read_text())) == {"learned-elsewhere", jbang.launch_key("ch01-ping")}
