"""A failover under the checker: a queue's primary killed mid-run, its replica promoted, the run judged.

Worker processes (``run.Run``) drain one queue of a ``LocalCluster`` with
the native stall sweep as their recovery leg, every call recorded; the
queue's primary is killed by SIGKILL in the middle; its replica is promoted;
the killed node comes back as the new primary's replica; the run drains; and
the history checker (``echomq_teach.lab.checker``) reads the history against
what the new primary holds.

Replication is asynchronous: the primary answers a write before its replica
has it. On loopback the replica is a fraction of a millisecond behind, so a
kill at a random instant rarely falls inside that gap. ``hold_ms`` widens it
on purpose: ``CLIENT PAUSE hold_ms WRITE`` on the replica stops it applying
its primary's stream (the data arrives and waits, unapplied), and the kill
comes ``window_s`` later, while the workers go on. What the replica never
applied is gone with the old primary: the checker finds it as claims handed
out twice, settles the stream lacks (unrecorded, settled twice), enqueues
lost. Every write in that window is recorded, so the report can name which
of its findings fall inside it.

``wait=(1, timeout_ms)`` makes every process of the run send ``WAIT`` after
each write (``cluster_connector``): a write is answered only once the
replica has it, or once the timeout passes (a *short* WAIT, counted). A
timeout longer than the window keeps every write of the window waiting
until the kill cuts its link: its caller never hears an answer, the checker
counts an unknown outcome, and no acknowledged write is lost.

The run's handler (``handlers.stalls``) completes each job with the number of
stalls its row had counted, so the completions stream shows the lease_epoch
rule: the leases the dead primary granted carry its run_id, and the new
primary's stall sweep puts each back once it lapses, uncounted.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .. import completions, jobs, keyspace
from ..cluster_connector import check_wait
from ..connector import LINK_ERRORS
from ..errors import BadInput
from .checker import Finding, Report
from .history import History
from .run import Run

#: a finding counts as the window's when one of its job's calls was answered within this of the window
WINDOW_SLACK_MS = 5.0


@dataclass
class Failover:
    """What one queue's run went through in a failover, and what the checker said of it."""

    queue: str
    wait: tuple[int, int] | None
    hold_ms: int | None
    report: Report
    history: History = field(repr=False)
    #: the node's ms: when replication was held (None: not held), when the kill was sent, when it was done
    held_at: float | None
    kill_sent: float
    killed_at: float
    promotion_s: float
    old_run_id: str
    new_run_id: str
    #: what the replica held for this queue at the kill: each job in active with its row's lease_epoch
    inherited: dict[str, str]
    #: per job, the stall counts its completions reported (``handlers.stalls``), in stream order
    stalls: dict[str, list[int]]
    #: ids a stall sweep answered after the kill as put back, and as buried
    requeued_after: list[str]
    dead_after: list[str]
    #: writes acknowledged by fewer replicas than WAIT asked, over the workers and the producer
    wait_short: int
    drained: bool

    @property
    def window(self) -> tuple[float, float]:
        """From the hold (or the kill, when nothing was held) to the moment the old primary was dead."""
        return (self.held_at if self.held_at is not None else self.kill_sent, self.killed_at)

    def old_leases(self) -> list[str]:
        """Jobs a stall sweep put back after the kill whose last claim the dead primary had answered."""
        claimed_before = {o.job for o in self.history.calls("claim")
                          if o.ok and o.job and o.answered is not None and o.answered < self.kill_sent}
        return sorted(set(self.requeued_after) & claimed_before)

    def uncounted(self) -> list[str]:
        """The old leases whose completion reported no counted stall (the lease_epoch rule at work)."""
        return [j for j in self.old_leases() if self.stalls.get(j) and self.stalls[j][-1] == 0]

    def in_window(self, finding: Finding) -> bool:
        """True when a call about the finding's job was answered inside the window (the replica held back)."""
        lo, hi = self.window
        ops = [o for o in self.history.calls() if o.job == finding.job or finding.job in o.released()]
        return any(o.answered is not None and lo - WINDOW_SLACK_MS <= o.answered <= hi + WINDOW_SLACK_MS
                   for o in ops)

    def rate(self) -> float:
        """Jobs completed per second from the first claim to the hold (or the kill): this queue's pace."""
        hi = self.window[0]
        claims = [o.answered for o in self.history.calls("claim") if o.ok and o.job and o.answered is not None]
        lo = min(claims, default=hi)
        done = sum(1 for o in self.history.calls("complete")
                   if o.ok and o.reply == "ok" and o.answered is not None and lo <= o.answered <= hi)
        return done / ((hi - lo) / 1000) if hi > lo else 0.0

    def figures(self) -> dict[str, Any]:
        """The run in numbers, for a table: findings, duplicates, the lease_epoch rule, WAIT."""
        r = self.report
        return {
            "wait": "no" if self.wait is None else f"WAIT {self.wait[0]} {self.wait[1]}",
            "held": f"{self.hold_ms} ms" if self.hold_ms else "no",
            "verdict": r.verdict,
            **r.counts(),
            "ran twice+": sum(1 for n in r.handler_runs.values() if n > 1),
            "unknown outcomes": sum(r.indeterminate.values()),
            "old leases": len(self.old_leases()),
            "uncounted": len(self.uncounted()),
            "wait short": self.wait_short,
            "jobs/s before": round(self.rate()),
        }


