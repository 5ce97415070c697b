"""A run drawn: one lane per worker, one bar per claim from its claim to its settle, the faults marked.

Bars are coloured and hatched by how the claim ended: completed (plain),
retried, dead, refused as stale, or never settled (the worker was killed, or
the settle's answer was lost), each in its own colour and hatch
(``styles.OUTCOMES``: never the colour alone). A frozen worker's time is shaded
taller than the bars, a kill is a cross, a restart of the node a line across
every lane, each moment in a dash pattern of its own. The checker's findings
are drawn on top, light enough that a hundred overlapping ones still read: each
claim a finding names is hatched in red (hatching lines up across bars, so
overlaps do not thicken into a block) with a thin red rule under it, and a
lane's label ends in ``⚠ N``, the number of its claims that findings name (the
legend says so). The figure carries its description in words
(``figures.describe``): ``figures.show`` gives it to a screen reader.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .checker import Report
from .figures import describe
from .history import History, Op
from .styles import FINDING, FROZEN, MARKS, MOMENTS, OUTCOMES, REAP

FLAGGED_LABEL = "named by a finding (⚠ N by a lane: N such claims)"


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
            outcome = str(s.reply) if s.ok and s.reply in OUTCOMES else "none"
            out[c.worker].append((start, s.end, outcome, c, s))
    return out


def draw(history: History, report: Report | None = None, *, ax: Any = None, title: str | None = None,
         width: float = 10.0) -> Any:
    """The timeline as a matplotlib figure (``ax`` to draw into your own axes). Seconds from the run's start.

    The figure is described in words as well (``figures.describe``; ``figures.show`` displays it so).
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.transforms import offset_copy

    # time 0 is the first call of a worker or the metronome: the producer's enqueues come before the run
    t0 = min((o.sent for o in history.ops if o.worker != "producer"), default=history.start)
    # the producer and the nemesis hold no claims: a fault is drawn on the lane it struck
    lanes = [w for w in history.workers() if w not in ("producer", "nemesis")]
    per = bars(history)
    flagged = _flagged(report)
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
            fill = OUTCOMES[outcome]
            # the hatch is drawn in the edge colour; no outline, so neighbouring bars never merge into a block
            ax.broken_barh(spans, (y[w] - 0.3, 0.6), facecolors=fill.colour, edgecolors=fill.hatch_colour,
                           hatch=fill.hatch or None, linewidth=0, zorder=2)
        if named:
            # hatching, not an outline: the bar's colour and hatch (how the claim ended) show through
            ax.broken_barh(named, (y[w] - 0.3, 0.6), facecolors="none", edgecolors=FINDING.colour,
                           hatch=FINDING.hatch, linewidth=0, zorder=4)
            ax.broken_barh(named, (y[w] + 0.33, 0.07), facecolors=FINDING.colour, zorder=4)
    # the faults: a freeze is shaded until its thaw; kills, dropped links and crashes are marked
    frozen: dict[str, float] = {}
    for o in history.notes():
        t = (o.sent - t0) / 1000
        target = o.extra.get("worker") or (o.worker if o.op == "crash" else None)
        if o.op == "freeze" and target in y:
            frozen[target] = t
        elif o.op == "thaw" and target in frozen:
            start = frozen.pop(target)
            ax.broken_barh([(start, t - start)], (y[target] - 0.45, 0.9), facecolors=FROZEN.colour, alpha=0.6,
                           zorder=1)
        elif o.op in MARKS and target in y:
            m = MARKS[o.op]
            ax.plot([t], [y[target]], marker=m.marker, color=m.colour, markersize=9, zorder=5)
        elif o.op in MOMENTS:
            line = MOMENTS[o.op]
            ax.axvline(t, color=line.colour, linestyle=line.linestyle, linewidth=1.4, zorder=3)
    # a recovery call that put jobs back: a caret on the lane of whoever called it
    for o in history.calls("reap", "stalled"):
        if o.released() and o.worker in y:
            ax.plot([(o.sent - t0) / 1000], [y[o.worker]], marker=REAP.marker, color=REAP.colour, markersize=7,
                    zorder=5)
    ax.set_yticks(range(len(lanes)))
    # ⚠ N: how many of the lane's claims some finding names (a claim named twice counts once)
    ax.set_yticklabels([w + (f"  ⚠ {len(flagged[w])}" if flagged[w] else "") for w in lanes])
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the first worker's first call (node clock)")
    seen = {o.op for o in history.notes()}
    legend = [Patch(facecolor=f.colour, edgecolor=f.hatch_colour, hatch=f.hatch or None, linewidth=0,
                    label=f.label) for f in OUTCOMES.values()]
    legend += [Patch(facecolor=FROZEN.colour, alpha=0.6, label=FROZEN.label),
               Patch(facecolor="white", edgecolor=FINDING.colour, hatch=FINDING.hatch, linewidth=0,
                     label=FLAGGED_LABEL)]
    legend += [Line2D([], [], color=m.colour, marker=m.marker, linestyle="none", label=m.label)
               for op, m in MARKS.items() if op != "crash" or "crash" in seen]
    legend.append(Line2D([], [], color=REAP.colour, marker=REAP.marker, linestyle="none", label=REAP.label))
    # the node's restart and a SCRIPT FLUSH always (the chaos view offers both); a failover's moments when seen
    legend += [Line2D([], [], color=m.colour, linestyle=m.linestyle, label=m.label)
               for op, m in MOMENTS.items() if op in ("restart", "script_flush") or op in seen]
    # a fixed distance under the axes (not a fraction of them): a short figure's legend then clears the x label
    below = offset_copy(ax.transAxes, fig=fig, y=-0.5, units="inches")
    # keys long enough to show each moment's whole dash pattern
    ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=below, ncol=5,
              fontsize=8, frameon=False, handlelength=3.2)
    verdict = f" — checker: {report.verdict}" if report is not None else ""
    ax.set_title((title or "the run") + verdict)
    describe(fig, summary(history, report, title=(title or "the run") + verdict))
    fig.tight_layout()
    return fig


