"""Shared fixtures: an isolated build dir, one lab session (real Redis, real toxiproxy) for the run."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from pipelab.cluster import free_cluster_port
from pipelab.errors import LabError
from pipelab.lab import Lab, Session
from pipelab.server import EmbeddedRedis, free_port
from tests.background import (
    BESIDE,
    QUEUES,
    Background,
    BeforeTheNotebooks,
    adopt,
    beside_env,
    contradict,
    course_env,
    portable_env,
    seed,
    seeded,
    unsolved_runs,
)
from tests.secured_book import BOOK_BUILD

IN_CI = os.environ.get("CI", "").lower() == "true"


def executable(path: Path, text: str) -> Path:
    """A stand-in program (node, npm, go) the tests write: `text` dedented, made executable."""
    path.write_text(textwrap.dedent(text))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def unavailable(reason: str):
    """Skip on a reader's machine that lacks a tool; in CI the tool must be there."""
    if IN_CI:
        pytest.fail(f"CI must run this test: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session", autouse=True)
def isolated_build(tmp_path_factory):
    """Tests never overwrite the reader's build/results; JBang and toxiproxy stay shared in build/tools."""
    build = tmp_path_factory.mktemp("build")
    saved = {
        k: os.environ.get(k)
        for k in (
            "PIPELAB_BUILD",
            "PIPELAB_PROGRESS",
            "REDIS_URL",
            "TOXIPROXY_URL",
            "REDIS_CLUSTER_URL",
            "PIPELAB_CLUSTER_PORT",
            "PIPELAB_QUICK",
        )
    }
    # Chapter 5's notebook starts its own cluster: on free ports, beside any lab the reader runs. Quick
    # mode: timings take exactly the rounds asked for, in this process and in the Java examples.
    os.environ.update(
        PIPELAB_BUILD=str(build),
        PIPELAB_PROGRESS="0",
        PIPELAB_CLUSTER_PORT=str(free_cluster_port()),
        PIPELAB_QUICK="1",
    )
    for key in ("REDIS_URL", "TOXIPROXY_URL", "REDIS_CLUSTER_URL"):
        os.environ.pop(key, None)
    yield build
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def session(isolated_build):
    s = Session(port=free_port()).start()
    yield s
    s.stop()


@pytest.fixture
def lab(session):
    lab = Lab(session.describe(), quick=True)
    yield lab
    lab.cleanup()


@pytest.fixture
def rtt_lab(lab):
    if not lab.rtt_available:
        unavailable(lab.proxy_note)
    return lab


@pytest.fixture
def other_redis():
    """A second throw-away server, for tests that put foreign keys in it."""
    with EmbeddedRedis(port=free_port()) as server:
        yield server


@pytest.fixture(scope="session")
def jdk():
    from pipelab.jbang import require_jdk

    try:
        return require_jdk()
    except LabError as err:
        unavailable(str(err))


# The order of a session (pytest_collection_modifyitems, below): first the tests that
# neither measure on the session's lab nor read the notebooks (or whose clocks hold on a busy
# machine: times_nothing), beside the work the session needs that
# measures nothing (the course's solutions, the secured and portable books, site builds, chapter 10's
# npm ci and go build, the chapters that time nothing), started at once in queues; then the notebooks,
# once the work a clock decides is done, with only lowest-priority work beside them (LOWERED_FIXTURES,
# lowered from its start);
# then the tests that measure on the lab or read what the notebooks did. On 2 cores a notebook beside
# other work at normal priority measures that work too (its figures moved, and direction tests flaked).


@pytest.fixture(scope="session", autouse=True)
def before_the_notebooks(request):
    """Starts the background work (BeforeTheNotebooks) with the session when a test of it reads the notebooks."""
    if not needed_in_session(request, "executed_notebooks"):
        yield None
        return
    from pipelab import jbang, proxy

    try:  # fetched and built once here, not by two jobs at once
        jbang.ready()
        proxy.find_toxiproxy()
    except LabError:
        pass  # the tests that need them say so
    jobs = request.getfixturevalue("background")  # not a parameter: it would mark every test "redis"
    assert sorted(sum(QUEUES, ())) == sorted(jobs), "each background job has its place in one queue"
    unwanted = {f"ch{chapter}" for chapter in BESIDE if chapter not in notebooks_run()}
    yield BeforeTheNotebooks(
        [
            [jobs[name] for name in queue if needed_in_session(request, jobs[name].needed_by) and name not in unwanted]
            for queue in QUEUES
        ]
    )


