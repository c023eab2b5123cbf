"""The machine's own weather: one fixed piece of CPU work, pinned to each CPU in turn and timed back
to back, with nothing of the book running beside it.

On the book's shared 2-core VM this loop does not take one time. It runs at a fast speed, and in
spells of a fraction of a second to many seconds at a slow one, over twice as long, with no steal
time, no run-queue delay and no process of ours beside it: other tenants of the host. A sample that
falls in a spell is slower for reasons no harness in the guest can see, so the loop's own spread is
the floor under every within-run spread the book measures, and the share of time spent in spells
says how far two runs at different hours can drift. `make book` records it before and after it
measures (book/weather); `pipelab agreement` prints it beside the runs' spreads.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from . import envinfo, host, placement, results
from .errors import LabError

LOOP = 1_000_000  # pure-Python additions: about 50 ms at the fast speed here, near a typical sample; no system call
SECONDS = 10.0  # per CPU, each time a run records it
SLOW = 1.25  # a loop over 1.25x the fast time ran in a slow spell
WINDOW = 9  # consecutive loops compared at a time, as a measurement compares its samples
NAME = "book/weather"


def loop_ms(count: int = LOOP) -> float:
    """Milliseconds `count` pure-Python additions take: CPU work with no allocation and no system call."""
    start = time.perf_counter()
    total = 0
    for i in range(count):
        total += i
    return (time.perf_counter() - start) * 1e3


def series(cpu: int | None, seconds: float) -> list[float]:
    """The loop's milliseconds, back to back for `seconds`, in a child process on `cpu` (None: unpinned)."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pipelab.weather", str(seconds)],
            capture_output=True,
            text=True,
            timeout=seconds + 60,
            preexec_fn=host.before_exec({cpu} if cpu is not None else None),
        )
    except subprocess.TimeoutExpired as e:
        raise LabError(f"The machine's weather loop on CPU {cpu} did not end; is the machine overloaded?") from e
    except (subprocess.SubprocessError, OSError) as e:  # e.g. pinning to a CPU this process may not use
        raise LabError(f"The machine's weather loop could not start on CPU {cpu} ({e}).") from e
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise LabError(
            f"The machine's weather loop on CPU {cpu} failed ({last}); run `pipelab weather` to see it alone."
        )
    ran = json.loads(done.stdout)
    if cpu is not None and ran["cpus"] not in (None, [cpu]):  # a loop that wandered would time both CPUs at once
        raise LabError(f"The machine's weather loop meant for CPU {cpu} ran on CPUs {ran['cpus']}.")
    return ran["ms"]


