"""The Consumer (EchoMQ.Consumer): one queue's options, its beat, and the bounded run that repeats it."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from .. import jobs, keyspace, stalled
from ..connector import LINK_ERRORS, Connector
from ..jobs import Claimed, check_batch, positive_int
from ..keyspace import check_queue
from ..shortcuts import CONSUMER_SHORTCUTS, PIPELINE, Lane
from .batch_beat import BatchBeat
from .beat import Beat, Beats
from .budget import Budget, Share
from .handler import Handler, run_handler
from .lane_beat import LaneBeat
from .legs import check_lost_link, check_recovery, taken_shortcuts
from .page_beat import PageBeat
from .report import RunReport


class Consumer:
    """A standalone consumer of one queue (EchoMQ.Consumer).

    Each ``beat()`` runs promote, the recovery leg (``"reap"`` by default, or
    ``"stalled"``, or ``None`` inside a pool), one claim, the handler, and the
    settle: complete on a value, retry on an exception or an ``Error``.

    Choosing the recovery leg: ``max_attempts`` caps a job's *errors* only. It
    is read by ``retry`` alone, when the handler raises or returns ``Error``; a
    worker that dies inside the handler never calls it. So under ``"reap"`` a
    poison job (one that kills every worker that takes it) is reaped and
    claimed again for ever, its ``attempts`` climbing past the cap, and never
    reaches dead. ``"stalled"`` counts each job's lapsed leases and buries it
    (``last_error`` "stalled") once it has lapsed more than ``max_stalled``
    times. Choose ``"reap"`` when a lapse usually means a slow, frozen or
    restarted worker of a healthy job and no job can take its worker down;
    choose ``"stalled"`` when one can, with a lease longer than the slowest
    healthy run, since the sweep cannot tell a slow job from a dead worker.
    Notebook 03 runs one poison job under each leg; the ledger's
    ``at-least-once-runs`` (docs/guarantees.md) and docs/decisions.md ("the
    default recovery leg") say why ``"reap"`` stays the default.

    ``lost_link="retry"`` lets ``run()`` ride out a node going away (a
    failover): the beat is abandoned, counted in ``RunReport.lost_links``, and
    the next beat goes wherever the connector's refreshed slot map says. A job
    the abandoned beat claimed comes back when its lease lapses and recovery
    runs: at least once, never exactly once.

    ``shortcuts`` (none by default: the page's beat) names what a Pool's
    consumers take (``echomq_teach.shortcuts``): ``"native-reads"`` and, for a
    consumer without promote and recovery legs, ``"pipeline"``. With
    ``pipeline`` a beat's settle carries the next claim, and the job it took is
    the next beat's; a run that stops with one in hand works and settles it
    first.

    ``batch=k`` (with ``pipeline``; not on a cluster, where it is not taken)
    makes each beat a batch: up to k jobs from one batch claim
    (``jobs.claim_many``), their handlers one after another, then every settle
    with the next batch claim in one round trip. A worker that dies holding a
    batch strands up to k leases until recovery runs.
    """

    def __init__(
        self,
        conn: Connector,
        queue: str,
        handler: Handler,
        *,
        lease_ms: int = 30_000,
        retry_delay_ms: int = jobs.DEFAULT_RETRY_DELAY_MS,
        max_attempts: int = jobs.DEFAULT_MAX_ATTEMPTS,
        recovery: str | None = "reap",
        max_stalled: int = stalled.DEFAULT_MAX_STALLED,
        record: bool = False,
        promote: bool = True,
        idle_sleep_ms: int = 20,
        lost_link: str = "raise",
        shortcuts: bool | Sequence[str] = (),
        batch: int = 1,
    ) -> None:
        check_queue(queue)
        self.lost_link = check_lost_link(lost_link)
        positive_int("lease_ms", lease_ms)
        positive_int("retry_delay_ms", retry_delay_ms)
        positive_int("max_attempts", max_attempts)
        check_recovery(recovery, max_stalled)
        jobs.record_flag(record)
        if not callable(handler):
            raise jobs.BadInput("handler must be callable: it takes a Claimed and returns a result or Error")
        taken = taken_shortcuts(conn, shortcuts, CONSUMER_SHORTCUTS)
        if PIPELINE in taken and (promote or recovery is not None):
            raise jobs.BadInput(
                "the pipeline shortcut is for a consumer without promote and recovery legs (a Pool's): "
                "a page-shaped beat claims only after its promote and recovery"
            )
        check_batch(batch)
        if batch > 1 and PIPELINE not in taken and not conn.on_cluster:
            raise jobs.BadInput("batch > 1 needs the pipeline shortcut (a Pool's consumers): "
                                "a batch's settles travel with the next batch claim")
        #: jobs per claim: 1 is claim/3's one job; more is the kit's batch (not taken on a cluster)
        self.batch = batch if PIPELINE in taken else 1
        self.conn, self.queue, self.handler = conn, queue, handler
        self.lease_ms, self.retry_delay_ms, self.max_attempts = lease_ms, retry_delay_ms, max_attempts
        self.recovery, self.max_stalled, self.record = recovery, max_stalled, record
        self.promote, self.idle_sleep_ms = promote, idle_sleep_ms
        #: the shortcuts this consumer takes (empty: the page's beat)
        self.shortcuts = taken
        #: how this consumer beats: the page's beat, or with shortcuts the lane's (one job) or the batch's
        self.beats: Beats = PageBeat(self)
        if taken:
            lane = Lane(
                conn, queue, taken,
                lease_ms=lease_ms, retry_delay_ms=retry_delay_ms, max_attempts=max_attempts, record=record,
            )
            self.beats = LaneBeat(self, lane) if self.batch == 1 else BatchBeat(self, lane)
        self._stop = threading.Event()
        #: this consumer's share of its run's budget (outside a run: no bound, no deadline)
        self.share = Share(Budget(), None, self._stop)

    def beat(self) -> Beat:
        """One beat: promote, recover, claim, handle, settle. Every leg is one real call."""
        return self.beats.beat(self.share)

    def handle(self, job: Claimed) -> object:
        """The handler's answer for ``job``; a crash answers ``Error``."""
        return run_handler(self.handler, job)

    def drop_reservations(self) -> None:
        """Give back the budget of jobs this consumer will not settle (its run ended on an error)."""
        self.share.drop()
        self.beats.drop()

    def run(self, max_jobs: int | None = None, timeout: float = 10.0, until_idle: bool = False) -> RunReport:
        """Beat until ``max_jobs`` settled, ``timeout`` seconds passed, ``stop()``, or (``until_idle``) nothing left."""
        if timeout is None or timeout <= 0:
            raise jobs.BadInput("run() needs a positive timeout in seconds: every loop here is bounded")
        return self.run_within(Budget(max_jobs), timeout, until_idle)

    def run_within(self, budget: Budget, timeout: float, until_idle: bool = False) -> RunReport:
        """``run()`` under a ``Budget`` it may share with other consumers (a Pool's)."""
        report = RunReport()
        start = time.monotonic()
        share = self.share = Share(budget, start + timeout, self._stop)
        # jobs in hand from a beat before the run count against the budget
        share.hold(len(self.beats.held))
        try:
            while True:
                if self._stop.is_set():
                    report.stopped_by = "stop()"
                    break
                if budget.met:
                    report.stopped_by = "max_jobs"
                    break
                if time.monotonic() >= start + timeout:
                    report.stopped_by = "timeout"
                    break
                b = self.safe_beat(report)
                if b is None:
                    continue
                settled = [out for _, out in b.batch] if b.batch else [b.outcome] if b.outcome else []
                if settled:
                    for out in settled:
                        share.note_settled()
                        report.settled += 1
                        report.outcomes[out] = report.outcomes.get(out, 0) + 1
                elif until_idle and not b.promoted and not b.recovered and self._nothing_left():
                    report.stopped_by = "idle"
                    break
                else:
                    time.sleep(self.idle_sleep_ms / 1000)
            # jobs a pipelined settle claimed are worked and settled before the run ends
            for last in self.beats.finish_held(share):
                report.settled += 1
                report.outcomes[last] = report.outcomes.get(last, 0) + 1
        except BaseException:
            # what this consumer counted on goes back to the shared budget: the others may still settle it
            self.drop_reservations()
            raise
        finally:
            self.share = Share(Budget(), None, self._stop)
        report.seconds = time.monotonic() - start
        return report

    def safe_beat(self, report: RunReport) -> Beat | None:
        """One beat counted in ``report``; ``None`` when the link was lost and ``lost_link="retry"``."""
        report.beats += 1
        try:
            return self.beat()
        except LINK_ERRORS:
            if self.lost_link == "raise":
                raise
            report.lost_links += 1
            # what the lost beat claimed comes back by its lease: its budget goes back now
            self.drop_reservations()
            time.sleep(self.idle_sleep_ms / 1000)
            return None

    def _nothing_left(self) -> bool:
        # one MULTI: three reads one after another could each miss a job that a promote (or a retry)
        # moved between them, and a run would stop with work left
        pipe = self.conn.client.pipeline(transaction=True)
        for s in ("pending", "active", "schedule"):
            pipe.zcard(keyspace.queue_key(self.queue, s))
        try:
            return sum(pipe.execute()) == 0
        except LINK_ERRORS:
            if self.lost_link == "raise":
                raise
            return False  # the node is away: not known to be idle

    def stop(self) -> None:
        self._stop.set()