@pytest.fixture(scope="session")
def background(isolated_build, tmp_path_factory) -> dict:
    """Chapter 10's npm ci and go builds ("tools"), the course's solutions run and timed as a trainer runs
    them (`pipelab course --quick`), its Java exercises run unsolved, a quick chapter against an ACL user
    over TLS ("secured"), a quick chapter 1 without Linux's facilities ("portable", pipelab.host), and
    the site built (mkdocs --strict) before the reader measured anything: with the committed reference
    ("reference"), with no reference either ("nothing"), and with one results file of the reader's that
    contradicts a sentence of chapter 1 ("contradicted"), and the quick chapters of BESIDE on labs of
    their own ("ch08"). QUEUES says what runs after what."""
    from pipelab import paths, server
    from pipelab.book import build as book

    # The links under build/servers (Debian's Redis 7.0 by name) are made once here: the jobs below share
    # this build dir, and two of them making the same link at once failed one with FileExistsError.
    server.server_builds()
    start = dict(os.environ)  # as the session starts: no test has changed it yet (a PATH without java, say)
    kernels = traced_kernels(isolated_build)
    base = tmp_path_factory.mktemp("unmeasured")
    secured = isolated_build / "secured"
    jobs = {
        f"ch{chapter}": Background(
            [sys.executable, "-m", "pipelab", "book", "--chapters", chapter, "--quick", "--no-site"],
            lambda chapter=chapter: beside_env(start, isolated_build / f"ch{chapter}", kernels),
            isolated_build / f"ch{chapter}.log",
            "executed_notebooks",
            made=isolated_build / f"ch{chapter}",
        )
        for chapter in BESIDE
    } | {
        "tools": Background(
            [sys.executable, "-m", "tests.background", "tools"],
            lambda: start,
            isolated_build / "tools.log",
            "executed_notebooks",
        ),
        "portable": Background(
            [sys.executable, "-m", "pipelab", "book", "--chapters", "1", "--quick", "--no-site"],
            lambda: portable_env(start, isolated_build / "portable"),
            isolated_build / "portable.log",
            "portable_book",
            made=isolated_build / "portable",
        ),
        "secured": Background(
            [sys.executable, "-m", "tests.secured_book", str(secured)],
            lambda: seed(secured / BOOK_BUILD, base / "reference" / "build") or start,
            isolated_build / "secured.log",
            "secured_run",
            made=secured,
        ),
        "course": Background(
            [sys.executable, "-m", "pipelab", "course", "--quick", "--no-site"],
            lambda: course_env(start),
            isolated_build / "course.log",
            "course_run",
        ),
        "unsolved": Background(
            [sys.executable, "-m", "tests.background", "unsolved", str(isolated_build / "unsolved.json")],
            lambda: start,
            isolated_build / "unsolved.log",
            "unsolved_java_runs",
            made=isolated_build / "unsolved.json",
        ),
    }
    contradict(base / "contradicted" / "build" / "results")
    for name, reference in (
        ("reference", paths.reference_dir()),
        ("nothing", base / "no-reference"),
        ("contradicted", paths.reference_dir()),
    ):
        env = dict(start, PIPELAB_BUILD=str(base / name / "build"), PIPELAB_REFERENCE=str(reference))
        site = base / name / "site"
        jobs[name] = Background(
            book.site_argv(site),
            lambda env=env: seeded(env, base / "reference" / "build"),
            base / f"{name}.log",
            "unmeasured_sites",
            made=site,
        )
    yield jobs
    for job in jobs.values():
        job.stop()


@pytest.fixture(scope="session")
def executed_notebooks(request, session, jdk, isolated_build, before_the_notebooks):
    """Every chapter notebook, executed once in quick mode against the session's Redis: {"01": nb, ...}."""
    import nbformat

    from pipelab.book import build as book

    wanted = notebooks_run()
    if before_the_notebooks is not None:
        before_the_notebooks.done()
    beside = [chapter for chapter in BESIDE if chapter in wanted]
    for chapter in beside:  # run before the notebooks, on a lab of its own (tests/background.py)
        adopt(chapter, request.getfixturevalue("background")[f"ch{chapter}"].succeeded(), isolated_build)
    rest = [chapter for chapter in wanted if chapter not in beside]
    if rest:  # (only=[] would mean every chapter)
        with kernels_attached(session, **traced_kernels(isolated_build)):
            book.run_notebooks(session.env(), quick=True, only=rest).raise_failures()
    if any(needed_in_session(request, fixture) for fixture in READ_THE_SITE):
        request.getfixturevalue("readers_site").start()  # beside the tests that measure, which go first
    executed = {source.name[:2]: book.notebooks_out_dir() / source.name for source in book.notebooks(wanted)}
    return {chapter: nbformat.read(path, as_version=4) for chapter, path in executed.items()}


