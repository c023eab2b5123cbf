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
    legs = legs_of(jobs["test"])
    assert jobs["test"]["runs-on"] == "${{ matrix.os }}" and "make ${{ matrix.make }}" in runs["test"]
    assert legs[("ubuntu-24.04", "3.12")] == ["test", "slow-machine"], "CI runs what .ci/run runs, and the busy machine"
    assert jobs["site"]["needs"] == "test" and "make book PYTHON=python3" in runs["site"], "the full sizes, every push"
    assert jobs["site"]["if"] == "github.event_name != 'pull_request'", "every push, never a pull request"
    default_branch = "github.ref_name == github.event.repository.default_branch"
    upload = next(step for step in jobs["site"]["steps"] if step.get("with", {}).get("path") == "build/site")
    assert upload["if"] == default_branch and jobs["deploy"]["if"] == default_branch, (
        "only the default branch publishes"
    )
    assert jobs["deploy"]["needs"] == "site" and jobs["deploy"]["permissions"] == {
        "pages": "write",
        "id-token": "write",
    }


def legs_of(job: dict) -> dict[tuple[str, str], list[str]]:
    legs: dict[tuple[str, str], list[str]] = {}
    for leg in job["strategy"]["matrix"]["include"]:
        legs.setdefault((leg["os"], leg["python"]), []).append(leg["make"])
    return legs


def test_the_quick_book_runs_on_every_python_the_setup_page_names():
    setup = (REPO / "site" / "setup.md").read_text()
    legs = legs_of(yaml.safe_load(WORKFLOW.read_text())["jobs"]["test"])
    for python in ("3.11", "3.13", "3.14"):
        assert python in setup and legs[("ubuntu-24.04", python)] == ["book QUICK=1"], python


def test_the_published_site_links_its_repository():
    env = yaml.safe_load(WORKFLOW.read_text())["env"]
    assert env["PIPELAB_REPO_URL"] == "${{ github.server_url }}/${{ github.repository }}"


def test_the_quick_book_runs_on_a_mac_with_homebrews_redis_benchmark():
    test = yaml.safe_load(WORKFLOW.read_text())["jobs"]["test"]
    assert legs_of(test)[("macos-14", "3.12")] == ["book QUICK=1"], "macos-14 is Apple silicon (arm64)"
    steps = {step.get("run", ""): step.get("if", "") for step in test["steps"]}
    assert steps["brew install redis"] == "runner.os == 'macOS'"
    apt = next(run for run in steps if "apt-get" in run)
    assert steps[apt] == "runner.os == 'Linux'", "a Mac has no apt-get"
