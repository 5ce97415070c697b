"""A figure shown with its text alternative: what a screen reader reads in place of the picture.

JupyterLab draws a plain PNG output as an ``<img>`` with no ``alt``, so a picture says nothing to a
learner who cannot see it. The kit's drawers attach a description to each figure they draw
(``describe``: what was drawn, in words and counts), and ``show()`` displays a figure as an
``<img>`` that carries it: ``show()`` where a notebook would call ``plt.show()``. A figure
nobody described is shown with one made from its titles, axis labels and legend.
"""

from __future__ import annotations

import base64
import html
import io
import weakref
from typing import Any

_DESCRIPTIONS: weakref.WeakKeyDictionary[Any, list[str]] = weakref.WeakKeyDictionary()
CLASS = "emq-picture"


def describe(fig: Any, text: str) -> Any:
    """Add ``text`` to what ``fig`` says in words (one sentence per panel drawn); answers ``fig``."""
    if not isinstance(text, str):
        raise TypeError(f"a figure's description is text, got {type(text).__name__}")
    _DESCRIPTIONS.setdefault(fig, []).append(text.strip())
    return fig


def description(fig: Any) -> str:
    """The figure in words: what its drawers said, else its titles, axis labels and legend entries."""
    said = _DESCRIPTIONS.get(fig)
    if said:
        return " ".join(said)
    parts = []
    if fig.get_suptitle():
        parts.append(fig.get_suptitle() + ".")
    for ax in fig.get_axes():
        bits = [ax.get_title(loc) for loc in ("left", "center", "right") if ax.get_title(loc)]
        if ax.get_xlabel():
            bits.append(f"x axis: {ax.get_xlabel()}")
        if ax.get_ylabel():
            bits.append(f"y axis: {ax.get_ylabel()}")
        legend = ax.get_legend()
        if legend is not None:
            bits.append("key: " + ", ".join(t.get_text() for t in legend.get_texts()))
        if bits:
            parts.append("; ".join(bits) + ".")
    return " ".join(parts) or "A figure with no title, labels or legend."


def png(fig: Any, *, crop: bool = True) -> bytes:
    """The figure as PNG on white (it reads on a dark theme too); ``crop``: trimmed as the inline backend trims."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi, bbox_inches="tight" if crop else None, facecolor="white")
    return buf.getvalue()


def img_html(data: bytes, alt: str, *, max_width: int | None = None) -> str:
    """An ``<img>`` of PNG bytes with its text alternative (and a width it may not grow past)."""
    style = f' style="max-width:{max_width}px;width:100%;height:auto"' if max_width else ""
    src = base64.b64encode(data).decode("ascii")
    return f'<img class="{CLASS}" alt="{html.escape(alt, quote=True)}"{style} src="data:image/png;base64,{src}">'


class Picture:
    """A figure as a notebook output: ``text/html`` (the ``<img>`` with its alt) and matplotlib's text line."""

    def __init__(self, fig: Any, alt: str | None = None) -> None:
        self.alt = alt if alt is not None else description(fig)
        self.data = png(fig)
        self.text = repr(fig)  # the text/plain a figure shown by matplotlib has (notebooks/sanitize.cfg masks it)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/html": img_html(self.data, self.alt), "text/plain": self.text}


def show(fig: Any = None) -> None:
    """Display ``fig`` (or every figure pyplot holds open) with its text alternative, then close it.

    Closed, so the inline backend does not show a second copy, without its alt, at the end of the cell.
    """
    import matplotlib.pyplot as plt
    from IPython.display import display

    figs = [fig] if fig is not None else [plt.figure(n) for n in plt.get_fignums()]
    for f in figs:
        display(Picture(f))
        plt.close(f)
