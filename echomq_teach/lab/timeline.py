"""A run drawn: one lane per worker, one bar per claim from its claim to its settle, the faults marked.

Bars are coloured by how the claim ended: completed, retried, dead, refused
as stale, or never settled (the worker was killed, or the settle's answer was
lost). A frozen worker's time is shaded, a kill is a cross, a restart of the
node a line across every lane. The checker's findings are drawn on top, light
enough that a hundred overlapping ones still read: each claim a finding names
is hatched in red (hatching lines up across bars, so overlaps do not thicken
into a block) with a thin red rule under it, and a lane's label ends in
``⚠ N``, the number of its claims that findings name (the legend says so).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .checker import Report
from .history import History, Op

COLOURS = {
    "ok": "#3a923a",  # completed
    "scheduled": "#4c72b0",  # retried later
    "dead": "#333333",
    "stale": "#e08a1e",  # the fence refused it
    "none": "#b8b8b8",  # never settled: killed, or the answer never came
}
LABELS = {"ok": "completed", "scheduled": "retried", "dead": "dead", "stale": "stale, refused",
          "none": "no settle seen"}
_FAULT_MARKS = {"kill": "x", "drop_link": "v", "crash": "X"}
FINDING = "#d62728"  # the findings' hatching and rule
FLAGGED_LABEL = "named by a finding (⚠ N by a lane: N such claims)"
#: a failover's moments (echomq_teach.lab.failover), each a line across every lane: colour, style, label
_FAILOVER_LINES = {
    "hold_replication": ("#e08a1e", ":", "replication held"),
    "kill_primary": ("red", "-", "primary killed"),
    "promoted": ("#3a923a", "--", "replica promoted"),
    "rejoined": ("#4c72b0", ":", "old primary rejoined"),
}


def bars(history: History) -> dict[str, list[tuple[float, float, str, Op, Op | None]]]:
    """Per worker: (start, end, outcome, claim, settle) for every claim it got an answer to."""
    out: dict[str, list[tuple[float, float, str, Op, Op | None]]] = defaultdict(list)
    settles: dict[tuple[str, str, int], list[Op]] = defaultdict(list)
    ends: dict[str, float] = {}
    for o in history.ops:
        if o.op in ("complete", "retry") and o.job and o.token is not None:
            settles[(o.worker, o.job, o.token)].append(o)
        ends[o.worker] = max(ends.get(o.worker, o.end), o.end)
    for c in history.calls("claim"):
        if not (c.ok and c.job):
            continue
        start = c.answered or c.sent
        s = next((s for s in settles[(c.worker, c.job, c.token or 0)] if s.sent >= start), None)
        if s is None:
            out[c.worker].append((start, ends.get(c.worker, start), "none", c, None))
        else:
            outcome = str(s.reply) if s.ok and s.reply in COLOURS else "none"
            out[c.worker].append((start, s.end, outcome, c, s))
    return out


def draw(history: History, report: Report | None = None, *, ax: Any = None, title: str | None = None,
         width: float = 10.0) -> Any:
    """The timeline as a matplotlib figure (``ax`` to draw into your own axes). Seconds from the run's start."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.transforms import offset_copy

    # time 0 is the first call of a worker or the metronome: the producer's enqueues come before the run
    t0 = min((o.sent for o in history.ops if o.worker != "producer"), default=history.start)
    # the producer and the nemesis hold no claims: a fault is drawn on the lane it struck
    lanes = [w for w in history.workers() if w not in ("producer", "nemesis")]
    per = bars(history)
    flagged: dict[str, set[tuple[str, int | None]]] = defaultdict(set)
    if report is not None:
        for f in report.findings:
            for o in f.ops:
                if o.op == "claim":
                    flagged[o.worker].add((o.job or "", o.token))
    if ax is None:
        fig, ax = plt.subplots(figsize=(width, 0.45 * len(lanes) + 1.6))
    else:
        fig = ax.figure
    y = {w: i for i, w in enumerate(lanes)}
    for w in lanes:
        by_outcome: dict[str, list[tuple[float, float]]] = defaultdict(list)
        named: list[tuple[float, float]] = []
        for start, end, outcome, claim, _ in per.get(w, []):
            by_outcome[outcome].append(((start - t0) / 1000, max(end - start, 1.0) / 1000))
            if (claim.job or "", claim.token) in flagged[w]:
                named.append(((start - t0) / 1000, max(end - start, 1.0) / 1000))
        for outcome, spans in by_outcome.items():
            ax.broken_barh(spans, (y[w] - 0.3, 0.6), facecolors=COLOURS[outcome], zorder=2)
        if named:
            # hatching, not an outline: the bar's colour (how the claim ended) shows through
            ax.broken_barh(named, (y[w] - 0.3, 0.6), facecolors="none", edgecolors=FINDING, hatch="////",
                           linewidth=0, zorder=4)
            ax.broken_barh(named, (y[w] + 0.33, 0.07), facecolors=FINDING, zorder=4)
    # the faults: a freeze is shaded until its thaw; kills, dropped links and crashes are marked
    frozen: dict[str, float] = {}
    for o in history.notes():
        t = (o.sent - t0) / 1000
        target = o.extra.get("worker") or (o.worker if o.op == "crash" else None)
        if o.op == "freeze" and target in y:
            frozen[target] = t
        elif o.op == "thaw" and target in frozen:
            start = frozen.pop(target)
            ax.broken_barh([(start, t - start)], (y[target] - 0.45, 0.9), facecolors="#9ecae1", alpha=0.6, zorder=1)
        elif o.op in _FAULT_MARKS and target in y:
            ax.plot([t], [y[target]], marker=_FAULT_MARKS[o.op], color="red", markersize=9, zorder=5)
        elif o.op == "restart":
            ax.axvline(t, color="red", linestyle="--", linewidth=1.2, zorder=3)
        elif o.op == "script_flush":
            ax.axvline(t, color="purple", linestyle=":", linewidth=1.2, zorder=3)
        elif o.op in _FAILOVER_LINES:
            colour, style, _ = _FAILOVER_LINES[o.op]
            ax.axvline(t, color=colour, linestyle=style, linewidth=1.4, zorder=3)
    # a recovery call that put jobs back: a caret on the lane of whoever called it
    for o in history.calls("reap", "stalled"):
        if o.released() and o.worker in y:
            ax.plot([(o.sent - t0) / 1000], [y[o.worker]], marker="^", color="#4c72b0", markersize=7, zorder=5)
    ax.set_yticks(range(len(lanes)))
    # ⚠ N: how many of the lane's claims some finding names (a claim named twice counts once)
    ax.set_yticklabels([w + (f"  ⚠ {len(flagged[w])}" if flagged[w] else "") for w in lanes])
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the first worker's first call (node clock)")
    legend = [Patch(color=COLOURS[k], label=LABELS[k]) for k in COLOURS]
    legend += [Patch(facecolor="#9ecae1", label="frozen"),
               Patch(facecolor="white", edgecolor=FINDING, hatch="////", linewidth=0, label=FLAGGED_LABEL),
               Line2D([], [], color="red", marker="x", linestyle="none", label="killed"),
               Line2D([], [], color="red", marker="v", linestyle="none", label="link dropped"),
               Line2D([], [], color="red", linestyle="--", label="node restarted"),
               Line2D([], [], color="purple", linestyle=":", label="SCRIPT FLUSH"),
               Line2D([], [], color="#4c72b0", marker="^", linestyle="none", label="reap put jobs back")]
    seen = {o.op for o in history.notes()}
    legend += [Line2D([], [], color=c, linestyle=ls, label=label)
               for op, (c, ls, label) in _FAILOVER_LINES.items() if op in seen]
    # a fixed distance under the axes (not a fraction of them): a short figure's legend then clears the x label
    below = offset_copy(ax.transAxes, fig=fig, y=-0.5, units="inches")
    ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=below, ncol=5,
              fontsize=8, frameon=False)
    verdict = f" — checker: {report.verdict}" if report is not None else ""
    ax.set_title((title or "the run") + verdict)
    fig.tight_layout()
    return fig
