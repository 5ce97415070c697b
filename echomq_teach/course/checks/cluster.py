"""Notebook 09 · the cluster: predict a failover's verdicts; a design for a short WAIT that keeps what it would lose.

09.1 is a prediction: what the checker says of a queue without WAIT and of one
with ``WAIT 1 2000`` when their primary dies with its replica held back, and
how many of the window's enqueues each producer was told were stored. Its run
is a failover on a cluster the check starts.

09.2 is a build judged on a cluster of the judge's own (never the learner's
notebook cluster): the learner designs what a worker does when WAIT confirms a
write short (``course/judges/failover.py``: probes on a held replica, then one
failover per seed).

The course imports ``lab.failover`` here (09.1's run) and in 09.2's judge only.
"""

from __future__ import annotations

from typing import Any

from ...lab.failover import Failover, failover
from ...nodes.cluster import start_cluster
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
FAILOVER_FACTS = (
    "no WAIT: verdict",
    "no WAIT: burst enqueues answered",
    "WAIT 1 2000: verdict",
    "WAIT 1 2000: burst enqueues answered",
)


def _failover_shape(answer: Any, args: tuple[Any, ...]) -> str | None:
    if not isinstance(answer, dict) or set(answer) != set(FAILOVER_FACTS):
        return f"return a dict with exactly the keys {list(FAILOVER_FACTS)}; got {answer!r}."
    bad = [k for k in FAILOVER_FACTS if k.endswith("verdict") and answer[k] not in ("valid", "invalid")]
    bad += [k for k in FAILOVER_FACTS if k.endswith("answered") and (
        isinstance(answer[k], bool) or not isinstance(answer[k], int) or not 0 <= answer[k] <= PREDICT_BURST)]
    return (f'a verdict is "valid" or "invalid", a count a whole number 0 … {PREDICT_BURST}; {bad} are not.'
            if bad else None)


def _answered_in_window(fo: Failover) -> int:
    """The producer's enqueues sent inside the window that were answered (the producer was told: stored)."""
    lo = fo.window[0]
    return sum(1 for o in fo.history.calls("enqueue") if o.worker == "producer" and o.sent >= lo
               and o.answered is not None and o.ok)


@prediction(
    "09.1",
    "Predict the failover",
    "Hint: without WAIT, the primary answers each enqueue at once, whatever its replica holds. With WAIT, each "
    "write waits for a replica that is applying nothing, until the kill cuts the link. The checker counts an "
    "answered write that is gone; a write nobody was answered about is an unknown outcome, never a loss.",
    solution="09_1_predict_the_failover.py",
    shape=_failover_shape,
    explain="the primary answered the burst's enqueues itself, and its replica, held back, never applied them: "
    "the new primary lacks writes the producer was told were stored (lost, or a settle gone and the job run "
    "again), so the checker says invalid. With WAIT 1 2000 each of those writes waited for the replica, which "
    "confirmed none; the kill cut the links first, so no enqueue of the window was answered, and nothing "
    "answered was lost: valid.",
)
def _run_predict_the_failover(conn: Any, queue: str, args: tuple[Any, ...]) -> dict[str, Any]:
    # the run on a cluster of the check's own: the learner's cluster keeps its primaries
    cluster = start_cluster(native=True)
    try:
        plain_q, waited_q = cluster.queue_on(1, f"{queue}-plain"), cluster.queue_on(1, f"{queue}-waited")
        runs = failover(cluster, {plain_q: None, waited_q: (1, 2000)}, jobs_n=FAILOVER.JOBS,
                        workers=FAILOVER.WORKERS, hold_ms=1_500, window_s=0.4, burst=PREDICT_BURST,
                        timeout=FAILOVER.TIMEOUT_S)
    finally:
        cluster.stop()
    plain, waited = runs[plain_q], runs[waited_q]
    return {
        "no WAIT: verdict": plain.report.verdict,
        "no WAIT: burst enqueues answered": _answered_in_window(plain),
        "WAIT 1 2000: verdict": waited.report.verdict,
        "WAIT 1 2000: burst enqueues answered": _answered_in_window(waited),
    }
