"""The timeline stays legible where findings overlap (issue 22, item 4).

A real naive-claim race (8 threads) gives hundreds of findings on a quarter of a
second. Each claim a finding names is drawn as red hatching over its bar (the
bar's colour and its outcome's own hatch show through, and hatching does not
thicken where bars overlap) plus a thin rule under it, never a thick outline;
the lanes' ``⚠ N`` count the claims named, and the legend says what ``⚠ N``
means. Every outcome is told by its hatch as well as its colour, and the
figure says all this in words (its text alternative).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from echomq_teach.lab import races  # noqa: E402
from echomq_teach.lab.figures import description  # noqa: E402
from echomq_teach.lab.history import History  # noqa: E402
from echomq_teach.lab.styles import FINDING, OUTCOMES  # noqa: E402
from echomq_teach.lab.timeline import FLAGGED_LABEL, bars, draw  # noqa: E402


def test_overlapping_findings_are_hatched_counted_and_explained(conn, tmp_path, queue):
    races.produce(conn, queue, tmp_path, 150)
    races.race(conn, queue, tmp_path, claim=races.naive_claim, threads=8)
    report = races.judge(conn, queue, tmp_path)
    assert not report.valid and report.double_handouts, report.summary()
    history = History.read(tmp_path)
    fig = draw(history, report, title="naive")
    try:
        ax = fig.axes[0]
        named: dict[str, set] = {}
        for f in report.findings:
            for o in f.ops:
                if o.op == "claim":
                    named.setdefault(o.worker, set()).add((o.job or "", o.token))
        labels = [t.get_text() for t in ax.get_yticklabels()]
        lanes = [w for w in history.workers() if w not in ("producer", "nemesis")]
        # each lane's ⚠ N is the number of its claims some finding names (a claim named twice counts once)
        assert labels == [w + (f"  ⚠ {len(named[w])}" if named.get(w) else "") for w in lanes]
        assert any("⚠" in t for t in labels)

        red = to_rgba(FINDING.colour)
        cols = [c for c in ax.collections if isinstance(c, PolyCollection)]
        hatched = [c for c in cols if c.get_hatch() == FINDING.hatch]
        # one hatched layer per lane with findings, transparent, no outline: the outcome colour shows through
        assert len(hatched) == sum(1 for w in lanes if named.get(w))
        for c in hatched:
            assert all(rgba[3] == 0 for rgba in c.get_facecolor())  # no fill ("none": empty or transparent)
            assert all(w == 0 for w in c.get_linewidth())
        # each outcome's bars carry its own hatch (the stale ones here), never an outline
        orange = to_rgba(OUTCOMES["stale"].colour)
        stale = [c for c in cols if len(c.get_facecolor()) and tuple(c.get_facecolor()[0]) == orange]
        assert stale and all(c.get_hatch() == OUTCOMES["stale"].hatch and not any(c.get_linewidth()) for c in stale)
        # no unfilled outlines (a thick red outline per claim made solid blocks where claims overlap)
        for c in cols:
            if all(rgba[3] == 0 for rgba in c.get_facecolor()):
                assert all(w == 0 for w in c.get_linewidth()), "an outline drawn around a bar"
        # the rule under each named claim: thin, in the findings' colour
        rules = [c for c in cols if not c.get_hatch() and len(c.get_facecolor())
                 and tuple(c.get_facecolor()[0]) == red]
        assert len(rules) == len(hatched)
        # as many hatched spans as claims named that the timeline draws as bars
        drawn = {w: {(c.job or "", c.token) for _, _, _, c, _ in spans} for w, spans in bars(history).items()}
        total = sum(len(named.get(w, set()) & drawn.get(w, set())) for w in lanes)
        assert sum(len(c.get_paths()) for c in hatched) == total > 0

        texts = [t.get_text() for t in ax.get_legend().get_texts()]
        assert FLAGGED_LABEL in texts and "⚠ N" in FLAGGED_LABEL
        # the same in words: the outcomes counted, the claims named per lane
        said = description(fig)
        assert said.startswith("Timeline: naive — checker: invalid. 8 lanes") and "stale, refused" in said
        assert f"{sum(len(v) for v in named.values())} claims named by the checker's findings" in said
    finally:
        plt.close(fig)


def test_a_run_without_findings_has_no_marks(conn, tmp_path, queue):
    races.produce(conn, queue, tmp_path, 40)
    races.race(conn, queue, tmp_path, threads=4)
    report = races.judge(conn, queue, tmp_path)
    assert report.valid, report.summary()
    fig = draw(History.read(tmp_path), report)
    try:
        ax = fig.axes[0]
        assert not [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_hatch() == FINDING.hatch]
        assert not any("⚠" in t.get_text() for t in ax.get_yticklabels())
    finally:
        plt.close(fig)
