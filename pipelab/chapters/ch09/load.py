"""Section 1: loading N keys by each means a reader has, and what each reports about bad commands.

The harness only: the loads (the RESP file, redis-cli --pipe, the pipelines, MSET) and the pipeline with
bad commands are the notebook's cells tagged code:load and code:bad (taught.py), passed in by the notebook."""

from __future__ import annotations

import re
import shutil
import statistics
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path

import redis

from ... import paths, stats
from ...errors import LabError
from ...measure import Measurement, settled_heap, stop_reason, timed
from ...resp import encode
from ...results import md_table, median_figure, quantity, rate_figure, ratio_figure
from ...server import Endpoint, delete_lab_keys
from .common import PREFIX
from .instruments import Watch

LOAD = PREFIX + "load:"
ONE_PIPELINE = "one pipeline"
CLI = "redis-cli --pipe"
NO_CLI = "redis-cli is not installed (Debian: apt-get install redis-tools), so the chapter loads without it"
WATCHED = ("peak_qbuf_bytes", "peak_omem_bytes", "peak_tot_mem_bytes", "rss_growth_bytes", "probe_p99_ms")


def load_key(i: int) -> str:
    return f"{LOAD}{i}"


def value(size: int) -> bytes:
    return b"v" * size


def count_keys(r: redis.Redis, pattern: str) -> int:
    return sum(1 for _ in r.scan_iter(match=pattern, count=1000))


def cli_available() -> bool:
    return shutil.which("redis-cli") is not None


@dataclass
class LoadRun:
    n: int
    value_bytes: int
    measurements: dict[str, Measurement] = field(default_factory=dict)
    client_peak: dict[str, int] = field(default_factory=dict)  # bytes Python allocated at the peak (tracemalloc)
    errors: dict = field(default_factory=dict)  # what each means reported about the bad commands
    notes: list[str] = field(default_factory=list)


def _file(resp_file, n: int, value_bytes: int, name: str, bad: dict | None = None) -> Path:
    base = paths.build_dir() / "ch09"
    base.mkdir(parents=True, exist_ok=True)
    return resp_file(base / name, n, value_bytes, bad)


def load_means(
    endpoint: Endpoint, r: redis.Redis, n: int, value_bytes: int, batches, resp_file, load_cli, load_pipeline, load_mset
) -> dict:
    """{label: the job}: each loads the same n keys, by the notebook's functions."""
    means = {}
    if cli_available():
        path = _file(resp_file, n, value_bytes, "load.resp")

        def cli():
            done = load_cli(endpoint, path)
            if done.returncode != 0:
                raise LabError(f"redis-cli --pipe failed: {(done.stderr or done.stdout).strip()[-200:]}")

        means[CLI] = cli
    for b in batches:
        means[f"pipeline, {b // 1000}k per batch"] = lambda b=b: load_pipeline(r, n, value_bytes, b)
    means[f"MSET, {batches[0] // 1000}k keys each"] = lambda: load_mset(r, n, value_bytes, batches[0])
    means[ONE_PIPELINE] = lambda: load_pipeline(r, n, value_bytes, n)
    return means


def measure_load(
    endpoint: Endpoint, n: int, value_bytes: int, batches, repeat: int, resp_file, load_cli, load_pipeline, load_mset
) -> LoadRun:
    """Every means in turn, round after round (A B C A B C): the keys are deleted before each job
    (untimed); each timed job runs inside a Watch. The untimed first round measures what each
    Python means allocates at its peak (tracemalloc slows it, so never in a timed round). The means
    are the notebook's: `resp_file(path, n, value_bytes, bad)` and `load_cli(endpoint, path)` for
    redis-cli --pipe, `load_pipeline(r, n, value_bytes, batch)` and `load_mset(r, n, value_bytes, batch)`."""
    run = LoadRun(n, value_bytes)
    if not cli_available():
        run.notes.append(NO_CLI)
    with endpoint.client() as r:
        means = load_means(endpoint, r, n, value_bytes, batches, resp_file, load_cli, load_pipeline, load_mset)
        group = " / ".join(means)
        run.measurements = {label: Measurement(f"load {n:,} keys: {label}", n, paired_with=group) for label in means}
        with settled_heap():
            for round_no in range(1 + repeat):
                for label, job in means.items():
                    delete_lab_keys(r, LOAD + "*")
                    m = run.measurements[label]
                    if round_no == 0:
                        traced = label != CLI
                        if traced:
                            tracemalloc.start()
                        m.warmup.append(timed(job))
                        if traced:
                            run.client_peak[label] = tracemalloc.get_traced_memory()[1]
                            tracemalloc.stop()
                        continue
                    with Watch(endpoint) as watch:
                        m.samples.append(timed(job))
                    for key in WATCHED:
                        m.params.setdefault(key, []).append(watch.result[key])
                    stored = count_keys(r, LOAD + "*")
                    if stored != n:
                        raise LabError(f"{label} stored {stored:,} keys of {n:,}")
        delete_lab_keys(r, LOAD + "*")
    for label, m in run.measurements.items():
        m.stopped = stop_reason(m.samples, "asked")
        m.params.update(means=label, n=n, value_bytes=value_bytes, client_peak_bytes=run.client_peak.get(label))
    return run


