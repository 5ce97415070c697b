"""A figure is shown with its words: an ``<img>`` whose ``alt`` says what was drawn, for a screen reader."""

from __future__ import annotations

import base64
import configparser
import html
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from echomq_teach.lab import figures  # noqa: E402

SANITIZE = Path(__file__).resolve().parents[2] / "notebooks" / "sanitize.cfg"


def _alt(markup: str) -> str:
    return html.unescape(re.search(r'alt="([^"]*)"', markup).group(1))


def test_a_described_figure_says_what_its_drawers_said():
    fig, (top, bottom) = plt.subplots(2, 1)
    try:
        figures.describe(fig, "Timeline: the model.")
        figures.describe(fig, "Timeline: this queue.")
        assert figures.description(fig) == "Timeline: the model. Timeline: this queue."
    finally:
        plt.close(fig)


def test_a_figure_nobody_described_is_told_by_its_titles_labels_and_key():
    fig, ax = plt.subplots()
    try:
        ax.plot([0, 1], [2, 3], label="stream length (XLEN)")
        ax.plot([0, 1], [1, 3], "--", label="floor rows")
        ax.set(title="the driver folds", xlabel="seconds", ylabel="settles")
        ax.legend()
        fig.suptitle("the floor")
        assert figures.description(fig) == (
            "the floor. the driver folds; x axis: seconds; y axis: settles; key: stream length (XLEN), floor rows."
        )
    finally:
        plt.close(fig)
    bare = plt.figure()
    try:
        assert figures.description(bare) == "A figure with no title, labels or legend."
    finally:
        plt.close(bare)


def test_the_picture_is_an_img_with_its_words_and_the_png():
    fig, ax = plt.subplots()
    try:
        ax.set_title('a "quoted" <title> & more')
        bundle = figures.Picture(fig)._repr_mimebundle_()
    finally:
        plt.close(fig)
    markup = bundle["text/html"]
    assert markup.startswith('<img class="emq-picture" alt="')
    assert _alt(markup) == 'a "quoted" <title> & more.'  # escaped in the attribute, whole once read
    data = base64.b64decode(re.search(r'src="data:image/png;base64,([^"]+)"', markup).group(1))
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert re.fullmatch(r"<Figure size \d+x\d+ with 1 Axes>", bundle["text/plain"])


def test_nbval_masks_the_picture_and_its_words():
    # the stored notebooks compare text/html: the PNG and the counts in its words differ from run to run
    cfg = configparser.ConfigParser()
    cfg.read(SANITIZE)
    masks = [(cfg[s]["regex"], cfg[s]["replace"]) for s in cfg.sections()]
    one = figures.img_html(b"\x89PNG one", "Timeline: 301 claims (150 completed).")
    two = figures.img_html(b"\x89PNG two", "Timeline: 298 claims (149 completed).")

    def sanitized(text: str) -> str:
        for regex, replace in masks:
            text = re.sub(regex, replace, text)
        return text

    assert sanitized(one) == sanitized(two) == '<img class="emq-picture">'


def test_show_displays_each_open_figure_with_its_words_and_closes_it(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    a, _ = plt.subplots()
    b, _ = plt.subplots()
    figures.describe(a, "the first")
    figures.show()
    assert [p.alt for p in shown] == ["the first", "A figure with no title, labels or legend."]
    assert not plt.fignum_exists(a.number) and not plt.fignum_exists(b.number)
    c, _ = plt.subplots()
    d, _ = plt.subplots()
    try:
        figures.show(c)  # one figure: the others stay open
        assert len(shown) == 3 and not plt.fignum_exists(c.number) and plt.fignum_exists(d.number)
    finally:
        plt.close(d)


@pytest.mark.parametrize("bad", [None, 3])
def test_describe_refuses_what_is_not_words(bad):
    fig = plt.figure()
    try:
        with pytest.raises(TypeError, match="a figure's description is text"):
            figures.describe(fig, bad)
        assert figures.description(fig) == "A figure with no title, labels or legend."  # nothing kept
    finally:
        plt.close(fig)
