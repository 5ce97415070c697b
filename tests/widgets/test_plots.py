"""The widgets' plots: each set in its colour, marker and line style (``echomq_teach.lab.styles``), and in words."""

from __future__ import annotations

from echomq_widgets.plots import draw_counter, draw_sizes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from echomq_teach.lab import styles


def _figure() -> Figure:
    fig = Figure()
    FigureCanvasAgg(fig)
    return fig


def test_the_sizes_plot_draws_each_set_in_its_colour_marker_and_line_style():
    fig = _figure()
    xs = list(range(30))
    series = {name: [i % (k + 2) for i in xs] for k, name in enumerate(styles.SETS)}
    words = draw_sizes(fig, xs, series, title="sizes")
    ax = fig.axes[0]
    legend = {t.get_text(): h for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles)}
    for name, s in styles.SETS.items():
        key = legend[name]
        assert (key.get_marker(), to_hex(key.get_color())) == (s.marker, s.colour)
        drawn = [ln for ln in ax.get_lines() if to_hex(ln.get_color()) == s.colour and ln.get_marker() == s.marker]
        assert drawn and len(drawn[0].get_xdata()) == len(xs)
    assert words.startswith("Plot: sizes, 30 points, step 0 to 29. Set sizes: pending 0 → 1 (at most 1);")
    assert "dead 0 → 4 (at most 4)" in words


def test_the_counter_plot_marks_a_dead_child_by_shape_as_well():
    fig = _figure()
    words = draw_counter(fig, [3, 2, 2, 1], ["land", "✓ child 1", "✗ child 2", "✓ child 3"], 3)
    points = [ln for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) == 1]
    shapes = [(ln.get_marker(), to_hex(ln.get_color())) for ln in points]
    dead, alive = styles.SETS["dead"], styles.SETS["pending"]
    assert shapes == [(alive.marker, alive.colour)] * 2 + [(dead.marker, dead.colour), (alive.marker, alive.colour)]
    assert words == ("Plot: :dependencies, the children still outstanding after each action: 3 after land, "
                     "2 after ✓ child 1, 2 after ✗ child 2, 1 after ✓ child 3.")
