"""The kit's look for every state it draws: a colour, and never the colour alone.

A learner who cannot tell red from green, or who prints the page in grey, reads each state by a
second mark as well: a set by its marker (and the same shape as a glyph in the widgets' HTML) and
its line style, a claim's outcome by its hatch, a moment across a timeline by its dash pattern, a
fault on a lane by its marker. The colours of each group are chosen to stay apart under common
vision and under simulated protanopia, deuteranopia and tritanopia (``colour_vision``); the test
holds every pair at least ``MIN_APART`` CIEDE2000 apart (``tests/lab/test_styles.py``, which prints
the figures). Drawers take their styles from here: ``widgets`` (set view, counter plot, chaos
view) and ``lab.timeline``.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the least CIEDE2000 distance between two colours of one group, under every simulated vision
#: (about 1 is the smallest difference one can see side by side; small marks on a plot need far more)
MIN_APART = 15.0


@dataclass(frozen=True)
class SetStyle:
    """One of the four sets: its colour, a darker ink for text on white, its marker, glyph and line style."""

    colour: str
    ink: str  # the colour for text: at least 4.5:1 against white (WCAG AA)
    marker: str  # matplotlib's marker code
    glyph: str  # the same shape as text, for HTML
    linestyle: str


SETS: dict[str, SetStyle] = {
    "pending": SetStyle("#0b3d91", "#0b3d91", "o", "●", "-"),
    "active": SetStyle("#33a0a0", "#1d6b6b", "s", "■", "--"),
    "schedule": SetStyle("#cc8400", "#8a5500", "D", "◆", "-."),
    "dead": SetStyle("#7a1020", "#7a1020", "X", "✖", ":"),
}


@dataclass(frozen=True)
class Fill:
    """A filled shape: its colour, its hatch (matplotlib's code, "" for none) and the hatch's colour."""

    colour: str
    hatch: str
    hatch_colour: str
    label: str


#: how a claim ended, on a timeline bar (keys as ``lab.timeline.bars`` names them)
OUTCOMES: dict[str, Fill] = {
    "ok": Fill("#1e5a1e", "", "#ffffff", "completed"),  # the common case stays plain: a busy lane reads quietly
    "scheduled": Fill("#3461d1", "...", "#ffffff", "retried"),
    "dead": Fill("#1a1a1a", "xx", "#ffffff", "dead"),
    "stale": Fill("#f2aa5e", "||", "#1a1a1a", "stale, refused"),
    "none": Fill("#cccccc", "--", "#1a1a1a", "no settle seen"),
}
#: a claim a finding of the checker names: hatched over the bar's own fill, with a rule under it
FINDING = Fill("#d04a72", "////", "#d04a72", "named by a finding")
#: a frozen worker's time, shaded behind its lane (taller than a bar)
FROZEN = Fill("#5cc8ff", "", "#5cc8ff", "frozen")


@dataclass(frozen=True)
class Moment:
    """A line across every lane at one moment: its colour, dash pattern and legend label."""

    colour: str
    linestyle: str | tuple[int, tuple[int, ...]]
    label: str


MOMENTS: dict[str, Moment] = {
    "restart": Moment("#b3261e", (0, (8, 2)), "node restarted"),
    "script_flush": Moment("#6a3d9a", (0, (3, 1, 1, 1, 1, 1)), "SCRIPT FLUSH"),
    # a failover's moments (echomq_teach.lab.failover)
    "hold_replication": Moment("#cc8400", ":", "replication held"),
    "kill_primary": Moment("#b3261e", "-", "primary killed"),
    "promoted": Moment("#1e5a1e", "--", "replica promoted"),
    "rejoined": Moment("#3461d1", "-.", "old primary rejoined"),
}


@dataclass(frozen=True)
class Mark:
    """A point on a lane: its colour, marker and legend label."""

    colour: str
    marker: str
    label: str


#: a fault on the lane it struck
MARKS: dict[str, Mark] = {
    "kill": Mark("#b3261e", "x", "killed"),
    "drop_link": Mark("#b3261e", "v", "link dropped"),
    "crash": Mark("#b3261e", "P", "crashed"),
}
#: a recovery call that put jobs back, on the lane of whoever called it
REAP = Mark("#3461d1", "^", "reap put jobs back")
