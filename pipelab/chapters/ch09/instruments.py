"""Chapter 9's instrument: what a bulk job costs the server and the other clients while it runs.

`Watch` samples from two processes of its own (spawned once per server and kept, so neither shares
the job's interpreter and its GIL): one reads CLIENT LIST and INFO memory every few milliseconds, the other sends PING after
PING and times each. Both inherit this process's CPU mask (pipelab.placement pins the clients; the
server has its own CPU), so they compete with the job for the client CPUs as any other client would.
"""

from __future__ import annotations

import atexit
import multiprocessing
import statistics
import time

import redis

from ...errors import LabError
from ...server import Endpoint

SAMPLER_NAME = "pipelab-ch09-watch"
PROBE_NAME = "pipelab-ch09-probe"
IDLE_NAME = "pipelab-ch09-idle"  # a client that connects as each watch begins and then sends nothing
_OWN = (SAMPLER_NAME, PROBE_NAME, IDLE_NAME)
_MAX_TIMELINE = 400  # points kept for a plot; the peaks are taken over every sample
_READY_S = 30.0  # a spawned child imports redis-py and connects well within this


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def _thin(points: list, keep: int) -> list:
    """At most `keep` evenly spaced points, the last one always kept."""
    if len(points) <= keep:
        return points
    step = len(points) / keep
    return [points[int(i * step)] for i in range(keep - 1)] + [points[-1]]


def _sample(r: redis.Redis, interval_s: float, ready, stop, endpoint: Endpoint) -> dict:
    """CLIENT LIST and INFO memory until `stop`: the peaks over the other clients, memory over time,
    and the tot-mem of a client at rest: one connected for this watch, as a job's client is, which
    sends nothing more (tot-mem counts the client's structure and reply buffer too, not only what a
    job puts in it)."""
    idle = endpoint.client()
    idle.client_setname(IDLE_NAME)
    peaks = {"qbuf": 0, "omem": 0, "tot_mem": 0, "idle_tot_mem": 0}
    timeline = []  # (monotonic s, used_memory, used_memory_rss, lazyfree_pending_objects, lazyfreed_objects)
    first = {**r.info("memory"), **r.info("stats")}
    ready.set()
    while True:
        for entry in r.client_list():
            if entry.get("name") == IDLE_NAME:
                peaks["idle_tot_mem"] = max(peaks["idle_tot_mem"], int(entry.get("tot-mem", 0)))
            elif entry.get("name") not in _OWN:
                peaks["qbuf"] = max(peaks["qbuf"], int(entry.get("qbuf", 0)))
                peaks["omem"] = max(peaks["omem"], int(entry.get("omem", 0)))
                peaks["tot_mem"] = max(peaks["tot_mem"], int(entry.get("tot-mem", 0)))
        mem = r.info("memory")
        mem.update(r.info("stats"))  # lazyfreed_objects is counted there
        timeline.append(
            (
                time.monotonic(),
                int(mem["used_memory"]),
                int(mem["used_memory_rss"]),
                int(mem.get("lazyfree_pending_objects", 0)),
                int(mem.get("lazyfreed_objects", 0)),
            )
        )
        if stop.wait(interval_s):
            idle.close()
            return {"peaks": peaks, "timeline": timeline, "first": first}


def _probe(r: redis.Redis, interval_s: float, ready, stop) -> dict:
    """PING, one at a time, until `stop`: each round trip's time and when it ended."""
    r.ping()
    ready.set()
    pings = []  # (monotonic s at the reply, seconds)
    while not stop.is_set():
        t0 = time.monotonic()
        r.ping()
        t1 = time.monotonic()
        pings.append((t1, t1 - t0))
    return {"pings": pings}


def _serve(role: str, endpoint: Endpoint, conn, ready, stop) -> None:
    """A watcher process: one watch per request on `conn`, until None; kept between watches, so a
    watch costs no process start (a spawned interpreter imports the lab anew: about a second)."""
    work, name = (_sample, SAMPLER_NAME) if role == "sample" else (_probe, PROBE_NAME)
    try:
        r = endpoint.client()
        r.client_setname(name)
        while (interval_s := conn.recv()) is not None:
            conn.send(work(r, interval_s, ready, stop, *([endpoint] if role == "sample" else [])))
        r.close()
    except (EOFError, KeyboardInterrupt):  # the lab's process ended, or Ctrl-C reached the group
        return
    except (redis.RedisError, OSError) as err:
        ready.set()
        conn.send({"error": f"the watch's {role} process failed: {err}"})


