"""The repository host's workflow: actionlint (built with `go install`, as toxiproxy is) finds nothing,
and the jobs run the reader's own commands in the order the site needs: tests (and the quick book on a
Mac), book, Pages."""

from __future__ import annotations

import os
import shutil
import subprocess

import yaml

from pipelab.paths import REPO, tools_dir
from tests.conftest import unavailable

ACTIONLINT = "github.com/rhysd/actionlint/cmd/actionlint"
ACTIONLINT_VERSION = "v1.7.12"
WORKFLOW = REPO / ".github" / "workflows" / "book.yml"


def actionlint() -> str:
    target = tools_dir() / f"actionlint-{ACTIONLINT_VERSION}"
    built = target / "actionlint"
    if built.exists():
        return str(built)
    go = shutil.which("go")
    if not go:
        unavailable("no Go to build actionlint with")
    done = subprocess.run(
        [go, "install", f"{ACTIONLINT}@{ACTIONLINT_VERSION}"],
        capture_output=True,
        text=True,
        env=dict(os.environ, GOBIN=str(target), GOFLAGS="-modcacherw"),
        timeout=600,
    )
    if done.returncode != 0:
        unavailable(f"go install actionlint failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    return str(built)


def test_actionlint_finds_nothing_in_the_workflow():
    done = subprocess.run([actionlint(), str(WORKFLOW)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflow_tests_then_builds_the_book_then_deploys_it():
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    runs = {name: " ".join(step.get("run", "") for step in job.get("steps", [])) for name, job in jobs.items()}
    legs = {leg["os"]: leg["make"] for leg in jobs["test"]["strategy"]["matrix"]["include"]}
    assert jobs["test"]["runs-on"] == "${{ matrix.os }}" and "make ${{ matrix.make }}" in runs["test"]
    assert legs["ubuntu-24.04"] == "test", "CI runs what .ci/run runs"
    assert jobs["site"]["needs"] == "test" and "make book" in runs["site"]
    assert any(step.get("with", {}).get("path") == "build/site" for step in jobs["site"]["steps"])
    assert jobs["deploy"]["needs"] == "site" and jobs["deploy"]["permissions"] == {
        "pages": "write",
        "id-token": "write",
    }
    assert "pull_request" in jobs["site"]["if"], "a pull request is tested, never published"


def test_the_quick_book_runs_on_a_mac_with_homebrews_redis_benchmark():
    test = yaml.safe_load(WORKFLOW.read_text())["jobs"]["test"]
    legs = {leg["os"]: leg["make"] for leg in test["strategy"]["matrix"]["include"]}
    assert legs["macos-14"] == "book QUICK=1", "macos-14 is Apple silicon (arm64)"
    steps = {step.get("run", ""): step.get("if", "") for step in test["steps"]}
    assert steps["brew install redis"] == "runner.os == 'macOS'"
    apt = next(run for run in steps if "apt-get" in run)
    assert steps[apt] == "runner.os == 'Linux'", "a Mac has no apt-get"
