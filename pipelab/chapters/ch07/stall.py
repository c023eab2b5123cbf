"""Section 1, the event loop while a big pipeline is packed and parsed: a 1 ms ticker's worst lag.
The pipelines (set_in_pipelines) are the notebook's cell tagged code:stall, passed in by the notebook."""

from __future__ import annotations

import asyncio
import statistics
import time

import matplotlib.pyplot as plt
import redis
import redis.asyncio
from matplotlib.figure import Figure

from ... import plots
from ...measure import Measurement
from ...params import Size
from ...results import md_table, median_figure, quantity
from ...server import Endpoint
from .common import PREFIX, LoopThread

STALL_SIZES = Size(full=[1_000, 10_000, 30_000, 100_000], quick=[1_000, 20_000])
STALL_REPEAT = Size(full=3, quick=2)
STALL_ONCE = 100_000  # from this size on, one run of each (100,000 SETs take redis.asyncio ~2 s)
STALL_CHUNKS = (1_000, 10_000)
TICK_S = 0.001


async def ticker(lags: list[float], stop: asyncio.Event) -> None:
    # Asks to wake every millisecond; how late it wakes is how long the loop could not run it.
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        asked = loop.time() + TICK_S
        await asyncio.sleep(TICK_S)
        lags.append(loop.time() - asked)


async def _stall_once(r: redis.asyncio.Redis, keys: list[str], chunk: int | None, set_in_pipelines) -> tuple:
    lags: list[float] = []
    stop = asyncio.Event()
    tick = asyncio.create_task(ticker(lags, stop))
    await asyncio.sleep(5 * TICK_S)  # the ticker is running
    start = time.perf_counter()
    await set_in_pipelines(r, keys, chunk)
    elapsed = time.perf_counter() - start
    stop.set()
    await tick
    return elapsed, max(lags), len(lags)


def measure_stall(endpoint: Endpoint, sizes: list[int], repeat: int, set_in_pipelines) -> dict:
    """{(n, mode): Measurement of the time of the notebook's `set_in_pipelines(r, keys, chunk)`} with the
    ticker's worst lag of each run as params.
    One warm-up run of the smallest size serves all; the largest sizes run once per mode, chunks of
    1,000 being the only chunks measured there."""
    out = {}

    async def run_all():
        r = endpoint.async_client()
        try:
            warmup = await _stall_once(r, [f"{PREFIX}stall:{i}" for i in range(sizes[0])], None, set_in_pipelines)
            for n in sizes:
                keys = [f"{PREFIX}stall:{i % 1000}" for i in range(n)]
                chunks = STALL_CHUNKS[:1] if n >= STALL_ONCE else STALL_CHUNKS
                for mode, chunk in (("one pipeline", None), *((f"chunks of {c:,}", c) for c in chunks if c < n)):
                    runs = [
                        await _stall_once(r, keys, chunk, set_in_pipelines)
                        for _ in range(1 if n >= STALL_ONCE else repeat)
                    ]
                    out[(n, mode)] = Measurement(
                        f"{n:,} SETs, {mode}",
                        n,
                        [t for t, _, _ in runs],
                        {
                            "n": n,
                            "mode": mode,
                            "max_lag_s": [lag for _, lag, _ in runs],
                            "ticks": [k for _, _, k in runs],
                        },
                        [warmup[0]],
                    )
        finally:
            await r.aclose()

    with LoopThread() as loop:
        loop.run(run_all())
    return out


def worst_lag(m: Measurement) -> float:
    """The median over the repetitions of each run's worst lag, in seconds."""
    return statistics.median(m.params["max_lag_s"])


def stall_table(runs: dict) -> str:
    rows = [
        [
            f"{n:,}",
            mode,
            f"{m.median * 1e3:,.1f} ms",
            f"{worst_lag(m) * 1e3:,.1f} ms",
            f"{min(m.params['max_lag_s']) * 1e3:,.1f}–{max(m.params['max_lag_s']) * 1e3:,.1f} ms",
        ]
        for (n, mode), m in runs.items()
    ]
    return md_table(["SETs", "Sent as", "Time (median)", "Worst ticker lag (median)", "… min–max"], rows)


@plots.draws("ch07/stall")
def stall_plot(doc: dict) -> Figure:
    runs = {(m.params["n"], m.params["mode"]): m for m in doc["measurements"]}
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for mode in dict.fromkeys(mode for _, mode in runs):
        points = sorted((n, worst_lag(m) * 1e3) for (n, md), m in runs.items() if md == mode)
        ax.plot(*zip(*points), "o-", label=mode)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("SETs sent (log)")
    ax.set_ylabel("worst lag of a 1 ms ticker, ms (log)")
    ax.set_title("redis.asyncio: how long the event loop cannot run anything else")
    ax.legend()
    return fig


STALL_ALT = (
    "Log-log line chart: the worst lag of a 1 ms ticker coroutine against the number of SETs, for one "
    "pipeline and for chunks of 10,000"
)


def stall_summary(runs: dict) -> dict:
    """Figures by role, so a quick run fills the same ones: `big` is the largest size, `mid` the
    largest at which every chunk size ran."""
    sizes = sorted({n for n, _ in runs})
    chunked = [f"chunks of {c:,}" for c in STALL_CHUNKS]
    big, mid = sizes[-1], max(n for n in sizes if all((n, mode) in runs for mode in chunked))
    out = {"big": quantity(big, "count"), "mid": quantity(mid, "count")}
    for role, n in (("big", big), ("mid", mid)):
        for mode in ("one pipeline", *chunked):
            if (n, mode) in runs:
                tag = "one" if mode == "one pipeline" else f"chunk{mode.rsplit(' ', 1)[1].replace(',', '')}"
                m = runs[(n, mode)]
                out[f"lag_{tag}_{role}"] = quantity(worst_lag(m) * 1e3, "num", f"{worst_lag(m) * 1e3:,.1f} ms")
                out[f"time_{tag}_{role}"] = median_figure(m)
                out[f"us_per_cmd_{tag}_{role}"] = median_figure(m, "us", per_op=True)
    out["lag_one_vs_chunked"] = quantity(
        worst_lag(runs[(big, "one pipeline")]) / worst_lag(runs[(big, chunked[0])]), "x"
    )
    return out