@pytest.fixture(scope="session")
def readers_site(isolated_build) -> Background:
    """The site built (mkdocs --strict) from the executed notebooks' results, then every page opened in the
    browser (tests/site_visit.py), at the lowest priority: started once the notebooks are done, beside the
    tests that measure after them; the tests that read it go last."""
    from tests.site_visit import VISITED

    site = isolated_build / "site"
    job = Background(
        [sys.executable, "-m", "tests.site_visit", str(site), str(isolated_build / VISITED)],
        lambda: dict(os.environ),
        isolated_build / "site.log",
        "built_site",
        made=site,
    )
    job.lower()
    yield job
    job.stop()


def notebooks_run() -> list[str]:
    """The chapters this session executes: all, or those PIPELAB_TEST_NOTEBOOKS names ("02,08" while editing)."""
    from pipelab.book import build as book

    only = [n for n in os.environ.get("PIPELAB_TEST_NOTEBOOKS", "").split(",") if n]
    return [source.name[:2] for source in book.notebooks(only or None)]


def traced_kernels(build) -> dict:
    """What the session's notebook kernels get, in the session or beside it: section tracing, the Java runs log."""
    from pipelab import jbang

    return section_tracing(build) | {jbang.RUNS_LOG_VAR: str(java_runs_log(build))}


def section_tracing(build) -> dict:
    """Kernels that record which of the functions the site shows they call (tests/section_trace.py)."""
    from tests.section_trace import LOG_VAR, TARGETS_VAR
    from tests.test_sections import section_targets

    startup = build / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(__file__).parent / "section_trace.py", startup / "00-section-trace.py")
    return {
        "IPYTHONDIR": str(build / "ipython"),
        TARGETS_VAR: json.dumps(section_targets()),
        LOG_VAR: str(build / "sections-run.txt"),
    }


@pytest.fixture(scope="session")
def course_run(jdk, background):
    """Every solution of the course, Python notebook and Java, run and timed once in quick mode by
    `pipelab course`: the timings results file (the executed notebooks are in notebooks/solutions)."""
    from pipelab import results
    from pipelab.course import timings as course

    background["course"].succeeded()
    return results.load(course.TIMINGS)


@pytest.fixture(scope="session")
def secured_run(jdk, background) -> tuple[dict, Path]:
    """A quick chapter run by `pipelab book` against an ACL user over TLS (tests/secured_book.py), before
    the notebooks: what it wrote in secured.json, and its directory (the build is under build/)."""
    from tests import secured_book

    try:
        secured_book.tls.tls_server_binary()
    except LabError as err:
        unavailable(str(err))
    made = background["secured"].succeeded()
    return json.loads((made / "secured.json").read_text()), made


@pytest.fixture(scope="session")
def portable_book(jdk, background) -> tuple[int, str, Path]:
    """`pipelab book --chapters 1 --quick --no-site` with PIPELAB_HOST=portable (portable_env), before the
    notebooks: its exit code, everything it printed, and its build directory."""
    code, _ = background["portable"].wait()
    return code, background["portable"].log.read_text(), background["portable"].made


@pytest.fixture(scope="session")
def unsolved_java_runs(jdk, background) -> dict:
    """Each Java exercise run unsolved: {alias: (the run, keys left in Redis after it)} (unsolved_java)."""
    return unsolved_runs(background["unsolved"].succeeded())


def needed_in_session(request, fixture: str) -> bool:
    """Whether a test of this session uses `fixture` (so it runs anyway)."""
    return any(fixture in item.fixturenames for item in request.session.items)


@pytest.fixture(scope="session")
def built_site(executed_notebooks, readers_site):
    """The site built from the executed notebooks' results (readers_site), in the isolated build dir."""
    return readers_site.succeeded()


@pytest.fixture(scope="session")
def unmeasured_sites(background) -> dict:
    """The two sites built before the reader measured anything: {name: (exit code, output, site dir)}."""
    return {name: (*background[name].wait(), background[name].made) for name in ("reference", "nothing")}


@pytest.fixture(scope="session")
def contradicted_site(background) -> tuple[int, str, Path]:
    """The site built with a reader's results file that contradicts chapter 1 (contradict): (exit code, output, site dir)."""
    return (*background["contradicted"].wait(), background["contradicted"].made)


@contextmanager
def kernels_attached(session, **env):
    """Notebooks executed meanwhile attach to the session's Redis, as in `make book` (with `env` on
    top); os.environ is put back after."""
    from pipelab.book import build as book

    saved = dict(os.environ)
    try:
        os.environ.update(env)
        book.attach_kernels(session.env())
        yield
    finally:
        for added in set(os.environ) - set(saved):  # never clear(): another thread may read it meanwhile
            del os.environ[added]
        os.environ.update(saved)


