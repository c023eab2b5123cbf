"""One plot style for the book: readable axes, a grid, the same colours for the same modes; and the
plots themselves, each registered under its results name and drawn from the saved results alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib
from matplotlib.ticker import FuncFormatter

COLORS = {"one by one": "#c0392b", "pipelined": "#2471a3", "bound": "#7f8c8d", "other": "#27ae60"}


def style() -> None:
    matplotlib.rcParams.update(
        {
            "figure.figsize": (8, 4.5),
            "figure.dpi": 110,
            "savefig.dpi": 130,
            "savefig.bbox": "tight",
            "font.size": 11,
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "legend.frameon": False,
        }
    )


# results name -> the function that draws its plot from the results document (results.load's dict).
_PLOTS: dict[str, Callable] = {}


def draws(name: str):
    """Register the decorated function as the plot of results `name` ("ch01/ping-10k"). It takes the
    saved document only, so the notebook, the site and the reference run all draw the same plot."""

    def register(plot: Callable) -> Callable:
        _PLOTS[name] = plot
        return plot

    return register


def registered() -> dict[str, Callable]:
    """Every plot registered so far: a chapter's plots register when its module is imported."""
    return dict(_PLOTS)


def save(name: str, doc: dict, path: Path):
    """Draw the plot registered for `name` from `doc` in the book's style and write it to `path` as a
    PNG; the Figure, or None when no plot is registered under that name."""
    plot = _PLOTS.get(name)
    if plot is None:
        return None
    with matplotlib.rc_context():  # the style also decides how savefig crops, so both happen inside
        style()
        fig = plot(doc)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
    return fig


def bars_with_spread(ax, measurements, *, unit: float = 1.0, ylabel: str = "seconds", colors=None) -> None:
    """Median bars with min-max whiskers: the spread of the repetitions, not a confidence interval."""
    labels = [m.label for m in measurements]
    med = [m.median * unit for m in measurements]
    low = [(m.median - m.min) * unit for m in measurements]
    high = [(m.max - m.median) * unit for m in measurements]
    ax.bar(labels, med, yerr=[low, high], capsize=4, color=colors or [COLORS["pipelined"]] * len(labels))
    ax.set_ylabel(ylabel)
    for i, value in enumerate(med):
        ax.annotate(
            f"{value:,.0f}" if value >= 100 else f"{value:.3g}",
            (i, value),
            ha="center",
            va="bottom",
            xytext=(0, 3),
            textcoords="offset points",
            fontsize=9,
        )


def depth_axis(ax) -> None:
    """A log2 x axis for pipeline depths, labelled 1, 4, 16 ... rather than 2^n."""

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
