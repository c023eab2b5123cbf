"""One plot style for the book: readable axes, a grid, the same colours for the same modes."""
from __future__ import annotations

import matplotlib

COLORS = {"one by one": "#c0392b", "pipelined": "#2471a3", "bound": "#7f8c8d", "other": "#27ae60"}


def style() -> None:
    matplotlib.rcParams.update({
        "figure.figsize": (8, 4.5), "figure.dpi": 110, "savefig.dpi": 130, "savefig.bbox": "tight",
        "font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11, "axes.grid": True,
        "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False, "legend.frameon": False,
    })


def bars_with_spread(ax, measurements, *, unit: float = 1.0, ylabel: str = "seconds", colors=None) -> None:
    """Median bars with min-max whiskers: the spread of the repetitions, not a confidence interval."""
    labels = [m.label for m in measurements]
    med = [m.median * unit for m in measurements]
    low = [(m.median - m.min) * unit for m in measurements]
    high = [(m.max - m.median) * unit for m in measurements]
    ax.bar(labels, med, yerr=[low, high], capsize=4, color=colors or [COLORS["pipelined"]] * len(labels))
    ax.set_ylabel(ylabel)
    for i, value in enumerate(med):
        ax.annotate(f"{value:,.0f}" if value >= 100 else f"{value:.3g}", (i, value), ha="center", va="bottom", xytext=(0, 3),
                    textcoords="offset points", fontsize=9)


def depth_axis(ax) -> None:
    """A log2 x axis for pipeline depths, labelled 1, 4, 16 ... rather than 2^n."""
    from matplotlib.ticker import FuncFormatter  # noqa: PLC0415

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    ax.set_xlabel("pipeline depth (commands per batch)")


def per_op_bars(ax, labels, values, colors, *, xlabel: str, title: str) -> None:
    """Horizontal bars on a log axis, first label on top: per-operation costs that span decades."""
    ax.barh(labels, values, color=colors)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.invert_yaxis()