# --- bad commands ---------------------------------------------------------------------------

_SUMMARY = re.compile(r"errors: (\d+), replies: (\d+)")


def parse_cli_summary(stdout: str) -> tuple[int, int] | None:
    """(errors, replies) from redis-cli --pipe's last line, or None without one."""
    found = _SUMMARY.findall(stdout)
    return (int(found[-1][0]), int(found[-1][1])) if found else None


def bad_commands(count: int, n: int) -> dict[int, list]:
    """`count` commands the server refuses, spread over the load: {key index: argv}. INCR of a key the
    load has set to text, LPUSH onto one (WRONGTYPE), and a command that does not exist."""
    kinds = [
        lambda i: ["INCR", load_key(i)],
        lambda i: ["LPUSH", load_key(i), "x"],
        lambda i: ["NOSUCHCOMMAND", load_key(i)],
    ]
    step = max(n // (count + 1), 2)
    return {step * (k + 1): kinds[k % len(kinds)](step * (k + 1) - 1) for k in range(count)}


def measure_bad_commands(
    endpoint: Endpoint, n: int, value_bytes: int, count: int, resp_file, load_cli, load_with_errors_py
) -> dict:
    """Each means loads n keys with `count` bad commands among them; what it reports, and keys stored.
    redis-cli --pipe through the notebook's `resp_file` and `load_cli`, redis-py through its
    `load_with_errors_py(r, n, value_bytes, bad, raise_on_error)`."""
    bad = bad_commands(count, n)
    out = {"n": n, "bad": count, "commands": [" ".join(argv[:1]) for argv in bad.values()]}
    with endpoint.client() as r:
        if cli_available():
            delete_lab_keys(r, LOAD + "*")
            path = _file(resp_file, n, value_bytes, "load-bad.resp", {i: encode(*argv) for i, argv in bad.items()})
            done = load_cli(endpoint, path)
            summary = parse_cli_summary(done.stdout)
            out[CLI] = {
                "exit_code": done.returncode,
                "summary": summary,
                "summary_line": next((s for s in done.stdout.splitlines() if s.startswith("errors:")), ""),
                "error_lines": [s for s in done.stderr.splitlines() if s.strip()],
                "stored": count_keys(r, LOAD + "*"),
            }
        for flag in (True, False):
            delete_lab_keys(r, LOAD + "*")
            reply = load_with_errors_py(r, n, value_bytes, bad, raise_on_error=flag)
            reply["stored"] = count_keys(r, LOAD + "*")
            out[f"redis-py raise_on_error={flag}"] = reply
        delete_lab_keys(r, LOAD + "*")
    return out


# --- a file with LF line ends -----------------------------------------------------------------

LF_COMMANDS = 3  # SETs in the file: a few, far below the 64 KB an unfinished count line may fill


def measure_lf_file(endpoint: Endpoint, resp_file, load_cli, n: int = LF_COMMANDS) -> dict:
    """redis-cli --pipe on the RESP of n SETs with every CRLF turned into LF (a file written with
    print or echo, or passed through dos2unix): what it prints, its exit code and the keys stored."""
    if not cli_available():
        return {}
    path = _file(resp_file, n, 16, "load-lf.resp")
    path.write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))
    with endpoint.client() as r:
        delete_lab_keys(r, LOAD + "*")
        done = load_cli(endpoint, path)
        stored = count_keys(r, LOAD + "*")
        delete_lab_keys(r, LOAD + "*")
    return {
        "commands": n,
        "exit_code": done.returncode,
        "summary": parse_cli_summary(done.stdout),
        "stdout": [s for s in done.stdout.splitlines() if s.strip()],
        "stderr": [s for s in done.stderr.splitlines() if s.strip()],
        "stored": stored,
    }


# --- tables and summary ---------------------------------------------------------------------


def _median(m: Measurement, key: str) -> float:
    return statistics.median(m.params[key])