def cell_errors(nb) -> list:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]


def run_cli(*args: str, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    """The `pipelab` command as a reader runs it, in a child process."""
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "pipelab", *args], env=full_env, capture_output=True, text=True, timeout=timeout
    )


def saved(name: str) -> dict:
    """A results file the executed notebooks wrote (e.g. "ch04/lrem"); failing if they did not."""
    from pipelab import results

    loaded = results.load(name)
    assert loaded is not None, f"the notebook saved no {name}"
    return loaded


def java_runs_log(build: Path) -> Path:
    """Where the notebooks' kernels note each JBang example they run (jbang.RUNS_LOG_VAR)."""
    return build / "java-runs.txt"


def java_examples_run(build: Path) -> set[str]:
    """The JBang aliases this session's notebooks ran (none before they ran)."""
    log = java_runs_log(build)
    return set(log.read_text().split()) if log.exists() else set()


def beyond(figure: dict, bound: float) -> bool:
    """Whether a measured figure is above `bound` beyond its own noise: the low end of its 95%
    interval is (the figure itself, where it has none)."""
    return (figure.get("interval") or [figure["value"]])[0] > bound


def document(base: Path, name: str, measurements=(), **fields) -> dict:
    """A results document as the site and the plots get it: written under `base` and read back
    (Measurements rebuilt, dict keys turned to text by JSON)."""
    from pipelab import results

    results.save(name, environment=fields.pop("environment", {}), measurements=list(measurements), base=base, **fields)
    return results.load(name, base)


@pytest.fixture
def foreign_key(lab):
    """A key the lab did not write, in the lab's Redis; it must survive whatever the test runs."""
    with lab.client() as client:
        client.set("not-ours", "1")
        try:
            yield client
            assert client.get("not-ours") == b"1", "the lab touched a key that is not its own"
        finally:
            client.delete("not-ours")  # the fixture's own key, made above


# How long a whole `make test` took, for the README (pipelab reference reads it): only a green run
# of every test counts, not a subset chosen with -k, -m, paths or PIPELAB_TEST_NOTEBOOKS.
def pytest_sessionstart(session):
    session.started_at = time.monotonic()


def pytest_sessionfinish(session, exitstatus):
    from pipelab.book import reference
    from pipelab.paths import REPO

    option = session.config.option
    whole = (
        not option.collectonly
        and not option.keyword
        and not option.markexpr
        and not os.environ.get("PIPELAB_TEST_NOTEBOOKS")
        and session.config.args in ([], ["tests"], [str(REPO / "tests")])
    )
    if whole and exitstatus == 0 and session.testscollected:
        seconds = time.monotonic() - session.started_at
        reference.record_time(reference.TEST_TIME, seconds, REPO / "build", tests=session.testscollected)


# Every test gets one of three markers from the fixtures it uses, so `make check` can run the fast set:
# notebook (reads the executed notebooks, or work started beside them), redis (a real server or a
# JDK, no notebook), unit (neither). A test that starts a server without a fixture says so itself.
NOTEBOOK_FIXTURES = {
    "executed_notebooks",
    "built_site",
    "course_run",
    "unmeasured_sites",
    "unsolved_java_runs",
    "tab",
    "contradicted_site",
    "secured_run",
    "portable_book",
}
REDIS_FIXTURES = {"session", "lab", "rtt_lab", "other_redis", "jdk", "background"}


# Tests that measure on the session's lab, or whose outcome depends on the CPU they get.
MEASURING_FIXTURES = {"session", "lab", "rtt_lab", "jdk"}


def pytest_collection_modifyitems(items):
    for item in items:
        used = set(item.fixturenames)
        if used & NOTEBOOK_FIXTURES:
            item.add_marker(pytest.mark.notebook)
        elif used & REDIS_FIXTURES or item.get_closest_marker("redis"):
            item.add_marker(pytest.mark.redis)
        else:
            item.add_marker(pytest.mark.unit)
        if used & NOTEBOOK_FIXTURES or (used & MEASURING_FIXTURES and not item.get_closest_marker("times_nothing")):
            item.add_marker(pytest.mark.measures)
    # The session's order (see BeforeTheNotebooks): stable, so files keep their order within each part;
    # last, the tests of the site built beside the ones that measure (readers_site).
    items.sort(
        key=lambda item: (item.get_closest_marker("measures") is not None, bool(READ_THE_SITE & {*item.fixturenames}))
    )


READ_THE_SITE = {"readers_site", "tab"}  # test_site.py's browser tab asks for built_site itself
