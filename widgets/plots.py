"""Matplotlib figures drawn off-screen (Agg) and shown in a widget as an ``<img>`` with its text alternative.

A ``Figure`` made here never touches pyplot, so the inline backend never shows
a stray copy at the end of a cell and nbval sees no extra output. Each drawer
answers the figure in words, and ``Picture`` shows both: an ipywidgets
``Image`` has no ``alt``, so a screen reader would meet a picture with no name.
Each set keeps its colour, marker and line style from ``echomq_teach.lab.styles``.
"""

from __future__ import annotations

from collections.abc import Sequence

import ipywidgets as widgets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from echomq_teach.lab import figures
from echomq_teach.lab.styles import SETS

DPI = 110
_MARKED = 14  # at most this many markers on one line: the shapes stay apart on a long run


def new_figure(width: float = 6.4, height: float = 2.6, *, layout: str | None = "constrained") -> Figure:
    """An off-screen figure; ``layout=None`` for a drawer that lays itself out (``timeline.draw``)."""
    fig = Figure(figsize=(width, height), dpi=DPI, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def png(fig: Figure) -> bytes:
    """The whole figure at its own size (a widget's picture keeps its place as it redraws)."""
    return figures.png(fig, crop=False)


class Picture(widgets.HTML):
    """A figure as an ``<img>`` with its text alternative; ``.png`` holds the bytes, ``.alt`` the words."""

    def __init__(self, max_width: int, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.max_width = max_width
        self.png = b""
        self.alt = ""

    def show(self, fig: Figure, alt: str) -> None:
        self.png, self.alt = png(fig), alt
        self.value = figures.img_html(self.png, alt, max_width=self.max_width)


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
) -> str:
    """One step line per set, each in its colour, marker and line style; answers the plot in words.

    ``labels`` name the x positions (per-step mode). ``marks`` are moments drawn across the plot as
    (x, label, colour): a fault, say, each with its label written beside its line.
    """
    fig.clear()
    ax = fig.add_subplot()
    _style(ax)
    every = max(1, len(xs) // _MARKED)
    for name, ys in series.items():
        if ys:
            st = SETS[name]
            ax.step(xs, ys, where="post", color=st.colour, linewidth=1.8, linestyle=st.linestyle)
            ax.plot(xs, ys, st.marker, color=st.colour, markersize=4.5 if every > 1 else 5.5, markevery=every)
            # the legend's key shows the line and its marker together
            ax.plot([], [], color=st.colour, linestyle=st.linestyle, marker=st.marker, label=name)
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
        ax.legend(fontsize=8, frameon=False, ncols=4, handlelength=3, **where)
    return sizes_text(title, xs, series, xlabel=xlabel, labels=labels, marks=marks)


def sizes_text(
    title: str,
    xs: Sequence[float],
    series: dict[str, Sequence[int]],
    *,
    xlabel: str = "step",
    labels: Sequence[str] | None = None,
    marks: Sequence[tuple[float, str, str]] = (),
) -> str:
    """What ``draw_sizes`` draws, in words: each set's first, largest and last size, and the marks."""
    if not xs or not any(series.values()):
        return f"Plot: {title}. No points yet."
    if labels is not None and len(labels) == len(xs) and len(xs) <= 16:
        span = f"{len(xs)} points ({' → '.join(labels)})"
    else:
        span = f"{len(xs)} points, {xlabel} {xs[0]:.3g} to {xs[-1]:.3g}"
    sets = "; ".join(f"{name} {ys[0]} → {ys[-1]} (at most {max(ys)})" for name, ys in series.items() if ys)
    out = f"Plot: {title}, {span}. Set sizes: {sets}."
    if marks:
        out += " Marked: " + ", ".join(f"{label} at {x:.1f}" for x, label, _ in marks) + "."
    return out


def draw_counter(
    fig: Figure, values: Sequence[int], labels: Sequence[str], n: int, *, title: str = ":dependencies"
) -> str:
    """The parent's outstanding-child counter, one point per action, ticking toward zero; answers it in words."""
    fig.clear()
    ax = fig.add_subplot()
    _style(ax)
    xs = list(range(len(values)))
    line, dead = SETS["pending"], SETS["dead"]
    if values:
        ax.step(xs, values, where="post", color=line.colour, linewidth=2)
        for x, v, lab in zip(xs, values, labels):
            # a child's death is marked by the dead set's colour and shape: under ignore/remove it still ticks
            st = dead if lab.startswith("✗") else line
            ax.plot([x], [v], st.marker, color=st.colour, markersize=7 if st is dead else 6, zorder=3)
            ax.annotate(str(v), (x, v), textcoords="offset points", xytext=(5, 5), ha="left", fontsize=8.5)
        ax.set_xticks(xs, list(labels))
    ax.axhline(0, color=SETS["active"].ink, linewidth=1, linestyle="--")
    ax.set_ylim(-0.3, max(n, 1) + 0.9)
    ax.set_xlim(-0.5, max(len(values) - 0.5, n + 1.5))
    ax.set_ylabel("outstanding", fontsize=9)
    ax.set_title(title, fontsize=10, loc="left")
    if not values:
        return f"Plot: {title}. No flow landed yet: the counter starts at {n}."
    steps = ", ".join(f"{v} after {lab}" for v, lab in zip(values, labels))
    return f"Plot: {title}, the children still outstanding after each action: {steps}."
