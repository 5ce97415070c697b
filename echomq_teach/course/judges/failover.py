"""09.2 · the learner's design for a short WAIT, judged: probes on a replica that confirms nothing, then one
failover per seed, on a cluster of the judge's own (never the learner's notebook cluster).

The spec is a design, not a parameter: the judge fixes ``WAIT 1 200`` for every process, and the learner writes
what a worker does with WAIT's answer when fewer replicas confirmed a write than it asked
(``cluster_connector.ShortWait``): tell the caller the primary's reply, send the write again, or raise
``Unconfirmed`` (the caller learns nothing: an unknown outcome). The probes are deterministic, each on a shard
whose replica is held (``CLIENT PAUSE … WRITE``: it applies nothing, so WAIT confirms 0 of 1): an enqueue
whose caller must not be told "stored", must not be left waiting for ever (a shard without a replica never
confirms), and a claim that must not be sent twice (a second claim hands out a second job, which a settle's
token or an enqueue's id would have refused). Then each seed draws the shard, how long the replica lags
before the primary's SIGKILL and when the hold comes, and the checker judges the run against what the
promoted replica holds.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ... import jobs, keyspace
from ...cluster_connector import Unconfirmed
from ...lab.failover import Failover, failover, hold_replication
from ...lab.worker_process import handler_source
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
    """The judged runs of 09.2 (and the run of 09.1's prediction), per seed: a small run, a burst in the window,
    one primary killed."""

    JOBS = 60
    WORKERS = 2
    BURST = 10
    SEEDS = 2
    #: every process of a judged run sends WAIT 1 200 after each write: a window's writes come back short
    WAIT = (1, 200)
    #: the replica lags 0.4 … MAX_WINDOW_S before the kill: longer than WAIT's timeout, every time
    MAX_WINDOW_S = 1.2
    TIMEOUT_S = 40.0
    #: how long a probe's write may take while its replica confirms nothing (several of WAIT's timeouts)
    PROBE_S = 2.0

    @staticmethod
    def schedule(seed: int, shards: int = 3, longest: bool = False) -> Schedule:
        rng = random.Random(seed)
        window = FAILOVER.MAX_WINDOW_S if longest else round(rng.uniform(0.4, FAILOVER.MAX_WINDOW_S), 2)
        return Schedule(seed, seed % shards, window, round(rng.uniform(0.1, 0.4), 2))


def _design_of(answer: Any, f: Findings) -> Callable[..., Any] | None:
    """The learner's ``on_short_wait``, or None (with a finding) when it is none the workers can import."""
    if not callable(answer) or isinstance(answer, type):
        f.expect(False, "return your design, a function on_short_wait(short) (the function itself, not a call of "
                 f"it); got {answer!r}.")
        return None
    try:
        handler_source(answer)
    except Exception as exc:  # noqa: BLE001 - BadInput naming why no worker can import it
        f.expect(False, f"{exc}.")
        return None
    return answer


def _bounded(call: Callable[[], Any], seconds: float) -> tuple[str, Any, threading.Thread]:
    """``call()`` in a thread: ("returned", value), ("raised", the exception) or ("running", None) after ``seconds``."""
    out: list[tuple[str, Any]] = []

    def run() -> None:
        try:
            out.append(("returned", call()))
        except BaseException as exc:  # noqa: BLE001 - what the design made of the write: judged by the caller
            out.append(("raised", exc))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    return (*out[0], t) if out else ("running", None, t)


def _probe(cluster: Any, design: Callable[..., Any], f: Findings) -> bool:
    """The design on a shard whose replica confirms nothing: an enqueue, then a claim. False with a finding."""
    queue = cluster.queue_on(0, "judge-probe")
    waited = cluster.connector(wait=FAILOVER.WAIT)
    waited.on_short_wait = design
    sure = cluster.connector(wait=(1, 5_000))  # the probe's own jobs, confirmed by the replica before the hold
    replica = cluster.replica_of(cluster.primary_of(queue))
    pending = keyspace.queue_key(queue, "pending")
    said = ("an enqueue whose WAIT 1 200 confirmed 0 of 1 replicas (the replica was held: it applied nothing, as a "
            "replica that is down or behind)")
    try:
        jobs.drop(sure, queue)
        for i in range(4):
            jobs.enqueue(sure, queue, f"probe job {i}")
        held = jobs.claim(sure, queue, 30_000)  # a job to settle while the replica confirms nothing
        assert held is not None
        hold_replication(replica, int(FAILOVER.PROBE_S * 3_000) + 2_000)
        how, value, thread = _bounded(lambda: jobs.enqueue(waited, queue, "the probe's write"), FAILOVER.PROBE_S)
        if how == "running":
            f.expect(False, f"{said}: your design was still waiting {FAILOVER.PROBE_S:.0f} s later. A shard whose "
                     "replica is down never confirms: a design that waits until it does (as WAIT 1 0 would) holds "
                     "its writer for ever, and every writer behind it. Give up: raise Unconfirmed.")
            return False
        if how == "returned":
            f.expect(False, f"{said}: your design told the producer 'stored' (it answered {value!r}). The job is the "
                     "primary's alone: a failover now loses a job its producer was told is stored. Raise "
                     "Unconfirmed: the producer then learns nothing, an unknown outcome it can send again.")
            return False
        if not isinstance(value, Unconfirmed):
            f.expect(False, f"{said}: your design raised {type(value).__name__}: {value}. Raise Unconfirmed "
                     "(echomq_teach.cluster_connector), the one error every caller reads as an unknown outcome.")
            return False
        how, value, thread = _bounded(lambda: jobs.complete(waited, queue, held.id, held.attempts, "done"),
                                      FAILOVER.PROBE_S)
        said = "a completion whose WAIT 1 200 confirmed 0 of 1 replicas"
        if not f.expect(how == "raised" and isinstance(value, Unconfirmed),
                        f"{said}: your design told the worker " + (f"{value!r}" if how == "returned" else
                                                                  f"nothing it could read ({how})")
                        + ". The settle is the primary's alone: a failover brings the job back in active, its lease "
                        "lapses, and it runs and settles a second time. Raise Unconfirmed."):
            return False
        before = int(sure.call("ZCARD", pending))
        how, value, thread = _bounded(lambda: jobs.claim(waited, queue, 30_000), FAILOVER.PROBE_S)
        thread.join(FAILOVER.PROBE_S * 2)
        taken = before - int(sure.call("ZCARD", pending))
        said = "a claim whose WAIT 1 200 confirmed 0 of 1 replicas"
        if not f.expect(taken <= 1, f"{said}: your design sent it again, and the second claim handed out another "
                        f"job (one claim took {taken} jobs out of pending); no one holds that job until its lease "
                        "lapses. A settle sent again is refused by its token, an enqueue by its id; a claim is refused "
                        "by nothing."):
            return False
        return f.expect(how == "raised" and isinstance(value, Unconfirmed),
                        f"{said}: your design told the worker it holds the job ({value!r}). The claim is the "
                        "primary's alone: a failover puts the job back in pending, and a second worker runs it "
                        "beside the first. Raise Unconfirmed: the worker then runs nothing, and the lease lapses.")
    finally:
        c = replica.client()
        try:
            c.execute_command("CLIENT", "UNPAUSE")
        finally:
            c.close()
        waited.close()
        sure.close()


def _counterexample(fo: Failover) -> str:
    """The checker's first finding, and which of the window's writes it names."""
    r = fo.report
    first = r.findings[0]
    shown = [o for o in first.ops if o.at != "note"][:6]
    t0 = min((o.sent for o in first.ops), default=0.0)
    inside = " (a call about it was answered inside the window the replica held back)" if fo.in_window(first) else ""
    return "\n".join([f"{first.kind.replace('_', ' ')}: {first.job} — {first.detail}{inside}",
                      *[f"    {o.describe(t0)}" for o in shown]])


def _one_seed(cluster: Any, design: Callable[..., Any] | None, sched: Schedule, f: Findings,
              wait: tuple[int, int] | None = FAILOVER.WAIT) -> bool:
    queue = cluster.queue_on(sched.shard, f"judge{sched.seed}")
    out = failover(cluster, {queue: wait}, jobs_n=FAILOVER.JOBS, workers=FAILOVER.WORKERS, hold_ms=sched.hold_ms,
                   window_s=sched.window_s, burst=FAILOVER.BURST, start_after=sched.start_after,
                   timeout=FAILOVER.TIMEOUT_S, on_short_wait=design)
    fo = out[queue]
    r = fo.report
    if not r.valid:
        counts = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in r.counts().items() if n)
        short = (f" {fo.wait_short} writes came back from a WAIT that timed out: the primary alone had them."
                 if fo.wait_short else "")
        f.expect(False, f"{sched}: the checker says invalid ({counts}).{short} Its counterexample:\n"
                 + _counterexample(fo))
        return False
    # valid means no write the queue acknowledged was lost; the run must also have finished its jobs
    return f.expect(fo.drained and not r.unfinished, f"{sched}: {len(r.unfinished)} jobs were not done within "
                    f"{FAILOVER.TIMEOUT_S:.0f} s of the promotion.")


def judge_failover(answer: Any, f: Findings, seeds: Iterable[int] | None = None) -> None:
    """Judge a design for short WAITs (09.2) on a cluster of the judge's own: the probes, then one failover per
    seed it draws."""
    design = _design_of(answer, f)
    if design is None:
        return
    drawn = draw_seeds(seeds, FAILOVER.SEEDS)
    cluster = start_cluster(native=True)
    try:
        if not _probe(cluster, design, f):
            return
        # one failover at a time: two primaries of three killed at once leave no majority to promote a replica
        found = {s: Findings() for s in drawn}
        for i, s in enumerate(drawn):
            _one_seed(cluster, design, FAILOVER.schedule(s, cluster.shards, longest=i == 0), found[s])
    finally:
        cluster.stop()
    over_seeds(found, f)
