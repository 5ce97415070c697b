"""Matplotlib figures drawn off-screen (Agg) and handed to an ipywidgets Image as PNG.

A ``Figure`` made here never touches pyplot, so the inline backend never shows
a stray copy at the end of a cell and nbval sees no extra output.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

SET_COLOURS = {"pending": "#1f6feb", "active": "#1a7f37", "schedule": "#9a6700", "dead": "#cf222e"}
DPI = 110


def new_figure(width: float = 6.4, height: float = 2.6, *, layout: str | None = "constrained") -> Figure:
    """An off-screen figure; ``layout=None`` for a drawer that lays itself out (``timeline.draw``)."""
    fig = Figure(figsize=(width, height), dpi=DPI, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _style(ax) -> None:  # noqa: ANN001 - a matplotlib Axes
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(axis="y", color="#d1d9e0", linewidth=0.6)
    ax.tick_params(labelsize=8)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def draw_sizes(
    fig: Figure,
    xs: Sequence[float],
    series: dict[str, Sequence[int]],
    *,
    labels: Sequence[str] | None = None,
    xlabel: str = "step",
    title: str = "set sizes",
    marks: Sequence[tuple[float, str, str]] = (),
    xlim: tuple[float, float] | None = None,
) -> None:
    """One step line per set; ``labels`` name the x positions (per-step mode).

    ``marks`` are moments drawn across the plot as (x, label, colour): a fault, say.
    """
    fig.clear()
    ax = fig.add_subplot()
    _style(ax)
    for name, ys in series.items():
        if ys:
            ax.step(xs, ys, where="post", label=name, color=SET_COLOURS.get(name), linewidth=1.8)
            ax.plot(xs, ys, "o", color=SET_COLOURS.get(name), markersize=3 if len(xs) > 40 else 4)
    if labels is not None and len(labels) == len(xs) and len(xs) <= 16:
        ax.set_xticks(
            list(xs), list(labels), rotation=30 if len(xs) > 6 else 0, ha="right" if len(xs) > 6 else "center"
        )
    ax.set_xlabel(xlabel, fontsize=9)
    ax.set_ylabel("ids in set", fontsize=9)
    ax.set_ylim(bottom=0, top=max([1, *[max(ys) for ys in series.values() if ys]]) * 1.15 + 0.2)
    ax.set_title(title, fontsize=10, loc="left")
    top = ax.get_ylim()[1]
    for x, label, colour in marks:
        ax.axvline(x, color=colour, linewidth=1, linestyle=":", zorder=1)
        ax.annotate(label, (x, top), xytext=(2, -2), textcoords="offset points", rotation=90, va="top",
                    ha="left", fontsize=7, color=colour)
    if xlim is not None:
        ax.set_xlim(*xlim)
    if any(series.values()):
        # the marks' labels stand at the top of the plot: the legend then goes above it
        where = {"loc": "lower right", "bbox_to_anchor": (1.0, 1.0)} if marks else {"loc": "upper right"}
        ax.legend(fontsize=8, frameon=False, ncols=4, **where)


def draw_counter(
    fig: Figure, values: Sequence[int], labels: Sequence[str], n: int, *, title: str = ":dependencies"
) -> None:
    """The parent's outstanding-child counter, one point per action, ticking toward zero."""
    fig.clear()
    ax = fig.add_subplot()
    _style(ax)
    xs = list(range(len(values)))
    if values:
        ax.step(xs, values, where="post", color="#1f6feb", linewidth=2)
        for x, v, lab in zip(xs, values, labels):
            # a child's death is marked red: under ignore/remove it still ticks the counter
            colour = "#cf222e" if lab.startswith("✗") else "#1f6feb"
            ax.plot([x], [v], "o", color=colour, markersize=6, zorder=3)
            ax.annotate(str(v), (x, v), textcoords="offset points", xytext=(5, 5), ha="left", fontsize=8.5)
        ax.set_xticks(xs, list(labels))
    ax.axhline(0, color="#1a7f37", linewidth=1, linestyle="--")
    ax.set_ylim(-0.3, max(n, 1) + 0.9)
    ax.set_xlim(-0.5, max(len(values) - 0.5, n + 1.5))
    ax.set_ylabel("outstanding", fontsize=9)
    ax.set_title(title, fontsize=10, loc="left")
