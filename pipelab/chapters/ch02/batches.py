"""3. Batches of 10k: reply memory against time. The GET loop is the notebook's cell tagged
code:batches, passed in by the notebook."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ... import observe, plots
from ...results import median_figure, quantity, ratio_figure
from .parameters import BATCH, CLIENT_NAME, VALUE_BYTES, VALUE_KEY


def measure_batches(lab, sizes: list[int], repeat: int, get_in_batches) -> dict:
    """{(size, mode): (Measurement, peak buffers)} for one pipeline of `size` GETs and 10k batches,
    sent by the notebook's `get_in_batches(r, n, batch, key)`."""
    with lab.client() as r:
        r.set(VALUE_KEY, "v" * VALUE_BYTES)
    big = lab.client()
    big.client_setname(CLIENT_NAME)
    rows = {}
    for size in sizes:
        for mode, batch in (("one pipeline", size), ("10k batches", BATCH)):
            with observe.reply_buffer_peak(lab.endpoint, CLIENT_NAME) as peak:
                m = lab.measure(
                    f"{size:,} GETs, {mode}",
                    lambda: get_in_batches(big, size, batch, VALUE_KEY),
                    ops=size,
                    repeat=repeat,
                    size=size,
                    mode=mode,
                )
            rows[(size, mode)] = (m, dict(peak))
    big.close()
    return rows


@plots.draws("ch02/batches")
def batches_plot(doc: dict) -> Figure:
    peaks = doc["params"]["peaks"]
    rows = {
        (m.params["size"], m.params["mode"]): (m, peaks[f"{m.params['size']}|{m.params['mode']}"])
        for m in doc["measurements"]
    }
    sizes = sorted({size for size, _ in rows})
    fig, (ax_mem, ax_t) = plt.subplots(1, 2, figsize=(12, 4.5))
    for mode, style in (("one pipeline", "o-"), ("10k batches", "s--")):
        ax_mem.loglog(sizes, [max(rows[(s, mode)][1]["tot_mem"], 1) for s in sizes], style, label=mode)
        ax_t.loglog(sizes, [rows[(s, mode)][0].median for s in sizes], style, label=mode)
    ax_mem.set_xlabel("commands in the job")
    ax_mem.set_ylabel("peak client buffers on the server, bytes (log)")
    ax_mem.set_title("Reply memory: CLIENT LIST tot-mem, peak")
    ax_t.set_xlabel("commands in the job")
    ax_t.set_ylabel("seconds for the whole job (log)")
    ax_t.set_title("Time for the whole job (median)")
    ax_mem.legend()
    ax_t.legend()
    return fig


BATCHES_ALT = (
    "Two log-log charts: peak reply memory grows with the size of one pipeline but stays flat in 10k "
    "batches, while the total time of both stays about the same"
)


def batches_summary(rows: dict) -> dict:
    largest = max(size for size, _ in rows)
    one, one_peak = rows[(largest, "one pipeline")]
    cut, cut_peak = rows[(largest, "10k batches")]
    return {
        "largest_job": quantity(largest, "count"),
        "peak_one_pipeline": quantity(one_peak["tot_mem"], "bytes"),
        "peak_batched": quantity(cut_peak["tot_mem"], "bytes"),
        "memory_ratio": quantity(one_peak["tot_mem"] / max(cut_peak["tot_mem"], 1), "x"),
        "time_one_pipeline_s": median_figure(one),
        "time_batched_s": median_figure(cut),
        "time_ratio": ratio_figure(one, cut),
        "peak_omem_100k_one": quantity(rows[(100_000, "one pipeline")][1]["omem"], "bytes"),
        "peak_omem_100k_batched": quantity(rows[(100_000, "10k batches")][1]["omem"], "bytes"),
    }


def batches_params(rows: dict) -> dict:
    return {
        "sizes": sorted({size for size, _ in rows}),
        "batch": BATCH,
        "value_bytes": VALUE_BYTES,
        "peaks": {f"{s}|{mode}": peak for (s, mode), (_, peak) in rows.items()},
    }
