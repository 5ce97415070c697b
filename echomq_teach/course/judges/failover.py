"""09.2 · the learner's WAIT, judged: one failover per seed on a cluster of the judge's own (never the learner's
notebook cluster), each seed drawing the shard hit, how long the replica lags and when the kill comes."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...lab.failover import Failover, failover
from ...nodes.cluster import start_cluster
from ..registry import Findings
from .frame import draw_seeds, over_seeds


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
    drawn = draw_seeds(seeds, FAILOVER.SEEDS)
    cluster = start_cluster(native=True)
    try:
        # one failover at a time: two primaries of three killed at once leave no majority to promote a replica
        found = {s: Findings() for s in drawn}
        for i, s in enumerate(drawn):
            sched = FAILOVER.schedule(s, cluster.shards, longest=i == 0)
            _one_seed(cluster, wait, sched, found[s])  # type: ignore[arg-type]
    finally:
        cluster.stop()
    over_seeds(found, f)