def fastest(series_ms: list[list[float]]) -> float:
    """The fast time: the lowest 5th percentile of the series (a series taken wholly inside a spell has none)."""
    return min(sorted(times)[len(times) // 20] for times in series_ms)


def windows_of(times: list[float], size: int = WINDOW) -> list[list[float]]:
    """The series cut into runs of `size` consecutive loops, as a measurement takes its samples (a short
    last run is left out)."""
    return [times[i : i + size] for i in range(0, len(times) - size + 1, size)]


def spread(times: list[float]) -> float:
    """(slowest − fastest) / median: how far apart a measurement's samples, or a run of loops, fell."""
    return (max(times) - min(times)) / statistics.median(times)


def slow(t: float, fast: float) -> bool:
    """A loop that ran in a slow spell."""
    return t > SLOW * fast


def calm(times: list[float], fast: float) -> list[float]:
    """The loops that followed one at the fast speed: what a harness would have timed had it waited,
    before each sample, until a probe of the machine ran fast (a spell lasts many loops)."""
    return [t for before, t in zip(times, times[1:]) if not slow(before, fast)]


def describe(times: list[float], fast: float | None = None) -> dict:
    """What one CPU's series says: the fast time (its 5th percentile, or `fast`), the share of loops in slow
    spells and how much slower they ran, how long a spell lasted (median and longest, seconds), and the loop's
    own spread ((max − min) / median) over windows of WINDOW consecutive loops, median and 90th percentile."""
    fast = fast or fastest([times])
    slowed = [t for t in times if slow(t, fast)]
    spells, length = [], 0.0
    for t in times + [0.0]:  # a last fast one closes a spell still open
        if slow(t, fast):
            length += t / 1e3
        elif length:
            spells.append(length)
            length = 0.0
    windows = sorted(spread(w) for w in windows_of(times))
    return {
        "loops": len(times),
        "fast_ms": fast,
        "slow_share": len(slowed) / len(times),
        "slowdown": statistics.median(slowed) / fast if slowed else 1.0,
        "spell_s": statistics.median(spells) if spells else 0.0,
        "longest_spell_s": max(spells, default=0.0),
        "spread_median": windows[len(windows) // 2] if windows else None,
        "spread_p90": windows[int(0.9 * len(windows))] if windows else None,
    }


def measure(seconds: float = SECONDS) -> dict[str, list[float]]:
    """{"cpu<N>": series} for every CPU the lab may use, one after the other ("any" where nothing is pinned)."""
    if not placement.enabled():
        return {"any": series(None, seconds)}
    return {f"cpu{cpu}": series(cpu, seconds) for cpu in placement.usable_cpus()}


def _figures(prefix: str, d: dict) -> dict:
    return {
        f"{prefix}fast_ms": results.quantity(d["fast_ms"], "ms", f"{d['fast_ms']:.1f} ms"),
        f"{prefix}slow_pct": results.quantity(100 * d["slow_share"], "%"),
        f"{prefix}slowdown": results.quantity(d["slowdown"], "x"),
        f"{prefix}spell_s": results.quantity(d["spell_s"], "s", f"{d['spell_s']:.2f} s"),
        f"{prefix}longest_spell_s": results.quantity(d["longest_spell_s"], "s", f"{d['longest_spell_s']:.1f} s"),
        f"{prefix}spread_median_pct": results.quantity(d["spread_median"] and 100 * d["spread_median"], "%"),
        f"{prefix}spread_p90_pct": results.quantity(d["spread_p90"] and 100 * d["spread_p90"], "%"),
    }


def record(moments: dict[str, dict[str, list[float]]], base=None):
    """book/weather: every series taken ({"before": {"cpu0": [...], ...}, "after": ...}), each described,
    and all of them pooled (the figures without a prefix), each against the fastest series' fast time."""
    summary = {}
    fast = fastest([times for cpus in moments.values() for times in cpus.values()])  # the same CPUs throughout
    for moment, cpus in moments.items():
        for cpu, times in cpus.items():
            summary |= _figures(f"{moment}_{cpu}_", describe(times, fast))
    pooled = [describe(times, fast) for cpus in moments.values() for times in cpus.values()]
    windows = [d for d in pooled if d["spread_median"] is not None]  # none in a series under WINDOW loops
    summary |= {
        "slow_pct": results.quantity(100 * statistics.mean(d["slow_share"] for d in pooled), "%"),
        "slowdown": results.quantity(statistics.median(d["slowdown"] for d in pooled), "x"),
        "longest_spell_s": results.quantity(
            longest := max(d["longest_spell_s"] for d in pooled), "s", f"{longest:.1f} s"
        ),
        "spread_median_pct": results.quantity(
            100 * statistics.median(d["spread_median"] for d in windows) if windows else None, "%"
        ),
        "spread_p90_pct": results.quantity(
            100 * statistics.median(d["spread_p90"] for d in windows) if windows else None, "%"
        ),
    }
    return results.save(
        NAME,
        environment={
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
            "cpu_count": len(placement.usable_cpus()),
            "cpu_model": envinfo.cpu_model(),
            "python": envinfo.interpreter(),
        },
        params={"loop_additions": LOOP, "slow_over": SLOW, "window": WINDOW, "series_ms": moments},
        summary=summary,
        base=base,
    )


def keep(moments: dict[str, dict[str, list[float]]], prefix: str = "pipelab: "):
    """record(moments), then one line per series on the terminal; the file's path."""
    path = record(moments)
    for line in lines(results.load(NAME)):
        print(prefix + line, flush=True)
    return path


def fast_ms(doc: dict | None) -> float | None:
    """A book/weather file's fast time: the fastest series' (every series is set against it)."""
    times = [f["value"] for key, f in ((doc or {}).get("summary") or {}).items() if key.endswith("_fast_ms")]
    return min(times) if times else None


def lines(doc: dict) -> list[str]:
    """One line per series of a book/weather file, for the terminal."""
    s = doc["summary"]
    out = []
    for moment, cpus in doc["params"]["series_ms"].items():
        for cpu in cpus:
            p = f"{moment}_{cpu}_"
            out.append(
                f"{moment}, {cpu}: fast {s[p + 'fast_ms']['text']}, slow {s[p + 'slow_pct']['text']} of the time "
                f"at {s[p + 'slowdown']['text']} (spells of {s[p + 'spell_s']['text']}, the longest "
                f"{s[p + 'longest_spell_s']['text']}); the loop's own spread over "
                f"{WINDOW} in a row: median {s[p + 'spread_median_pct']['text']}, 90th percentile "
                f"{s[p + 'spread_p90_pct']['text']}"
            )
    return out


def _cpus() -> list[int] | None:
    try:
        return sorted(host.allowed_cpus())
    except host.Unavailable:  # macOS: no affinity to report
        return None


if __name__ == "__main__":  # the child of series(): loops until the time is up, prints where and how long
    end = time.perf_counter() + float(sys.argv[1])
    out = []
    while time.perf_counter() < end:
        out.append(loop_ms())
    print(json.dumps({"cpus": _cpus(), "ms": out}))