def _flagged(report: Report | None) -> dict[str, set[tuple[str, int | None]]]:
    """Per lane, the claims (job, token) some finding of ``report`` names."""
    flagged: dict[str, set[tuple[str, int | None]]] = defaultdict(set)
    if report is not None:
        for f in report.findings:
            for o in f.ops:
                if o.op == "claim":
                    flagged[o.worker].add((o.job or "", o.token))
    return flagged


def summary(history: History, report: Report | None = None, *, title: str = "the run") -> str:
    """The timeline in words, for a reader who cannot see it: lanes, claims by outcome, findings, faults."""
    lanes = [w for w in history.workers() if w not in ("producer", "nemesis")]
    per = bars(history)
    counts = defaultdict(int)
    for spans in per.values():
        for _, _, outcome, _, _ in spans:
            counts[outcome] += 1
    claims = sum(counts.values())
    ended = ", ".join(f"{counts[k]} {f.label}" for k, f in OUTCOMES.items() if counts[k])
    out = [f"Timeline: {title}.",
           f"{len(lanes)} lane{'s' if len(lanes) != 1 else ''} ({', '.join(lanes)}), one bar per claim: "
           f"{claims} claim{'s' if claims != 1 else ''}" + (f" ({ended})." if ended else ".")]
    flagged = _flagged(report)
    named = {w: len(flagged[w]) for w in lanes if flagged[w]}
    if named:
        out.append(f"{sum(named.values())} claims named by the checker's findings ("
                   + ", ".join(f"{w} {n}" for w, n in named.items()) + ").")
    faults = defaultdict(int)
    for o in history.notes():
        if o.op in ("freeze", *MARKS, *MOMENTS):
            faults[o.op] += 1
    reaps = sum(1 for o in history.calls("reap", "stalled") if o.released())
    if reaps:
        faults["reap"] += reaps
    names = {**{k: m.label for k, m in MARKS.items()}, **{k: m.label for k, m in MOMENTS.items()},
             "freeze": "frozen", "reap": REAP.label}
    if faults:
        out.append("Marked: " + ", ".join(f"{names[k]} ×{n}" for k, n in faults.items()) + ".")
    return " ".join(out)
