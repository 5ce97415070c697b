"""The arithmetic the palette is judged by: CIEDE2000 and the simulated colour-vision deficiencies."""

from __future__ import annotations

import pytest

from echomq_teach.lab import colour_vision as cv

# Sharma, Wu and Dalal (2005), their table of test pairs for CIEDE2000: (Lab 1, Lab 2, ΔE00)
SHARMA = [
    ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
    ((50.0, 0.0, 0.0), (50.0, -1.0, 2.0), 2.3669),
    ((50.0, 2.49, -0.001), (50.0, -2.49, 0.0009), 7.1792),
    ((50.0, 2.49, -0.001), (50.0, -2.49, 0.0011), 7.2195),
    ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
    ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ((22.7233, 20.0904, -46.694), (23.0331, 14.973, -42.5619), 2.0373),
]


@pytest.mark.parametrize(("lab1", "lab2", "want"), SHARMA)
def test_ciede2000_matches_the_published_pairs(lab1, lab2, want):
    assert cv.delta_e2000(lab1, lab2) == pytest.approx(want, abs=1e-4)
    assert cv.delta_e2000(lab2, lab1) == pytest.approx(want, abs=1e-4)


def test_the_simulations_merge_what_each_deficiency_merges():
    # matplotlib's red and green: far apart to common vision and to a tritanope, near to a protanope (who
    # sees the red darker, so lightness still parts them) and all but one colour to a deuteranope
    red, green = "#d62728", "#2ca02c"
    common = cv.distance(red, green)
    assert common > 60 and cv.distance(red, green, "tritanopia") > common * 0.8
    assert cv.distance(red, green, "protanopia") < common / 2
    assert cv.distance(red, green, "deuteranopia") < 6
    # blue and green drift together for a tritanope
    assert cv.distance("#0072b2", "#009e73", "tritanopia") < cv.distance("#0072b2", "#009e73") / 2
    # greys are left alone: the matrices keep white white and black black
    for vision in cv.DEFICIENCIES:
        assert cv.distance("#ffffff", "#ffffff", vision) == pytest.approx(0, abs=0.5)
        assert cv.simulate("#000000", vision) == (0.0, 0.0, 0.0)


def test_contrast_is_wcag_s_ratio():
    assert cv.contrast("#000000") == pytest.approx(21)
    assert cv.contrast("#ffffff") == pytest.approx(1)
    assert cv.contrast("#767676") == pytest.approx(4.54, abs=0.01)  # the lightest grey that passes AA on white


@pytest.mark.parametrize("bad", ["red", "#12345", "#gg0000", "1f6feb"])
def test_a_colour_not_written_rrggbb_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="#rrggbb"):
        cv.parse(bad)


def test_an_unknown_vision_is_refused_by_name():
    with pytest.raises(ValueError, match="vision is one of common, protanopia"):
        cv.simulate("#ffffff", "monochromacy")
