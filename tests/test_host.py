"""What the harness asks of the operating system (pipelab.host): on Linux the answers it always read,
and with PIPELAB_HOST=portable, as on a Mac, one sentence per missing facility from each caller and
no traceback, up to a quick chapter 1 run green in that mode."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from pipelab import cluster, envinfo, host, observe, placement, server
from pipelab.book import inputs
from pipelab.chapters import ch02, ch06

PORTABLE = "(PIPELAB_HOST=portable)"
ON_LINUX = sys.platform.startswith("linux") and os.path.isdir("/proc/self")
ALL_FACILITIES = (host.PINNING, host.PROC, host.DIE_WITH_PARENT, host.PM_QOS, host.PRELOAD, host.STRACE)


@pytest.fixture
def portable(monkeypatch):
    monkeypatch.setenv(host.MODE_VAR, "portable")


def one_sentence(text: str) -> bool:
    return "\n" not in text.strip() and "Traceback" not in text and text.count(". ") == 0


def child_cpus(cpus: set[int]) -> list[int]:
    """The CPUs a child started by server.start_process with `cpus` may use, as it reports them itself."""
    script = "import os; print(sorted(os.sched_getaffinity(0)))"
    log = Path(os.environ["PIPELAB_BUILD"]) / "child-cpus.log"
    proc = server.start_process([sys.executable, "-c", script], log, cpus=cpus)
    assert proc.wait(timeout=30) == 0, log.read_text()
    return json.loads(log.read_text())


@pytest.mark.skipif(not ON_LINUX, reason="the Linux answers")
def test_on_linux_each_answer_is_what_the_harness_read_before():
    assert host.note() is None
    assert ch02.pid_text(1234) == "1234" and ch02.pid_text(None) == "not visible (remote or container)"
    assert host.allowed_cpus() == os.sched_getaffinity(0)
    assert set(host.context_switches()) == {"voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"}
    assert host.context_switches()["voluntary_ctxt_switches"] > 0
    assert host.process_name(os.getpid()) == Path(f"/proc/{os.getpid()}/comm").read_text()
    assert "libc" in host.mappings(os.getpid())
    assert host.threads_cpu_s(os.getpid(), "") > 0, "this process's threads have used some CPU"
    assert host.threads_cpu_s(os.getpid(), "no-such-thread") == 0
    assert not host.traced(os.getpid()) and not host.traced(os.getpid(), all_threads=False), "nothing traces pytest"
    range_file = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
    assert host.ephemeral_low() == cluster.ephemeral_low() == int(range_file.split()[0])
    models = [line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")]
    assert envinfo.cpu_model() == (models[0] if models else platform.processor() or "unknown")
    assert inputs.machine()["cpu"] == (models[0] if models else platform.processor())
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) >= 2:
        assert child_cpus({allowed[-1]}) == [allowed[-1]], "a server started on a CPU runs there"


def test_portable_mode_makes_every_facility_unavailable_in_one_sentence(portable):
    calls = {
        host.PINNING: [lambda: host.allowed_cpus(), lambda: host.pin(os.getpid(), {0})],
        host.PROC: [
            lambda: host.process_name(os.getpid()),
            lambda: host.context_switches(),
            lambda: host.mappings(os.getpid()),
            lambda: host.threads_cpu_s(os.getpid(), ""),
            lambda: host.traced(os.getpid()),
            lambda: host.cpu_model(),
            lambda: host.ephemeral_low(),
        ],
        host.PM_QOS: [lambda: host.cpu_latency_request(0)],
        host.PRELOAD: [lambda: host.jemalloc()],
        host.STRACE: [lambda: host.strace()],
    }
    for facility, tries in calls.items():
        for attempt in tries:
            with pytest.raises(host.Unavailable) as refused:
                attempt()
            assert str(refused.value) == f"{facility} is not available here {PORTABLE}"
            assert one_sentence(str(refused.value))
    assert host.before_exec({0}, die_with_parent=True) is None, "no prctl, no pinning between fork and exec"
    assert all(host.lacks(f) for f in ALL_FACILITIES)
    assert one_sentence(host.note()) and all(f in host.note() for f in ALL_FACILITIES)


def test_in_portable_mode_each_caller_skips_with_its_sentence(portable, capsys):
    class Info:  # a client whose server says it is this very process
        def info(self, section):
            return {"process_id": os.getpid()}

    assert observe.local_server_pid(Info()) is None, "no /proc to tell a local server by"
    assert observe.context_switches is host.context_switches
    with pytest.raises(observe.StraceUnavailable, match=r"^strace is not available here \(PIPELAB_HOST=portable\)$"):
        with observe.strace_count(os.getpid()):
            pass
    strace_skip = f"strace skipped: strace is not available here {PORTABLE}"
    assert ch02.measure_strace(None, None, 10, None) == ({}, strace_skip), "not 'the server is not a process here'"
    assert ch02.measure_strace(None, os.getpid(), 10, None) == ({}, strace_skip)
    assert ch02.switches_missing() == f"Context switches not counted: /proc is not available here {PORTABLE}."
    assert ch02.switches_text({"client": None, "server": None}) == "not counted"
    assert ch02.pid_text(None) == f"/proc is not available here {PORTABLE}", "not 'remote or container'"
    assert ch06.io_thread_cpu_s(os.getpid()) is None
    assert ch06.io_cpu_missing() == f"The I/O threads' CPU is not counted: /proc is not available here {PORTABLE}."
    assert cluster.ephemeral_low() == 32_768, "Linux's default: below any system's ephemeral range"
    assert envinfo.cpu_model() == (platform.processor() or "unknown")
    assert inputs.machine()["cpu"] == platform.processor()

    assert not placement.enabled() and placement.server_cpus() is None and placement.client_cpus() is None
    described = placement.describe(os.getpid())
    assert (
        described["policy"]
        == f"unpinned: pinning a process to CPUs (sched_setaffinity) is not available here {PORTABLE}"
    )
    assert described["client_cpus"] is None and described["server_cpus"] is None
    capsys.readouterr()
    placement.pin_clients()
    said = capsys.readouterr().err
    assert said.startswith("pipelab: CPU placement skipped: pinning a process to CPUs") and one_sentence(said)
    for text in (ch02.switches_missing(), ch06.io_cpu_missing(), strace_skip, described["policy"]):
        assert one_sentence(text), text


@pytest.mark.skipif(not ON_LINUX, reason="pinning, to show it is dropped")
def test_in_portable_mode_a_server_asked_onto_one_cpu_runs_unpinned(monkeypatch):
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("this process may use one CPU only: nothing to drop")
    monkeypatch.setenv(host.MODE_VAR, "portable")
    assert child_cpus({allowed[-1]}) == allowed, "no pinning, and no preexec_fn error either"


def test_a_process_started_in_portable_mode_places_nothing_and_says_why():
    """Placement and chapter 6 read the system at import, so a fresh interpreter shows what a Mac gets."""
    script = """
