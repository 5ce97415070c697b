"""Notebook 09 · the cluster: predict a failover's verdicts; the WAIT setting that keeps what it would lose.

09.1 is a prediction: what the checker says of a queue without WAIT and of one
with ``WAIT 1 2000`` when their primary dies with its replica held back, and
how many of the window's enqueues each producer was told were stored. Its run
is a failover on a cluster the check starts.

09.2 is a build judged on a cluster of the judge's own (never the learner's
notebook cluster): the learner chooses ``wait``, the ``(numreplicas,
timeout_ms)`` every process of the run sends ``WAIT`` with after each write,
and the judge runs one failover per seed (``lab.failover``: the replica held
back, a burst of enqueues, the primary killed by SIGKILL, the replica
promoted), each seed drawing how long the replica lags, when the kill comes
and which shard it hits. It passes only when, on every seed, the checker says
valid and the run drained: no write the queue acknowledged was lost.

This module is the one place the course imports ``lab.failover`` from.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...lab.failover import Failover, failover
from ...nodes.cluster import start_cluster
from ..registry import Findings, judged, prediction


@dataclass(frozen=True)
class Schedule:
    """One seed's failover: the shard hit, how long the replica lags before the kill, when the hold comes."""

    seed: int
    shard: int
    window_s: float
    start_after: float

    @property
    def hold_ms(self) -> int:
        # the hold outlasts the kill: the replica applies nothing of the window before its primary dies
        return int(self.window_s * 1000) + 1_000

    def __str__(self) -> str:
        return (f"seed {self.seed} (shard {self.shard}, the replica held back {self.window_s:.2f} s before the "
                f"primary's kill, {self.start_after:.0%} of the jobs settled)")


class FAILOVER:
    """The judged run of 09.1, per seed: a small run, a burst in the window, one primary killed."""

    JOBS = 60
    WORKERS = 2
    BURST = 10
    SEEDS = 3
    #: the longest the replica lags before the kill (the exercise tells the learner this bound); every
    #: judged run has one seed that lags that long, so a timeout inside it fails whatever the draw
    MAX_WINDOW_S = 2.5
    TIMEOUT_S = 40.0

    @staticmethod
    def schedule(seed: int, shards: int = 3, longest: bool = False) -> Schedule:
        rng = random.Random(seed)
        window = FAILOVER.MAX_WINDOW_S if longest else round(rng.uniform(0.3, FAILOVER.MAX_WINDOW_S), 2)
        return Schedule(seed, seed % shards, window, round(rng.uniform(0.1, 0.4), 2))


def _wait_of(answer: Any, f: Findings) -> tuple[int, int] | None | bool:
    """The learner's ``wait``, or False (with a finding) when it is not one the judge can run."""
    if not (isinstance(answer, Mapping) and set(answer) == {"wait"}):
        f.expect(False, 'return a dict with exactly the key "wait": None, or (numreplicas, timeout_ms); '
                 f"got {answer!r}.")
        return False
    wait = answer["wait"]
    if wait is None:
        return None
    if isinstance(wait, list):
        wait = tuple(wait)  # [1, 5000] means what (1, 5000) means
    ok = isinstance(wait, tuple) and len(wait) == 2 and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in wait)
    if not f.expect(ok, f"wait must be None or (numreplicas, timeout_ms), two whole numbers >= 0; got {wait!r}."):
        return False
    if not f.expect(wait[0] <= 1, f"WAIT {wait[0]} {wait[1]} asks for {wait[0]} replicas, and each shard of this "
                    "cluster has one: no write could ever be confirmed in full. Each would wait its whole timeout, "
                    "then be answered by the primary alone."):
        return False
    return wait


def _counterexample(fo: Failover) -> str:
    """The checker's first finding, and which of the window's writes it names."""
    r = fo.report
    first = r.findings[0]
    shown = [o for o in first.ops if o.at != "note"][:6]
    t0 = min((o.sent for o in first.ops), default=0.0)
    inside = " (a call about it was answered inside the window the replica held back)" if fo.in_window(first) else ""
    return "\n".join([f"{first.kind.replace('_', ' ')}: {first.job} — {first.detail}{inside}",
                      *[f"    {o.describe(t0)}" for o in shown]])


def _one_seed(cluster: Any, wait: tuple[int, int] | None, sched: Schedule, f: Findings) -> bool:
    queue = cluster.queue_on(sched.shard, f"judge{sched.seed}")
    out = failover(cluster, {queue: wait}, jobs_n=FAILOVER.JOBS, workers=FAILOVER.WORKERS, hold_ms=sched.hold_ms,
                   window_s=sched.window_s, burst=FAILOVER.BURST, start_after=sched.start_after,
                   timeout=FAILOVER.TIMEOUT_S)
    fo = out[queue]
    r = fo.report
    if not r.valid:
        counts = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in r.counts().items() if n)
        short = (f" {fo.wait_short} writes were answered by a WAIT that timed out: the primary alone had them."
                 if fo.wait_short else "")
        f.expect(False, f"{sched}: the checker says invalid ({counts}).{short} Its counterexample:\n"
                 + _counterexample(fo))
        return False
    # valid means no write the queue acknowledged was lost; the run must also have finished its jobs
    return f.expect(fo.drained and not r.unfinished, f"{sched}: {len(r.unfinished)} jobs were not done within "
                    f"{FAILOVER.TIMEOUT_S:.0f} s of the promotion.")


def judge_failover(answer: Any, f: Findings, seeds: Iterable[int] | None = None) -> None:
    """Judge a ``wait`` setting (09.2) on a cluster of the judge's own, one failover per seed it draws."""
    wait = _wait_of(answer, f)
    if wait is False:
        return
    seeds = list(seeds) if seeds is not None else [secrets.randbelow(1_000_000) for _ in range(FAILOVER.SEEDS)]
    cluster = start_cluster(native=True)
    try:
        # one failover at a time: two primaries of three killed at once leave no majority to promote a replica
        found = {s: Findings() for s in seeds}
        for i, s in enumerate(seeds):
            sched = FAILOVER.schedule(s, cluster.shards, longest=i == 0)
            _one_seed(cluster, wait, sched, found[s])  # type: ignore[arg-type]
    finally:
        cluster.stop()
    failed = [s for s in seeds if found[s].items]
    if failed:
        f.items.extend(found[failed[0]].items)
        f.items.append(f"failed on {len(failed)} of {len(seeds)} seeds ({', '.join(map(str, failed))}).")


@judged(
    "09.2",
    "Keep what the failover would lose",
    "Hint: WAIT confirms a write only once numreplicas replicas have it; each shard here has one replica. A "
    "WAIT that times out answers anyway, and that write is the primary's alone: the timeout must outlast the "
    "longest the replica can lag (here up to 2.5 s) by a good margin, or be 0 (wait as long as it takes).",
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