def hold_replication(replica: Any, ms: int) -> None:
    """``CLIENT PAUSE ms WRITE`` on a replica: it goes on receiving its primary's stream, applying none of it."""
    c = replica.client()
    try:
        c.execute_command("CLIENT", "PAUSE", ms, "WRITE")
    finally:
        c.close()


def held_leases(replica: Any, queue: str) -> dict[str, str]:
    """What ``replica`` holds in ``queue``'s active set, each job with its row's lease_epoch (READONLY reads)."""
    c = replica.client()
    try:
        c.execute_command("READONLY")  # a replica answers reads of its own primary's slots
        active = c.zrange(keyspace.queue_key(queue, "active"), 0, -1)
        return {j: c.hget(keyspace.job_key(queue, j), "lease_epoch") or "" for j in active}
    finally:
        c.close()


def failover(
    cluster: Any,
    queues: dict[str, tuple[int, int] | None],
    *,
    jobs_n: int = 300,
    workers: int = 3,
    hold_ms: int | None = None,
    window_s: float = 0.4,
    burst: int = 20,
    work_ms: int = 10,
    lease_ms: int = 1_500,
    start_after: float = 0.15,
    timeout: float = 60.0,
    on_short_wait: Any = None,
) -> dict[str, Failover]:
    """One failover under one run per queue: ``{queue: wait}``, every queue on the same shard (each dropped first).

    Each queue's workers (``wait`` for that queue's processes: ``None`` or
    ``(numreplicas, timeout_ms)``) start on ``jobs_n`` jobs; once a queue
    has ``start_after`` of them settled (the first queue to get there), replication is held for ``hold_ms``
    (if given), each producer enqueues ``burst`` more jobs, and the shard's
    primary is killed ``window_s`` after the hold began (at once when
    nothing is held). The replica is promoted, the killed node rejoins as its
    replica (the cluster is whole again on return), every run drains (bounded
    by ``timeout``) and is judged on its own. ``on_short_wait`` (a function,
    ``cluster_connector.ShortWait`` → the reply) decides, in every process of a
    run with a ``wait``, what a write that WAIT confirmed short answers.
    """
    if hold_ms is not None:
        jobs.positive_int("hold_ms", hold_ms)
        if hold_ms / 1000 <= window_s:
            raise BadInput(f"hold_ms ({hold_ms}) must outlast window_s ({window_s} s): the kill comes inside the hold")
    return _failover(cluster, queues, jobs_n=jobs_n, workers=workers, hold_ms=hold_ms, window_s=window_s,
                     burst=burst, work_ms=work_ms, lease_ms=lease_ms, start_after=start_after, timeout=timeout,
                     on_short_wait=on_short_wait)