import json
from pipelab import placement
from pipelab.chapters import ch06
placement.pin_clients()
print(json.dumps({
    "enabled": placement.enabled(),
    "usable": placement.usable_cpus(),
    "awake": placement.keep_cpus_awake(),
    "cpu_idle": placement.cpu_idle(),
    "jemalloc": ch06.JEMALLOC,
    "missing": ch06.missing_servers(),
    "ceiling_cpus": [ch06.SERVER_CPUS, ch06.BENCH_CPUS],
    "io_modes": {mode: [None if c is None else sorted(c) for c in cpus] for mode, (_, *cpus) in ch06.IO_MODES.items()},
}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=dict(os.environ, PIPELAB_HOST="portable"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    got = json.loads(done.stdout)
    assert not got["enabled"] and got["usable"] == list(range(os.cpu_count()))
    assert got["awake"] is False
    assert (
        got["cpu_idle"]
        == f"the system's default: the PM QoS device /dev/cpu_dma_latency is not available here {PORTABLE}"
    )
    assert got["jemalloc"] is None
    assert (
        f"Valkey 9.1, jemalloc preloaded (preloading a library into a server (LD_PRELOAD) is not available here {PORTABLE})"
        in got["missing"]
    )
    assert got["ceiling_cpus"] == [None, None]
    assert got["io_modes"] == {"io-threads 1": [None, None], "io-threads 2": [[], None]}, "recorded as unpinned"
    said = [line for line in done.stderr.splitlines() if "CPU placement skipped" in line]
    assert len(said) == 1 and one_sentence(said[0]), done.stderr


# --- with a server --------------------------------------------------------------------------


@pytest.mark.redis
def test_in_portable_mode_the_busy_loop_keeps_its_latencies_and_skips_its_switches(lab, portable, capsys):
    with lab.client() as r:
        latencies, switches = ch02.measure_busy_loop(r, lab.server_pid, 200)
    assert all(len(values) >= 2 for values in latencies.values())
    assert switches == {mode: {"client": None, "server": None} for mode in latencies}
    assert capsys.readouterr().out.strip() == ch02.switches_missing()
    summary = ch02.busy_loop_summary(latencies, switches)
    assert summary["ctx_client_one_by_one"]["text"] == "not measured" and summary["p50_one_by_one_us"]["value"] > 0


@pytest.mark.redis
def test_in_portable_mode_placement_is_not_compared_and_says_why(lab, portable):
    said = ch02.measure_placement(lab, 100, 1)
    assert said == f"pinning a process to CPUs (sched_setaffinity) is not available here {PORTABLE}: nothing was moved"


@pytest.mark.redis
def test_in_portable_mode_a_servers_allocator_is_what_it_reports(other_redis, portable):
    facts = ch06.server_facts(other_redis)
    with other_redis.endpoint.client() as r:
        assert facts["allocator"] == r.info("memory")["mem_allocator"], "no memory map read, nothing preloaded"


# --- chapter 1's quick book, as on a Mac ----------------------------------------------------


def test_chapter_1s_quick_book_runs_green_without_the_linux_facilities(portable_book):
    code, printed, build = portable_book
    assert code == 0, printed
    assert "Traceback" not in printed
    said = next(line for line in printed.splitlines() if line.startswith("pipelab: not available here"))
    assert one_sentence(said) and all(f in said for f in ALL_FACILITIES) and PORTABLE in said

    nb = nbformat.read(build / "notebooks" / "01-round-trip-time.ipynb", as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "Traceback" not in text
    skips = [line for line in text.splitlines() if "CPU placement skipped" in line]
    assert skips and all(one_sentence(s) for s in skips), text[:2000]

    env = json.loads((build / "results" / "ch01" / "ping-10k.json").read_text())["environment"]
    assert env["placement"]["policy"].startswith("unpinned: pinning a process to CPUs")
    assert env["placement"]["client_cpus"] is None and env["placement"]["server_cpus"] is None
    assert env["cpu_model"] == (platform.processor() or "unknown"), "no CPU model guessed from elsewhere"
