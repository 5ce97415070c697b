"""Notebook 09 · the cluster: predict a failover's verdicts; a design for a short WAIT that keeps what it would lose.

09.1 is a prediction: what the checker says of a queue with ``WAIT 1 100`` and
of one with ``WAIT 1 2000`` when their replica is held back, then let go before
their primary dies, and how many of the window's enqueues each producer was
told were stored. Its run is a failover on a cluster the check starts, a case
the notebook does not run (its own hold outlasts the kill).

09.2 is a build judged on a cluster of the judge's own (never the learner's
notebook cluster): the learner designs what a worker does when WAIT confirms a
write short (``course/judges/failover.py``: probes on a held replica, then one
failover per seed).

The course imports ``lab.failover`` here (09.1's run) and in 09.2's judge only.
"""

from __future__ import annotations

from typing import Any

from ...lab.failover import Failover, failover_after_the_hold
from ...nodes.cluster import start_cluster
from .. import forms
from ..judges.failover import FAILOVER, judge_failover
from ..registry import Findings, judged, prediction


@judged(
    "09.2",
    "Keep what the failover would lose",
    "Hint: take the kinds of write one at a time. If its caller hears 'done' and the primary then dies with its "
    "replica behind, what does the new primary hold, and what runs next? If the very same write reaches the node "
    "a second time, what keeps the copy from applying (03's fence, an id already taken, nothing left to do), and "
    "for which write does nothing? And a replica may be down for good or only a moment behind: one short WAIT "
    "does not tell you which.",
    solution="09_2_keep_what_failover_loses.py",
)
def _judge_keep_what_failover_loses(answer: Any, f: Findings) -> None:
    judge_failover(answer, f)


# -- 09.1 · predict the failover ------------------------------------------------------------------------------
PREDICT_BURST = 20
#: the replica held for HOLD_MS, then let go; the primary killed WINDOW_S after the hold began. The notebook's
#: run keeps the hold past the kill; this one does not, and no cell runs it
HOLD_MS, WINDOW_S = 250, 0.7
SHORT, LONG = (1, 100), (1, 2000)
SHORT_VERDICT, SHORT_ANSWERED, SHORT_WAITS, LONG_VERDICT, LONG_ANSWERED = (
    "WAIT 1 100: verdict",
    "WAIT 1 100: burst enqueues answered",
    "WAIT 1 100: writes answered short",
    "WAIT 1 2000: verdict",
    "WAIT 1 2000: burst enqueues answered",
)
VERDICT = forms.words("valid", "invalid")
ANSWERED = forms.Count(0, PREDICT_BURST)


def _answered_in_window(fo: Failover) -> int:
    """The producer's enqueues sent inside the window that were answered (the producer was told: stored)."""
    lo = fo.window[0]
    return sum(1 for o in fo.history.calls("enqueue") if o.worker == "producer" and o.sent >= lo
               and o.answered is not None and o.ok)


@prediction(
    "09.1",
    "Predict the failover",
    "Hint: follow one write of the burst on each queue: when is its caller answered, and is it then on the "
    "replica, or only received and not yet applied? Then ask what the replica has applied by the moment of the "
    "kill. The checker counts an answered write that the new primary lacks; nothing else is a loss.",
    solution="09_1_predict_the_failover.py",
    form=forms.record({SHORT_VERDICT: VERDICT, SHORT_ANSWERED: ANSWERED, SHORT_WAITS: forms.words("none", "some"),
                       LONG_VERDICT: VERDICT, LONG_ANSWERED: ANSWERED}),
    explain="while the replica is held, WAIT 1 100 times out: each write of the window is answered short, by the "
    "primary alone, and WAIT 1 2000 holds its writes until the hold ends and the replica confirms them. Either "
    "way the producer is told about the whole burst. But the replica received every write while it was held, and "
    "applies them all once the hold ends, before the kill: the new primary lacks nothing anyone was told, so "
    "both runs are valid. A short WAIT confirms nothing; it loses a write only when the replica never applies "
    "it before it takes over.",
)
def _run_predict_the_failover(conn: Any, queue: str) -> dict[str, Any]:
    # the run on a cluster of the check's own: the learner's cluster keeps its primaries
    cluster = start_cluster(native=True)
    try:
        short_q, long_q = cluster.queue_on(1, f"{queue}-short"), cluster.queue_on(1, f"{queue}-long")
        runs = failover_after_the_hold(cluster, {short_q: SHORT, long_q: LONG}, hold_ms=HOLD_MS, window_s=WINDOW_S,
                                       jobs_n=FAILOVER.JOBS, workers=FAILOVER.WORKERS, burst=PREDICT_BURST,
                                       timeout=FAILOVER.TIMEOUT_S)
    finally:
        cluster.stop()
    short, long_ = runs[short_q], runs[long_q]
    return {
        SHORT_VERDICT: short.report.verdict,
        SHORT_ANSWERED: _answered_in_window(short),
        SHORT_WAITS: "some" if short.wait_short else "none",
        LONG_VERDICT: long_.report.verdict,
        LONG_ANSWERED: _answered_in_window(long_),
    }