def failover_after_the_hold(cluster: Any, queues: dict[str, tuple[int, int] | None], *, hold_ms: int,
                            window_s: float, **options: Any) -> dict[str, Failover]:
    """``failover``'s run, but the hold ends before the kill: replication is held for ``hold_ms``, then let go,
    and the primary is killed ``window_s`` after the hold began, once its replica has had time to catch up.

    No cell of 09 runs this case (a prediction asks it); a learner who finds it here and runs it first is
    experimenting, which the course allows (docs/decisions.md, kept predictions).

    The same options as ``failover`` (``jobs_n``, ``workers``, ``burst``, ``work_ms``, ``lease_ms``,
    ``start_after``, ``timeout``, ``on_short_wait``).
    """
    jobs.positive_int("hold_ms", hold_ms)
    if hold_ms / 1000 >= window_s:
        raise BadInput(f"hold_ms ({hold_ms}) must end before window_s ({window_s} s): the kill comes after the hold")
    return _failover(cluster, queues, hold_ms=hold_ms, window_s=window_s, **options)


def _failover(
    cluster: Any,
    queues: dict[str, tuple[int, int] | None],
    *,
    jobs_n: int = 300,
    workers: int = 3,
    hold_ms: int | None = None,
    window_s: float = 0.4,
    burst: int = 20,
    work_ms: int = 10,
    lease_ms: int = 1_500,
    start_after: float = 0.15,
    timeout: float = 60.0,
    on_short_wait: Any = None,
) -> dict[str, Failover]:
    jobs.positive_int("jobs_n", jobs_n)
    jobs.non_negative_int("burst", burst)
    if not isinstance(queues, dict) or not queues:
        raise BadInput("queues must be a non-empty dict {queue: wait}, wait None or (numreplicas, timeout_ms)")
    for q, w in queues.items():
        keyspace.check_queue(q)
        check_wait(w)
    if not 0 <= start_after < 1 or window_s < 0:
        raise BadInput("start_after is a fraction in [0, 1) and window_s a number of seconds >= 0")
    owners = {q: cluster.primary_of(q) for q in queues}
    primary = next(iter(owners.values()))
    if any(o is not primary for o in owners.values()):
        where = ", ".join(f"{q} on 127.0.0.1:{o.port}" for q, o in owners.items())
        raise BadInput(f"one failover kills one primary: every queue must be on its shard ({where})")
    replica = cluster.replica_of(primary)
    runs: dict[str, Run] = {}
    try:
        for q, w in queues.items():
            runs[q] = Run(cluster, q, workers=workers, handler="echomq_teach.lab.handlers:stalls", work_ms=work_ms,
                          lease_ms=lease_ms, recovery="stalled", wait=w, timeout=timeout,
                          on_short_wait=on_short_wait if w is not None else None)
        first = next(iter(runs.values()))
        old_run_id = first.conn.run_id(next(iter(runs)))
        for q, run in runs.items():
            jobs.drop(run.conn, q)
            jobs.pause(run.conn, q)  # the runs start together: no queue drains while the others' workers start
            run.produce(jobs_n)
        for run in runs.values():
            run.start()
        for q, run in runs.items():
            jobs.resume(run.conn, q)
        # the hold comes once the fastest queue is that far along: the others are still busy, not drained
        _until(lambda: any(r.settled() >= jobs_n * start_after for r in runs.values()), timeout,
               "the runs to get going")
        return _fail(cluster, runs, primary, replica, old_run_id, hold_ms, window_s, burst, timeout)
    finally:
        for run in runs.values():
            run.close()


