"""`make lab` as a trainee meets it: Redis already up, JupyterLab serving the exercises with the lab's kernel."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import browser
import pytest
import redis

from pipelab import paths
from pipelab.server import free_port
from tests.conftest import unavailable

pytestmark = pytest.mark.redis  # starts real servers (or the lab) without the session's fixtures

TOKEN = "pipelab-test"
EXERCISE = "notebooks/exercises/01-pipeline-the-loop.ipynb"


@pytest.fixture(scope="module")
def jupyterlab(isolated_build):
    reason = browser.browser_unavailable() or (
        None if importlib.util.find_spec("jupyterlab") else "JupyterLab is missing: run make test or make lab"
    )
    if reason:
        unavailable(reason)
    redis_port, web_port = free_port(), free_port()
    # A fresh JupyterLab profile: no workspace from an earlier run, and every cell rendered (no windowing,
    # so an output far down is in the page). No news setting: the lab's own defaults must keep it quiet.
    settings = isolated_build / "jupyterlab-settings"
    for name, values in {
        "notebook-extension/tracker": '{"windowingMode": "none"}',
    }.items():
        path = settings / f"@jupyterlab/{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(values)
    env = dict(
        os.environ,
        PIPELAB_PORT=str(redis_port),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(isolated_build / "jupyterlab-workspaces"),
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipelab",
            "lab",
            "--",
            f"--port={web_port}",
            "--no-browser",
            f"--IdentityProvider.token={TOKEN}",
        ],
        env=env,
        cwd=paths.REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{web_port}/"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}api/status?token={TOKEN}", timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"make lab's JupyterLab did not come up: {proc.stdout.read()[-2000:]}")
                time.sleep(0.5)
        yield base, redis_port
    finally:
        proc.send_signal(signal.SIGTERM)  # the lab stops its Redis like on Ctrl-C
        proc.wait(timeout=30)


def test_redis_is_up_while_the_lab_runs(jupyterlab):
    _, redis_port = jupyterlab
    with redis.Redis(port=redis_port) as client:
        assert client.ping()


def api(base: str, path: str, method: str = "GET", body: dict | None = None) -> dict:
    data = (
        None
        if body is None
        else json.dumps({"type": "notebook", "format": "json", "content": body["content"]}).encode()
    )
    request = urllib.request.Request(f"{base}api/{path}?token={TOKEN}", data=data, method=method)
    with urllib.request.urlopen(request, timeout=10) as resp:
        return json.load(resp)


def test_jupyterlab_serves_the_exercises_with_the_labs_kernel(jupyterlab):
    base, _ = jupyterlab
    listed = {item["name"] for item in api(base, "contents/notebooks/exercises")["content"]}
    assert listed == {p.name for p in (paths.REPO / "notebooks" / "exercises").glob("*.ipynb")}
    # What JupyterLab serves are the learner's working copies, not the committed notebooks.
    chapter = api(base, "contents/notebooks/01-round-trip-time.ipynb")
    assert (paths.lab_dir() / "notebooks" / "01-round-trip-time.ipynb").exists()
    assert chapter["content"]["cells"] and chapter["path"] == "notebooks/01-round-trip-time.ipynb"
    committed = paths.REPO / "notebooks" / "01-round-trip-time.ipynb"
    before = committed.read_bytes()
    chapter["content"]["cells"][0]["source"] += "\n\nA learner's note."  # what a save from the browser sends
    api(base, "contents/notebooks/01-round-trip-time.ipynb", method="PUT", body=chapter)
    assert "A learner's note." in (paths.lab_dir() / "notebooks" / "01-round-trip-time.ipynb").read_text()
    assert committed.read_bytes() == before, "a save in the lab reached notebooks/"
    specs = api(base, "kernelspecs")
    spec = specs["kernelspecs"][specs["default"]]["spec"]
    # The notebooks' kernel is the lab's own interpreter, so `import pipelab` works and attaches to this Redis.
    assert spec["display_name"] == "Python 3 (pipelab)" and spec["argv"][0] == sys.executable


def test_an_exercise_opens_in_the_browser(jupyterlab):
    base, _ = jupyterlab
    with browser.chromium_tab(base) as tab:
        page = tab.page
        page.set_default_timeout(60_000)  # JupyterLab's first load is not a static page
        page.goto(f"{base}lab/tree/{EXERCISE}?token={TOKEN}")
        # Cells render one after another: wait for the check cell itself, the notebook's last.
        page.locator(".jp-Notebook .jp-CodeCell", has_text="check_ex01").wait_for()
        shots = paths.REPO / "build" / "screenshots"
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=shots / "jupyterlab-exercise-01.png")
        # No "receive official Jupyter news?" question over the learner's first notebook: JupyterLab asks
        # while fetchNews is "none", its default; the lab's overrides make it "false".
        config = page.evaluate("JSON.parse(document.getElementById('jupyter-config-data').textContent)")
        assert config["news"] == {"disabled": True}
        url = f"{base}lab/api/settings/@jupyterlab/apputils-extension:notification?token={TOKEN}"
        with urllib.request.urlopen(url, timeout=10) as resp:
            notification = json.load(resp)
        assert notification["schema"]["properties"]["fetchNews"]["default"] == "false"
        assert page.get_by_text("official Jupyter news").count() == 0
