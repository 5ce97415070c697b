"""How far apart two colours look, to a learner with common vision and with each common colour-vision deficiency.

The kit's palette (``echomq_teach.lab.styles``) is held to this: every pair of colours that tell two states
apart must stay a perceptible distance apart under each simulation. Nothing here draws; it is arithmetic.

* Simulation: Machado, Oliveira and Fernandes (2009), "A Physiologically-based Model for Simulation of
  Color Vision Deficiency" (IEEE TVCG 15(6)), their matrices for severity 1.0 (protanopia, deuteranopia,
  tritanopia), applied to linear sRGB as the paper does.
* Distance: CIEDE2000 (CIE 142-2001; the formula as Sharma, Wu and Dalal (2005) state it) between the two
  colours in CIELAB, D65 white.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import combinations

RGB = tuple[float, float, float]

#: Machado et al. (2009), severity 1.0: linear RGB in, linear RGB out
DEFICIENCIES: dict[str, tuple[RGB, RGB, RGB]] = {
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
}
VISIONS = ("common", *DEFICIENCIES)

# sRGB (D65) to XYZ, and the D65 white point, as IEC 61966-2-1 gives them
_TO_XYZ = ((0.4124, 0.3576, 0.1805), (0.2126, 0.7152, 0.0722), (0.0193, 0.1192, 0.9505))
_WHITE = (0.95047, 1.0, 1.08883)


def parse(colour: str) -> RGB:
    """``#rrggbb`` as three floats in 0..1; anything else is refused by name."""
    text = colour.strip()
    if len(text) != 7 or not text.startswith("#"):
        raise ValueError(f"a colour here is written #rrggbb, got {colour!r}")
    try:
        return tuple(int(text[i : i + 2], 16) / 255 for i in (1, 3, 5))  # type: ignore[return-value]
    except ValueError:
        raise ValueError(f"a colour here is written #rrggbb, got {colour!r}") from None


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _gamma(c: float) -> float:
    c = min(1.0, max(0.0, c))
    return 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055


def _apply(m: Sequence[Sequence[float]], v: Sequence[float]) -> RGB:
    return tuple(sum(m[r][k] * v[k] for k in range(3)) for r in range(3))  # type: ignore[return-value]


def simulate(colour: str, vision: str) -> RGB:
    """The colour (sRGB, 0..1) as ``vision`` sees it: ``"common"`` or one of ``DEFICIENCIES``."""
    rgb = parse(colour)
    if vision == "common":
        return rgb
    if vision not in DEFICIENCIES:
        raise ValueError(f"vision is one of {', '.join(VISIONS)}, got {vision!r}")
    lin = _apply(DEFICIENCIES[vision], [_linear(c) for c in rgb])
    return tuple(_gamma(c) for c in lin)  # type: ignore[return-value]


def lab(rgb: RGB) -> RGB:
    """CIELAB (D65) of an sRGB colour in 0..1."""
    xyz = _apply(_TO_XYZ, [_linear(c) for c in rgb])

    def f(t: float) -> float:
        return t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29

    fx, fy, fz = (f(v / w) for v, w in zip(xyz, _WHITE))
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def delta_e2000(lab1: RGB, lab2: RGB) -> float:
    """CIEDE2000 between two CIELAB colours (kL = kC = kH = 1)."""
    l1, a1, b1 = lab1
    l2, a2, b2 = lab2
    c_mean = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_mean**7 / (c_mean**7 + 25**7)))
    a1p, a2p = a1 * (1 + g), a2 * (1 + g)
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360 if c1p else 0.0
    h2p = math.degrees(math.atan2(b2, a2p)) % 360 if c2p else 0.0
    dl, dc = l2 - l1, c2p - c1p
    if c1p * c2p == 0:
        dh = 0.0
    elif abs(h2p - h1p) <= 180:
        dh = h2p - h1p
    else:
        dh = h2p - h1p - 360 if h2p > h1p else h2p - h1p + 360
    dhh = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    l_mean, cp_mean = (l1 + l2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        h_mean = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        h_mean = (h1p + h2p) / 2
    else:
        h_mean = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    t = (1 - 0.17 * math.cos(math.radians(h_mean - 30)) + 0.24 * math.cos(math.radians(2 * h_mean))
         + 0.32 * math.cos(math.radians(3 * h_mean + 6)) - 0.20 * math.cos(math.radians(4 * h_mean - 63)))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / math.sqrt(20 + (l_mean - 50) ** 2)
    s_c = 1 + 0.045 * cp_mean
    s_h = 1 + 0.015 * cp_mean * t
    r_t = (-2 * math.sqrt(cp_mean**7 / (cp_mean**7 + 25**7))
           * math.sin(math.radians(60 * math.exp(-(((h_mean - 275) / 25) ** 2)))))
    return math.sqrt((dl / s_l) ** 2 + (dc / s_c) ** 2 + (dhh / s_h) ** 2 + r_t * (dc / s_c) * (dhh / s_h))


def distance(c1: str, c2: str, vision: str = "common") -> float:
    """CIEDE2000 between two ``#rrggbb`` colours as ``vision`` sees them."""
    return delta_e2000(lab(simulate(c1, vision)), lab(simulate(c2, vision)))


def distances(colours: dict[str, str], visions: Iterable[str] = VISIONS) -> dict[str, dict[tuple[str, str], float]]:
    """Per vision, the distance of every pair of named colours."""
    pairs = list(combinations(colours, 2))
    return {v: {(a, b): distance(colours[a], colours[b], v) for a, b in pairs} for v in visions}


def closest(colours: dict[str, str], vision: str) -> tuple[tuple[str, str], float]:
    """The pair of named colours that ``vision`` sees closest together, and their distance."""
    pairs = distances(colours, [vision])[vision]
    pair = min(pairs, key=pairs.__getitem__)
    return pair, pairs[pair]


def contrast(fg: str, bg: str = "#ffffff") -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours (1 to 21)."""

    def luminance(c: str) -> float:
        r, g, b = (_linear(x) for x in parse(c))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    hi, lo = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
