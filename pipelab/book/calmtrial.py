"""`pipelab calm-trial`: would waiting for a calm machine before each sample make figures hold still?

The weather's loop, kept only where it followed a fast loop, agreed with itself far more often than
taken as it came (`pipelab agreement`). This trial puts the same idea to real measurements: before a
timed sample, a short fixed loop runs on the clients' CPU and on the server's, each in a small helper
pinned there, and while either runs over weather.SLOW its fastest, the sample waits (at most
WAIT_CAP_S; after a wait runs out, samples go ahead unasked for HOLD_S, so a long spell is sampled,
not waited out). Measurements taken that way and taken plainly alternate, so both meet the same
weather, and the trial counts how often two measurements of a kind agree as `pipelab agreement`
asks two runs' figures to.
"""

from __future__ import annotations

import itertools
import os
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import host, placement, results
from ..errors import LabError
from ..lab import Lab, Session
from ..measure import settled_heap, timed
from ..weather import SLOW, WINDOW, loop_ms, slow, spread
from .agreement import WITHIN, apart, percent, share

NAME = "book/calm-trial"
PROBE = 20_000  # additions: about 0.8 ms at the fast speed here, short beside a spell (0.1 s and more)
CALIBRATE = 30  # probes a helper runs at start for its fast time, which later faster probes lower
RECHECK_S = 0.02  # a sample this soon after a calm probe goes ahead: short samples would pay a probe each
PAUSE_S = 0.01  # between probes while waiting
WAIT_CAP_S = 1.0  # the longest a sample waits
HOLD_S = 5.0  # after a wait ran out, samples go ahead unasked this long
SECONDS = 360.0
PINGS_ONE = 2_000  # one by one: about 0.15 s a sample here, a chapter's typical sample
PINGS_PIPE = 10_000  # in one pipeline


class Gate:
    """One helper per CPU the lab uses, asked before each timed sample."""

    def __init__(self, cpus: list[int]):
        self.dir = tempfile.mkdtemp(prefix="pipelab-calm-")
        paths = [os.path.join(self.dir, f"cpu{cpu}") for cpu in cpus]
        self.helpers = [
            subprocess.Popen(
                [sys.executable, "-m", "pipelab.book.calmtrial", path],
                stdout=subprocess.PIPE,
                text=True,
                preexec_fn=host.before_exec({cpu}, die_with_parent=True),
            )
            for cpu, path in zip(cpus, paths)
        ]
        self.links = []
        for helper, path in zip(self.helpers, paths):
            if helper.stdout.readline().strip() != "ready":  # it calibrates first
                self.close()
                raise LabError(f"The calm trial's probe helper for {path} did not start.")
            link = socket.socket(socket.AF_UNIX)
            link.connect(path)
            self.links.append(link.makefile("rwb", buffering=0))
        self.last_calm = -RECHECK_S
        self.gave_up = -HOLD_S
        self.probes = self.calm_probes = self.samples = self.unasked = 0
        self.waited_s = 0.0

    def calm(self) -> bool:
        """One probe on every CPU: whether all ran at their fast speed."""
        answers = []
        for link in self.links:
            link.write(b"?")
            answers.append(link.readline().strip() == b"1")
        self.probes += 1
        self.calm_probes += all(answers)
        return all(answers)

    def wait(self) -> None:
        self.samples += 1
        start = time.perf_counter()
        if start - self.last_calm < RECHECK_S:
            return
        if start - self.gave_up < HOLD_S:
            self.unasked += 1
            return
        while not self.calm():
            if time.perf_counter() - start >= WAIT_CAP_S:
                self.gave_up = time.perf_counter()
                self.unasked += 1
                break
            time.sleep(PAUSE_S)
        else:
            self.last_calm = time.perf_counter()
        self.waited_s += time.perf_counter() - start

    def close(self) -> None:
        for link in self.links:
            link.close()
        for helper in self.helpers:
            helper.terminate()
            helper.wait()
            helper.stdout.close()
        shutil.rmtree(self.dir)


def serve(path: str) -> None:
    """A helper: answers each byte with 1 (its probe ran at its fast speed) or 0, until its parent goes."""
    parent = os.getppid()
    fast = min(loop_ms(PROBE) for _ in range(CALIBRATE))
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)
    chosen = selectors.DefaultSelector()
    chosen.register(listener, selectors.EVENT_READ)
    print("ready", flush=True)
    while os.getppid() == parent:
        for key, _ in chosen.select(timeout=1.0):
            if key.fileobj is listener:
                chosen.register(listener.accept()[0], selectors.EVENT_READ)
            elif not key.fileobj.recv(1):
                chosen.unregister(key.fileobj)
                key.fileobj.close()
            else:
                took = loop_ms(PROBE)
                fast = min(fast, took)
                key.fileobj.sendall(b"0\n" if slow(took, fast) else b"1\n")