def _fail(cluster: Any, runs: dict[str, Run], primary: Any, replica: Any, old_run_id: str, hold_ms: int | None,
          window_s: float, burst: int, timeout: float) -> dict[str, Failover]:
    """Hold, burst, kill, promote, rejoin, drain, judge: the middle of ``failover``."""
    first = next(iter(runs.values()))
    clock = first.clock
    held_at = None
    if hold_ms is not None:
        held_at = clock.now_ms()
        for run in runs.values():
            run.nemesis.note("hold_replication", node=f"127.0.0.1:{replica.port}", ms=hold_ms)
        hold_replication(replica, hold_ms)
    times: dict[str, float] = {}
    inherited: dict[str, dict[str, str]] = {}

    def kill() -> None:
        for q in runs:  # what the replica holds now is what the new primary will start from
            inherited[q] = held_leases(replica, q)
        times["sent"] = clock.now_ms()
        for run in runs.values():
            run.nemesis.note("kill_primary", node=f"127.0.0.1:{primary.port}", pid=primary.pid)
        cluster.kill(primary)  # SIGKILL by PID, and reaped: dead when this returns
        times["done"] = clock.now_ms()

    def produce(run: Run) -> None:
        try:
            run.produce(burst)  # while the replica is held, acknowledged by the primary alone (unless WAIT)
        except LINK_ERRORS:
            pass  # the kill cut the batch (or its WAIT) off: each of its enqueues is an unknown outcome

    timer = threading.Timer(window_s if hold_ms is not None else 0.0, kill)
    timer.start()
    bursts = [threading.Thread(target=produce, args=(run,), daemon=True) for run in runs.values()] if burst else []
    for t in bursts:
        t.start()
    timer.join()
    for t in bursts:
        t.join(timeout)
    try:
        promotion_s = cluster.wait_promotion(replica, timeout=30)
        for run in runs.values():
            run.nemesis.note("promoted", node=f"127.0.0.1:{replica.port}")
    finally:
        # the cluster whole again: the killed node back as the new primary's replica
        cluster.restart_as_replica(primary)
    for run in runs.values():
        run.nemesis.note("rejoined", node=f"127.0.0.1:{primary.port}")
    first.conn.refresh()
    new_run_id = first.conn.run_id(next(iter(runs)))
    drained = {q: run.wait_drained(timeout) for q, run in runs.items()}
    out = {}
    for q, run in runs.items():
        run.stop()
        history = run.history()
        stalls: dict[str, list[int]] = {}
        for entry in completions.read_all(run.conn, q):
            if isinstance(entry.result, str) and entry.result.startswith("stalled "):
                stalls.setdefault(entry.job_id, []).append(int(entry.result.split()[1]))
        after = [o for o in history.calls("stalled") if o.ok and o.sent > times["done"]]
        short = sum(int(o.extra.get("wait_short") or 0) for o in history.notes("stop"))
        out[q] = Failover(q, run.wait, hold_ms, run.check(), history, held_at, times["sent"], times["done"],
                          promotion_s, old_run_id, new_run_id, inherited[q], stalls,
                          sorted({j for o in after for j in o.released()}),
                          sorted({j for o in after for j in o.buried()}), short + run.conn.wait_short, drained[q])
    return out


def drain_rate(cluster: Any, queue: str, *, jobs_n: int = 300, workers: int = 3, wait: tuple[int, int] | None = None,
               work_ms: int = 0, timeout: float = 60.0) -> float:
    """Jobs settled per second by ``workers`` worker processes draining ``jobs_n`` jobs (no fault)."""
    with Run(cluster, queue, workers=workers, work_ms=work_ms, wait=wait, timeout=timeout) as run:
        jobs.drop(run.conn, queue)
        run.produce(jobs_n)
        run.start()
        if not run.wait_drained(timeout, poll_s=0.01):
            raise RuntimeError(f"{jobs_n} jobs were not drained within {timeout} s")
        run.stop()
        # from the first claim answered to the last settle answered, on the node's clock: the workers'
        # start (a Python process each) is not the queue's time
        calls = run.history().calls("claim", "complete")
        first = min(o.answered for o in calls if o.op == "claim" and o.ok and o.job)
        last = max(o.answered for o in calls if o.op == "complete" and o.ok)
        return jobs_n / ((last - first) / 1000)


def _until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)
