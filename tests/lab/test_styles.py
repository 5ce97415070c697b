"""The kit's styles tell every state apart by more than colour, in colours a colour-blind learner tells apart.

axe-core cannot see inside a matplotlib picture, so the styles are held here: each set has a marker,
a glyph and a line style of its own, each claim outcome a hatch, each moment a dash pattern, each
fault a marker; and every pair of colours in a group stays ``MIN_APART`` CIEDE2000 apart under
common vision and simulated protanopia, deuteranopia and tritanopia (Machado et al. 2009). The
figures are printed: the closest pair of each group under each vision.
"""

from __future__ import annotations

import pytest

from echomq_teach.lab import colour_vision as cv
from echomq_teach.lab import styles

GROUPS = {
    "sets": {name: s.colour for name, s in styles.SETS.items()},
    # a timeline's fills: the outcomes, the findings' hatching and rule, the frozen shading
    "timeline fills": {**{k: f.colour for k, f in styles.OUTCOMES.items()}, "finding": styles.FINDING.colour,
                       "frozen": styles.FROZEN.colour},
}


def _table(colours: dict[str, str]) -> str:
    cells = []
    for vision in cv.VISIONS:
        (a, b), d = cv.closest(colours, vision)
        cells.append(f"{vision} {d:.1f} ({a}/{b})")
    return "; ".join(cells)


@pytest.mark.parametrize("group", list(GROUPS))
def test_each_group_s_colours_stay_apart_under_every_simulated_vision(group, capsys):
    colours = GROUPS[group]
    table = cv.distances(colours)
    with capsys.disabled():
        print(f"\npalette {group}: closest pair (CIEDE2000) — {_table(colours)}")
    short = [(v, pair, round(d, 1)) for v, pairs in table.items() for pair, d in pairs.items() if d < styles.MIN_APART]
    assert short == [], f"{group}: colours closer than {styles.MIN_APART}"


def test_the_check_catches_a_palette_a_deuteranope_cannot_read():
    # the kit's set colours before issue 36: schedule and dead were one colour under deuteranopia
    before = {"pending": "#1f6feb", "active": "#1a7f37", "schedule": "#9a6700", "dead": "#cf222e"}
    (pair, d) = cv.closest(before, "deuteranopia")
    assert pair == ("schedule", "dead") and d < 5 < styles.MIN_APART


def test_every_set_has_its_own_marker_glyph_and_line_style():
    sets = styles.SETS.values()
    for attr in ("marker", "glyph", "linestyle", "colour"):
        values = [getattr(s, attr) for s in sets]
        assert len(set(values)) == len(values), f"two sets share a {attr}"
    for name, s in styles.SETS.items():
        assert cv.contrast(s.ink) >= 4.5, f"{name}'s ink is not legible text on white"
        assert cv.contrast(s.colour) >= 3, f"{name}'s colour is too faint a line on white (WCAG 1.4.11)"


def test_every_outcome_has_its_own_hatch_and_the_findings_another():
    hatches = [f.hatch for f in styles.OUTCOMES.values()] + [styles.FINDING.hatch]
    assert len(set(hatches)) == len(hatches)
    assert sum(1 for h in hatches if not h) <= 1  # one plain fill at most: the common case
    for k, f in styles.OUTCOMES.items():
        if f.hatch:
            assert cv.contrast(f.hatch_colour, f.colour) >= 3, f"{k}'s hatch does not show on its fill"
    assert len({f.label for f in styles.OUTCOMES.values()}) == len(styles.OUTCOMES)


def test_every_moment_has_its_own_dash_pattern_and_every_mark_its_own_marker():
    dashes = [str(m.linestyle) for m in styles.MOMENTS.values()]
    assert len(set(dashes)) == len(dashes)
    markers = [m.marker for m in styles.MARKS.values()] + [styles.REAP.marker]
    assert len(set(markers)) == len(markers)