def load_table(run: LoadRun) -> str:
    rows = []
    for label, m in run.measurements.items():
        peak = run.client_peak.get(label)
        rows.append(
            [
                label,
                f"{m.median:.3f} s",
                f"{m.ops_per_s:,.0f}",
                f"{_median(m, 'peak_qbuf_bytes'):,.0f} B",
                f"{_median(m, 'peak_omem_bytes'):,.0f} B",
                f"{_median(m, 'rss_growth_bytes') / 2**20:.1f} MiB",
                f"{_median(m, 'probe_p99_ms'):.2f} ms",
                "(another process)" if peak is None else f"{peak / 2**20:.1f} MiB",
            ]
        )
    return md_table(
        [
            "Means",
            "Time",
            "keys/s",
            "Peak qbuf",
            "Peak omem",
            "Server RSS growth",
            "Probe PING p99",
            "Client's peak Python memory",
        ],
        rows,
    )


def bad_table(report: dict) -> str:
    rows = []
    if CLI in report:
        cli = report[CLI]
        shown = "; ".join(cli["error_lines"][:3])
        rows.append([CLI, f"`{cli['summary_line']}`, exit code {cli['exit_code']}", shown, f"{cli['stored']:,}"])
    for flag in (True, False):
        py = report[f"redis-py raise_on_error={flag}"]
        said = py["raised"] or f"{py['errors_in_replies']} exceptions in the reply list (first: {py['first']})"
        rows.append(
            [f"redis-py, raise_on_error={flag}", "raises" if py["raised"] else "returns", said, f"{py['stored']:,}"]
        )
    return md_table(["Means", "Reports", "What it shows", f"Keys stored (of {report['n']:,})"], rows)


def _tag(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower().replace("redis-cli --pipe", "cli")).strip("_")


def load_summary(run: LoadRun, bad: dict, lf: dict | None = None) -> dict:
    out = {"n": quantity(run.n, "count"), "value_bytes": quantity(run.value_bytes, "bytes")}
    for label, m in run.measurements.items():
        tag = _tag(label)
        out[f"{tag}_s"] = median_figure(m)
        out[f"{tag}_rate"] = rate_figure(m)
        for key, unit in (("peak_qbuf_bytes", "bytes"), ("peak_omem_bytes", "bytes"), ("rss_growth_bytes", "bytes")):
            out[f"{tag}_{key.removesuffix('_bytes')}"] = quantity(_median(m, key), unit)
        p99 = m.params["probe_p99_ms"]
        out[f"{tag}_probe_p99_ms"] = quantity(statistics.median(p99), "ms", interval=stats.median_interval(p99))
        if label in run.client_peak:
            out[f"{tag}_client_peak"] = quantity(run.client_peak[label], "bytes")
    labels = list(run.measurements)
    one = run.measurements[ONE_PIPELINE]
    batched = [label for label in labels if label.startswith("pipeline,")]
    out["one_vs_batch_time"] = ratio_figure(one, run.measurements[batched[-1]])
    out["one_vs_batch_client_peak"] = quantity(run.client_peak[ONE_PIPELINE] / max(run.client_peak[batched[0]], 1), "x")
    if CLI in run.measurements:
        out["cli_vs_batch_time"] = ratio_figure(run.measurements[batched[-1]], run.measurements[CLI])
    out.update(bad_summary(bad))
    out.update(lf_summary(lf or {}))
    return out


def lf_summary(lf: dict) -> dict:
    """The LF-only file's outcome: its output as text, and whether the summary line came at all."""
    if not lf:
        return {}
    return {
        "lf_commands": quantity(lf["commands"], "count"),
        "lf_exit_code": quantity(lf["exit_code"], "count"),
        "lf_stored": quantity(lf["stored"], "count"),
        "lf_summary_lines": quantity(0 if lf["summary"] is None else 1, "count"),
        "lf_stdout": quantity(0, "count", " / ".join(lf["stdout"]) or "nothing"),
        "lf_stderr": quantity(0, "count", " / ".join(lf["stderr"]) or "nothing"),
    }


def bad_summary(bad: dict) -> dict:
    out = {"bad_injected": quantity(bad["bad"], "count")}
    if CLI in bad:
        cli = bad[CLI]
        errors, replies = cli["summary"] or (None, None)
        out["cli_errors"] = quantity(errors, "count")
        out["cli_replies"] = quantity(replies, "count")
        out["cli_exit_code"] = quantity(cli["exit_code"], "count")
        out["cli_error_lines"] = quantity(len(cli["error_lines"]), "count")
        out["cli_stored"] = quantity(cli["stored"], "count")
    raised, listed = bad["redis-py raise_on_error=True"], bad["redis-py raise_on_error=False"]
    out["py_raised"] = quantity(1 if raised["raised"] else 0, "count")
    out["py_raise_stored"] = quantity(raised["stored"], "count")
    out["py_errors_in_replies"] = quantity(listed["errors_in_replies"], "count")
    out["py_list_stored"] = quantity(listed["stored"], "count")
    return out