_WATCHERS: dict = {}  # endpoint: its two processes, started on the first watch


def _watchers(endpoint: Endpoint) -> list:
    if endpoint not in _WATCHERS:
        ctx = multiprocessing.get_context("spawn")  # not fork: a fresh interpreter, no copied threads
        pair = []
        for role in ("sample", "probe"):
            ready, stop = ctx.Event(), ctx.Event()
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(role, endpoint, theirs, ready, stop), daemon=True)
            proc.start()
            theirs.close()
            pair.append((proc, mine, ready, stop))
        _WATCHERS[endpoint] = pair
        atexit.register(_close, endpoint)
    return _WATCHERS[endpoint]


def _close(endpoint: Endpoint) -> None:
    for proc, conn, _, _ in _WATCHERS.pop(endpoint, []):
        try:
            conn.send(None)
        except OSError:
            pass
        proc.join(2)
        if proc.is_alive():
            proc.kill()


class Watch:
    """Watch the server while the block runs; `.result` then holds what was seen (see `summarize`)."""

    def __init__(self, endpoint: Endpoint, interval_s: float = 0.005):
        self.endpoint = endpoint
        self.interval_s = interval_s
        self.result: dict = {}

    def __enter__(self) -> Watch:
        self._pair = _watchers(self.endpoint)
        for _, conn, ready, stop in self._pair:
            ready.clear()
            stop.clear()
            conn.send(self.interval_s)
        deadline = time.monotonic() + _READY_S
        for proc, _, ready, _ in self._pair:
            while not ready.wait(0.05):
                if not proc.is_alive() or time.monotonic() > deadline:
                    _close(self.endpoint)
                    raise LabError(f"the watch's process did not start (exit code {proc.exitcode})")
        self._t0 = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        t1 = time.monotonic()
        reports = []
        for *_, stop in self._pair:
            stop.set()
        for _, conn, _, _ in self._pair:
            reports.append(conn.recv() if conn.poll(_READY_S) else {"error": "the watch did not report back"})
        errors = [r["error"] for r in reports if "error" in r]
        if errors:
            _close(self.endpoint)
            raise LabError(errors[0])
        sampled, probed = reports
        self.result = summarize(sampled, probed["pings"], self._t0, t1)


def summarize(sampled: dict, pings: list[tuple[float, float]], t0: float, t1: float) -> dict:
    """The watch's figures: peaks over the block, growth from before it, the probe's percentiles."""
    first = sampled["first"]
    during = [p for p in sampled["timeline"] if p[0] <= t1 + 0.05] or sampled["timeline"]
    # Every PING that was in flight during the block, also one answered just after it (behind the
    # job's last command, as a PING that waited for a script is).
    in_block = sorted(s for t, s in pings if t >= t0 and t - s <= t1) or sorted(s for _, s in pings)
    rss0, used0 = int(first["used_memory_rss"]), int(first["used_memory"])
    return {
        "duration_s": t1 - t0,
        "samples": len(sampled["timeline"]),
        "peak_qbuf_bytes": sampled["peaks"]["qbuf"],
        "peak_omem_bytes": sampled["peaks"]["omem"],
        "peak_tot_mem_bytes": sampled["peaks"]["tot_mem"],
        # What the busiest client held above a client at rest (its structure and empty reply buffer).
        "idle_tot_mem_bytes": sampled["peaks"].get("idle_tot_mem", 0),
        "tot_mem_added_bytes": sampled["peaks"]["tot_mem"] - sampled["peaks"].get("idle_tot_mem", 0),
        "rss_before_bytes": rss0,
        "rss_growth_bytes": max(p[2] for p in during) - rss0,
        "used_memory_before_bytes": used0,
        "used_memory_growth_bytes": max(p[1] for p in during) - used0,
        "lazyfree_peak": max(p[3] for p in during),
        "lazyfreed": during[-1][4] - int(first.get("lazyfreed_objects", 0)),  # freed by the background thread
        # (s since the block began, used_memory, used_memory_rss, lazyfree_pending_objects)
        "timeline": [(round(p[0] - t0, 4), p[1], p[2], p[3]) for p in _thin(sampled["timeline"], _MAX_TIMELINE)],
        "probe_count": len(in_block),
        "probe_p50_ms": statistics.median(in_block) * 1e3 if in_block else 0.0,
        "probe_p99_ms": _percentile(in_block, 0.99) * 1e3,
        "probe_worst_ms": (in_block[-1] if in_block else 0.0) * 1e3,
    }