def agree(values: list[float]) -> tuple[int, int]:
    """Pairs of measurements within WITHIN of each other (the agreement's test), of all pairs."""
    return share(list(itertools.combinations(values, 2)), lambda pair: apart(*pair) <= WITHIN)


def one_measurement(client, gate: Gate | None) -> dict:
    """WINDOW rounds of one-by-one and pipelined PINGs in turns, after one untimed round."""

    def one() -> None:
        for _ in range(PINGS_ONE):
            client.ping()

    def pipe() -> None:
        batch = client.pipeline(transaction=False)
        for _ in range(PINGS_PIPE):
            batch.ping()
        batch.execute()

    start = time.perf_counter()
    one(), pipe()
    samples = {"one": [], "pipe": []}
    with settled_heap():
        for _ in range(WINDOW):
            for kind, run in (("one", one), ("pipe", pipe)):
                if gate is not None:
                    gate.wait()
                samples[kind].append(timed(run))
    out = {kind: statistics.median(s) for kind, s in samples.items()}
    return {
        **out,
        "ratio": out["one"] / out["pipe"],
        "spreads": [spread(s) for s in samples.values()],
        "wall_s": time.perf_counter() - start,
    }


def run(seconds: float = SECONDS, base: Path | None = None) -> tuple[Path, dict]:
    """Alternate gated and plain measurements for `seconds` on the embedded server; keep book/calm-trial
    (in `base`, or the results)."""
    if not placement.enabled():
        raise LabError("The calm trial needs two CPUs it may pin to (PIPELAB_PLACEMENT on, Linux).")
    # This thread only, where a notebook's kernel runs; put back after, so the caller is left as it was.
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, placement.client_cpus())
    session = gate = None
    try:
        session = Session(with_proxy=False).start()
        lab = Lab(session.describe(), False, session)
        gate = Gate(placement.usable_cpus())
        runs = {"gated": [], "plain": []}
        end = time.perf_counter() + seconds
        with lab.client() as client:
            order = ["gated", "plain"]
            while time.perf_counter() < end:
                for kind in order:
                    runs[kind].append(one_measurement(client, gate if kind == "gated" else None))
                order.reverse()  # neither kind always goes first
        summary = figures(runs, gate)
        path = results.save(
            NAME,
            environment=lab.environment(),
            params={
                "seconds": seconds,
                "pings_one": PINGS_ONE,
                "pings_pipe": PINGS_PIPE,
                "rounds": WINDOW,
                "probe_additions": PROBE,
                "slow_over": SLOW,
                "recheck_s": RECHECK_S,
                "pause_s": PAUSE_S,
                "wait_cap_s": WAIT_CAP_S,
                "hold_s": HOLD_S,
                "within": WITHIN,
                "runs": runs,
            },
            summary=summary,
            base=base,
        )
        return path, summary
    finally:
        if gate is not None:
            gate.close()
        if session is not None:
            session.stop()
        os.sched_setaffinity(0, own)


def figures(runs: dict[str, list[dict]], gate: Gate) -> dict:
    summary = {}
    for kind, rows in runs.items():
        for name in ("one", "pipe", "ratio"):
            summary[f"{kind}_{name}_within_pct"] = results.quantity(percent(agree([row[name] for row in rows])), "%")
        spreads = sorted(s for row in rows for s in row["spreads"])  # the upper median, as weather.describe's
        summary[f"{kind}_spread_median_pct"] = results.quantity(100 * spreads[len(spreads) // 2], "%")
        wall = statistics.median(row["wall_s"] for row in rows)
        summary[f"{kind}_wall_s"] = results.quantity(wall, "s", f"{wall:.1f} s")
        summary[f"{kind}_measurements"] = results.quantity(len(rows), "count")
    summary["calm_probe_pct"] = results.quantity(percent((gate.calm_probes, gate.probes)), "%")
    summary["unasked_pct"] = results.quantity(percent((gate.unasked, gate.samples)), "%")
    return summary


def report(summary: dict) -> str:
    """What the trial found, in three lines."""

    def text(key: str) -> str:
        return summary[key]["text"]

    lines = [
        f"pipelab: probes found both CPUs calm {text('calm_probe_pct')} of the time; "
        f"{text('unasked_pct')} of the gated samples went ahead without a calm probe (a wait ran out)"
    ]
    for kind in ("gated", "plain"):
        lines.append(
            f"pipelab: {kind}, {text(f'{kind}_measurements')} measurements: pairs within ±{WITHIN - 1:.0%} of each other: "
            f"one by one {text(f'{kind}_one_within_pct')}, pipelined {text(f'{kind}_pipe_within_pct')}, "
            f"their ratio {text(f'{kind}_ratio_within_pct')}; spread median {text(f'{kind}_spread_median_pct')}; "
            f"{text(f'{kind}_wall_s')} a measurement"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    serve(sys.argv[1])
