"""Consumers: the client processes that drive the lifecycle (EchoMQ.Consumer, Pool, Metronome).

Nothing in the queue moves on its own: a lapsed lease stays in active and a
due retry stays on the schedule until a client calls reap or promote. A
standalone ``Consumer`` does that on every beat; in a ``Pool`` one
``Metronome`` per queue does it for all the pool's consumers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from . import jobs, keyspace, stalled
from .connector import LINK_ERRORS, Connector
from .jobs import Claimed, check_batch, positive_int
from .keyspace import check_queue
from .shortcuts import CONSUMER_SHORTCUTS, HIREDIS, PIPELINE, POOL_SHORTCUTS, Lane, check_shortcuts

RECOVERY_LEGS = ("reap", "stalled", None)
#: what a lost link does to a run: "raise" (the default) or "retry" (abandon the beat, beat again)
LOST_LINK = ("raise", "retry")


def _check_lost_link(lost_link: object) -> str:
    if lost_link not in LOST_LINK:
        raise jobs.BadInput(f"lost_link must be 'raise' or 'retry', got {lost_link!r}")
    return lost_link  # type: ignore[return-value]


class Error(NamedTuple):
    """What a handler returns for ``{:error, reason}``: the job is retried with ``reason``."""

    reason: str


Handler = Callable[[Claimed], "str | bytes | Error | None"]


@dataclass
class Beat:
    """What one beat did, leg by leg."""

    promoted: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    buried: list[str] = field(default_factory=list)
    claimed: Claimed | None = None
    outcome: str | None = None  # "ok", "scheduled", "dead" or "stale"
    detail: str = ""
    #: a batch beat (``batch`` > 1): each job of the batch and its outcome; ``claimed`` is its first job
    batch: list[tuple[Claimed, str]] = field(default_factory=list)

    @property
    def idle(self) -> bool:
        return self.claimed is None


@dataclass
class RunReport:
    """What a bounded ``run()`` did."""

    beats: int = 0
    settled: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    stopped_by: str = ""
    #: in a pool, one line per thread that ended on an exception: ``"consumer-0: ResponseError: …"``
    errors: list[str] = field(default_factory=list)
    #: beats abandoned because the node went away (``lost_link="retry"``)
    lost_links: int = 0


def _check_recovery(recovery: object, max_stalled: object) -> None:
    if recovery not in RECOVERY_LEGS:
        raise jobs.BadInput(f"recovery must be 'reap', 'stalled' or None, got {recovery!r}")
    positive_int("max_stalled", max_stalled)


def _combine(reports: Sequence[RunReport], seconds: float, extra_errors: Sequence[str] = ()) -> RunReport:
    total = RunReport(seconds=seconds)
    for r in reports:
        total.beats += r.beats
        total.settled += r.settled
        total.lost_links += r.lost_links
        for k, v in r.outcomes.items():
            total.outcomes[k] = total.outcomes.get(k, 0) + v
        total.errors += r.errors
    total.errors += extra_errors
    stops = {r.stopped_by for r in reports} | ({"error"} if total.errors else set())
    total.stopped_by = ",".join(sorted(stops))
    return total


def _recover(
    conn: Connector, queue: str, leg: str | None, max_stalled: int, record: bool = False
) -> tuple[list[str], list[str]]:
    if leg == "reap":
        return jobs.reap(conn, queue), []
    if leg == "stalled":
        # a burial ends a job's life: a recording consumer's or metronome's sweep records it
        report = stalled.check(conn, queue, max_stalled, record=record)
        return report.requeued, report.dead
    return [], []


def _taken(conn: Connector, value: object, allowed: tuple[str, ...]) -> frozenset[str]:
    """The shortcuts asked for, checked; none on a cluster, where every call is routed on its own."""
    names = check_shortcuts(value, allowed)
    return frozenset() if conn.on_cluster else names


def run_handler(handler: Callable[..., object], *args: object) -> object:
    """``handler(*args)``'s answer; a handler that raises answers ``Error("<Type>: <message>")`` instead.

    The one mapping of a handler's crash to ``{:error, reason}``: the consumer
    uses it, and so does the fault lab's worker process.
    """
    try:
        return handler(*args)
    except Exception as exc:  # noqa: BLE001 - a handler's crash is an {:error, reason}
        return Error(f"{type(exc).__name__}: {exc}")


def settle_args(result: object) -> tuple[bool, str | bytes]:
    """A handler's answer as the settle takes it: (True, the result) to complete, (False, the reason) to retry."""
    if isinstance(result, Error):
        return False, result.reason
    value = "" if result is None else result
    return True, value if isinstance(value, (str, bytes)) else str(value)


def _failure(who: str, exc: Exception) -> str:
    return f"{who}: {type(exc).__name__}: {exc}"


class Budget:
    """How many jobs a run may still claim: ``max_jobs`` less those settled or claimed and not yet settled.

    A consumer takes one before each claim and gives it back when the claim
    comes back empty (or its job is lost with a link); a settle keeps it. So a
    pool's consumers together never settle more than ``max_jobs``, even when a
    claim rides ahead in a settle's round trip. ``None``: no bound.
    """

    def __init__(self, max_jobs: int | None = None) -> None:
        self.max_jobs = max_jobs
        self.taken = 0
        self.settled = 0
        self._lock = threading.Lock()

    def take(self, k: int = 1) -> int:
        """Up to ``k`` jobs' worth of budget: how many were granted (0: none left)."""
        if self.max_jobs is None:
            return k
        with self._lock:
            n = min(k, self.max_jobs - self.taken)
            if n <= 0:
                return 0
            self.taken += n
            return n

    def take_anyway(self) -> None:
        """Count a job already in hand (claimed before the run began)."""
        with self._lock:
            self.taken += 1

    def give_back(self, n: int = 1) -> None:
        if self.max_jobs is not None and n:
            with self._lock:
                self.taken -= n

    def note_settled(self) -> None:
        with self._lock:
            self.settled += 1

    @property
    def met(self) -> bool:
        return self.max_jobs is not None and self.settled >= self.max_jobs


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
        self.lost_link = _check_lost_link(lost_link)
        positive_int("lease_ms", lease_ms)
        positive_int("retry_delay_ms", retry_delay_ms)
        positive_int("max_attempts", max_attempts)
        _check_recovery(recovery, max_stalled)
        jobs.record_flag(record)
        if not callable(handler):
            raise jobs.BadInput("handler must be callable: it takes a Claimed and returns a result or Error")
        taken = _taken(conn, shortcuts, CONSUMER_SHORTCUTS)
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
        self._lane = (
            Lane(
                conn, queue, taken,
                lease_ms=lease_ms, retry_delay_ms=retry_delay_ms, max_attempts=max_attempts, record=record,
            )
            if taken
            else None
        )
        self._held: list[Claimed] = []  # the jobs a pipelined settle claimed: the next beat's
        self._batch_at = 0.0  # when the batch in hand was claimed (monotonic): its leases run from then
        self._claim_error: Exception | None = None  # that claim's refusal, raised at the next beat
        self._budget = Budget()
        self._reserved = 0  # budget this consumer holds for jobs it claimed and has not settled
        self._deadline: float | None = None
        self._stop = threading.Event()

    def beat(self) -> Beat:
        """One beat: promote, recover, claim, handle, settle. Every leg is one real call."""
        if self._lane is not None:
            return self._lane_beat() if self.batch == 1 else self._batch_beat()
        b = Beat()
        if self.promote:
            b.promoted = jobs.promote(self.conn, self.queue)
        b.recovered, b.buried = _recover(self.conn, self.queue, self.recovery, self.max_stalled, self.record)
        if not self._may_claim():
            return b
        b.claimed = jobs.claim(self.conn, self.queue, self.lease_ms)
        if b.claimed is None:
            self._give_back()
            return b
        self._settle_plain(b)
        return b

    def _handle(self, job: Claimed) -> object:
        return run_handler(self.handler, job)

    def _settle_plain(self, b: Beat) -> None:
        job = b.claimed
        assert job is not None
        ok, value = settle_args(self._handle(job))
        if not ok:
            reason = str(value)
            b.outcome = jobs.retry(
                self.conn, self.queue, job.id, job.attempts, reason, self.retry_delay_ms, self.max_attempts,
                record=self.record,
            )
            b.detail = reason
        else:
            b.outcome = jobs.complete(self.conn, self.queue, job.id, job.attempts, value, record=self.record)

    def _lane_beat(self) -> Beat:
        """A beat with shortcuts: the job in hand (or one claim), the handler, the settle with the next claim."""
        assert self._lane is not None
        if self._claim_error is not None:
            # the claim that rode in the last settle was refused: raised here, where the plain beat's claim is
            err, self._claim_error = self._claim_error, None
            raise err
        b = Beat()
        job = self._held.pop() if self._held else None
        if job is None:
            if not self._may_claim():
                return b
            job = self._lane.claim()
            if job is None:
                self._give_back()
                return b
        b.claimed = job
        ok, value = settle_args(self._handle(job))
        more = self._may_claim() > 0
        s = self._lane.settle(job, ok, value, more)
        if more and s.next is None:
            self._give_back()
        b.outcome, b.detail = s.outcome, ("" if ok else str(value))
        self._held, self._claim_error = ([s.next] if s.next else []), s.claim_error
        if s.error is not None:
            self._refused(s.error)
        return b

    def _batch_beat(self) -> Beat:
        """A batch beat: the jobs in hand (or a batch claim), each handler in turn, the settles with the next claim."""
        assert self._lane is not None
        if self._claim_error is not None:
            err, self._claim_error = self._claim_error, None
            raise err
        b = Beat()
        batch, self._held = self._held, []
        if not batch:
            want = self._may_claim(self.batch)
            if not want:
                return b
            self._batch_at = time.monotonic()
            batch = self._lane.claim_many(want)
            self._give_back(want - len(batch))
            if not batch:
                return b
        b.claimed = batch[0]
        error = self._work_batch(b, batch, claim_next=True)
        if error is not None:
            # the others settled (each settle is its own call): counted before the refusal is raised
            for _ in b.batch:
                self._count_settle()
            self._refused(error)
        return b

    def _work_batch(self, b: Beat, batch: list[Claimed], claim_next: bool) -> Exception | None:
        """Each handler of the batch in turn, then its settles (and, with ``claim_next``, the next batch claim).

        Every lease of a batch runs from its one claim, so what is done settles
        at once when half the lease has gone by (the lease guard): a batch
        whose handlers together outlast the lease still makes progress. Each
        job settled goes into ``b.batch``; answers the first refusal (the jobs
        after it come back by their leases), or None.
        """
        assert self._lane is not None
        answers: list[tuple[Claimed, bool, str | bytes]] = []
        for job in batch:
            if answers and time.monotonic() - self._batch_at >= self.lease_ms / 2000:
                s = self._lane.settle_many(answers, 0)
                b.batch += [(a[0], out) for a, out in zip(answers, s.outcomes) if out is not None]
                answers = []
                if s.error is not None:
                    return s.error
            answers.append((job, *settle_args(self._handle(job))))
        more = self._may_claim(self.batch) if claim_next else 0
        self._batch_at = time.monotonic()  # the next batch's leases start no earlier than this
        s = self._lane.settle_many(answers, more)
        self._give_back(more - len(s.next))
        self._held, self._claim_error = s.next, s.claim_error
        b.batch += [(a[0], out) for a, out in zip(answers, s.outcomes) if out is not None]
        return s.error

    def _refused(self, error: Exception) -> None:
        """A settle was refused: the jobs the pipeline claimed are worked and settled first, as another
        consumer would have, then the refusal is raised as the plain beat raises it."""
        try:
            self._finish_held()
        except Exception:  # noqa: BLE001 - the first refusal is the one reported; those jobs come back by their leases
            self._held = []
        raise error

    def _finish_held(self) -> list[str]:
        """Work and settle the jobs a pipelined claim left in hand, claiming nothing more; their outcomes."""
        if not self._held or self._lane is None:
            return []
        held, self._held = self._held, []
        if self.batch > 1:
            b = Beat()
            error = self._work_batch(b, held, claim_next=False)
            for _ in b.batch:
                self._count_settle()
            if error is not None:
                raise error
            return [out for _, out in b.batch]
        [job] = held
        ok, value = settle_args(self._handle(job))
        one = self._lane.settle(job, ok, value, claim_next=False)
        if one.error is not None:
            raise one.error
        self._count_settle()
        return [one.outcome]  # type: ignore[list-item]

    def _may_claim(self, k: int = 1) -> int:
        """How many jobs this consumer may claim now (up to ``k``): none once stopped, past its run's
        deadline, or out of budget."""
        if self._stop.is_set() or (self._deadline is not None and time.monotonic() >= self._deadline):
            return 0
        n = self._budget.take(k)
        self._reserved += n
        return n

    def _give_back(self, n: int = 1) -> None:
        if n:
            self._budget.give_back(n)
            self._reserved -= n

    def _count_settle(self) -> None:
        self._reserved -= 1
        self._budget.note_settled()

    def drop_reservations(self) -> None:
        """Give back the budget of jobs this consumer will not settle (its run ended on an error)."""
        self._budget.give_back(self._reserved)
        self._reserved = 0
        self._held = []
        if self._lane is not None:
            self._lane.parents.clear()

    def run(self, max_jobs: int | None = None, timeout: float = 10.0, until_idle: bool = False) -> RunReport:
        """Beat until ``max_jobs`` settled, ``timeout`` seconds passed, ``stop()``, or (``until_idle``) nothing left."""
        if timeout is None or timeout <= 0:
            raise jobs.BadInput("run() needs a positive timeout in seconds: every loop here is bounded")
        return self.run_within(Budget(max_jobs), timeout, until_idle)

    def run_within(self, budget: Budget, timeout: float, until_idle: bool = False) -> RunReport:
        """``run()`` under a ``Budget`` it may share with other consumers (a Pool's)."""
        report = RunReport()
        start = time.monotonic()
        self._budget, self._deadline, self._reserved = budget, start + timeout, 0
        for _ in self._held:  # jobs in hand from a beat before the run: they count against the budget
            budget.take_anyway()
        self._reserved = len(self._held)
        try:
            while True:
                if self._stop.is_set():
                    report.stopped_by = "stop()"
                    break
                if budget.met:
                    report.stopped_by = "max_jobs"
                    break
                if time.monotonic() >= self._deadline:
                    report.stopped_by = "timeout"
                    break
                b = self.safe_beat(report)
                if b is None:
                    continue
                settled = [out for _, out in b.batch] if b.batch else [b.outcome] if b.outcome else []
                if settled:
                    for out in settled:
                        self._count_settle()
                        report.settled += 1
                        report.outcomes[out] = report.outcomes.get(out, 0) + 1
                elif until_idle and not b.promoted and not b.recovered and self._nothing_left():
                    report.stopped_by = "idle"
                    break
                else:
                    time.sleep(self.idle_sleep_ms / 1000)
            # jobs a pipelined settle claimed are worked and settled before the run ends
            for last in self._finish_held():
                report.settled += 1
                report.outcomes[last] = report.outcomes.get(last, 0) + 1
        finally:
            self._budget, self._deadline = Budget(), None
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


class Ticker:
    """A loop on a thread of its own: ``tick()`` at once, then every ``interval_ms`` until ``stop()``.

    The Metronome and the Pump (``echomq_teach.pump``) are tickers. A lost link
    ends the loop (``lost_link="raise"``) or is counted in ``lost_links`` and the
    next tick comes as usual (``"retry"``); the exception a loop ends on is kept in
    ``errors`` as ``"<who>: ResponseError: …"`` (at most one), not lost with the thread.
    """

    #: how ``errors`` names this ticker
    who = "ticker"

    def __init__(self, interval_ms: int, lost_link: str) -> None:
        positive_int("interval_ms", interval_ms)
        self.lost_link = _check_lost_link(lost_link)
        self.interval_ms = interval_ms
        self.lost_links = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> object:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        """True while the tick thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def start_thread(self, name: str) -> None:
        self._thread = threading.Thread(target=self.run, name=name, daemon=True)
        self._thread.start()

    def run(self) -> None:
        """Tick until ``stop()``, on the calling thread: the first tick at once."""
        try:
            while True:
                try:
                    self.tick()
                except LINK_ERRORS:
                    if self.lost_link == "raise":
                        raise
                    self.lost_links += 1  # the node went away: tick again next interval
                if self._stop.wait(self.interval_ms / 1000):
                    break
        except Exception as exc:  # noqa: BLE001 - kept for whoever started it, not lost with the thread
            self.errors.append(_failure(self.who, exc))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


class Metronome(Ticker):
    """One per queue in a pool: calls promote and the recovery leg on a fixed tick (EchoMQ.Metronome)."""

    who = "metronome"

    def __init__(
        self,
        conn: Connector,
        queue: str,
        interval_ms: int = 100,
        recovery: str | None = "reap",
        max_stalled: int = stalled.DEFAULT_MAX_STALLED,
        lost_link: str = "raise",
        record: bool = False,
    ) -> None:
        check_queue(queue)
        super().__init__(interval_ms, lost_link)
        _check_recovery(recovery, max_stalled)
        jobs.record_flag(record)
        #: the stall sweep's burials go to the completions stream (a recording pool's metronome)
        self.record = record
        self.conn, self.queue = conn, queue
        self.recovery, self.max_stalled = recovery, max_stalled
        self.ticks = 0
        self.promoted = 0
        self.recovered = 0

    def tick(self) -> tuple[list[str], list[str]]:
        """One tick: promote, then recover. Answers (promoted, recovered); the trace names the tick."""
        with self.conn.tagged("metronome tick"):
            promoted = jobs.promote(self.conn, self.queue)
            recovered, _ = _recover(self.conn, self.queue, self.recovery, self.max_stalled, self.record)
        self.ticks += 1
        self.promoted += len(promoted)
        self.recovered += len(recovered)
        return promoted, recovered

    def start(self) -> None:
        # the first tick runs at once, so even a run that ends at once has had promote and recovery
        self.start_thread(f"metronome-{self.queue}")


class Pool:
    """Several consumers of one queue on threads, with one Metronome for recovery (EchoMQ.Pool).

    ``recovery`` (``"reap"`` by default, or ``"stalled"``) and ``max_stalled``
    go to the Metronome, the pool's only sweeper. Under ``"reap"`` a job that
    kills every worker that takes it is claimed again for ever: ``max_attempts``
    is read only when a handler reports an error, which a dead worker never
    does. ``"stalled"`` buries such a job after more than ``max_stalled`` lapses,
    and buries a healthy job that outlasts its lease as often, so it wants a
    lease longer than the slowest healthy run (``Consumer`` says when to choose
    which; notebook 03 shows both).

    The consumers leave promote and recovery to the Metronome's tick and, by
    default, take every shortcut (``shortcuts=True``: ``native-reads`` on wire 6,
    ``pipeline``, ``hiredis``; see ``echomq_teach.shortcuts``). ``shortcuts=False``
    gives each consumer the plain claim and settle of the page. On a cluster the
    consumers take none: each call there is routed on its own.

    ``batch=k`` (a consumer option, default 1) has each consumer claim up to k
    jobs per call and settle them together with its next claim (``Consumer``);
    ``size`` stays the number of handlers running at once.
    """

    def __init__(
        self,
        conn: Connector,
        queue: str,
        handler: Handler,
        size: int = 4,
        *,
        metronome_ms: int = 100,
        recovery: str | None = "reap",
        max_stalled: int = stalled.DEFAULT_MAX_STALLED,
        lost_link: str = "raise",
        shortcuts: bool | Sequence[str] = True,
        **consumer_opts: object,
    ) -> None:
        # refuse bad input before forking connectors: a refused pool opens no links to the node
        # (a dry-run Consumer checks the queue, the handler and every option without a call)
        taken = _taken(conn, shortcuts, POOL_SHORTCUTS)
        own = sorted(taken - {HIREDIS})
        opts = dict(recovery=None, promote=False, lost_link=lost_link, shortcuts=own, **consumer_opts)
        Consumer(conn, queue, handler, **opts)  # type: ignore[arg-type]
        positive_int("size", size)
        positive_int("metronome_ms", metronome_ms)
        _check_recovery(recovery, max_stalled)
        parser = "hiredis" if HIREDIS in taken else None
        if parser:
            from .connector import check_parser

            check_parser(parser)  # hiredis installed, before any link is opened
        self.queue = queue
        #: the shortcuts the consumers take (none on a cluster, or with ``shortcuts=False``)
        self.shortcuts = taken
        # each consumer gets its own connector: its own socket and trace
        self.consumers = [
            Consumer(conn.fork(parser=parser) if parser else conn.fork(), queue, handler, **opts)  # type: ignore[arg-type]
            for _ in range(size)
        ]
        #: jobs per claim each consumer takes (1 on a cluster, or without the pipeline shortcut)
        self.batch = self.consumers[0].batch
        # the metronome runs the pool's recovery leg, so the stall cap is its own, and so is the record
        # flag: a recording pool's sweep records its burials as its consumers record their settles
        record = bool(consumer_opts.get("record", False))
        self.metronome = Metronome(
            conn.fork(), queue, metronome_ms, recovery, max_stalled, lost_link=lost_link, record=record
        )

    def run(self, max_jobs: int | None = None, timeout: float = 10.0, until_idle: bool = False) -> RunReport:
        """Run every consumer on its own thread until the bound is met; answers the combined report.

        ``max_jobs`` is the pool's: its consumers share one budget, so together
        they settle at most that many.
        """
        if timeout is None or timeout <= 0:
            raise jobs.BadInput("run() needs a positive timeout in seconds: every loop here is bounded")
        reports: list[RunReport] = []
        lock = threading.Lock()
        budget = Budget(max_jobs)

        def work(name: str, c: Consumer) -> None:
            try:
                r = c.run_within(budget, timeout, until_idle)
            except Exception as exc:  # noqa: BLE001 - a consumer's crash is reported, not lost with its thread
                c.drop_reservations()  # the others may still settle what this one had counted on
                r = RunReport(stopped_by="error", errors=[_failure(name, exc)])
            with lock:
                reports.append(r)

        start = time.monotonic()
        self.metronome.start()
        threads = [
            threading.Thread(target=work, args=(f"consumer-{i}", c), name=f"consumer-{i}-{self.queue}", daemon=True)
            for i, c in enumerate(self.consumers)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout + 5)
        self.metronome.stop()
        # a metronome that died leaves the pool without promote and recovery: that is an error too
        errors, self.metronome.errors = self.metronome.errors, []
        return _combine(reports, time.monotonic() - start, errors)

    def close(self) -> None:
        for c in self.consumers:
            c.conn.close()
        self.metronome.conn.close()


class Pools:
    """One ``Pool`` per queue, run side by side: on a cluster, a pool across the shards its queues live on.

    Each queue keeps its own consumers and its own Metronome (one per queue, as
    in a single Pool); ``run`` answers one ``RunReport`` per queue.
    """

    def __init__(self, conn: Connector, queues: Sequence[str], handler: Handler, size: int = 2, **pool_opts: object):
        if isinstance(queues, str) or not isinstance(queues, Sequence) or not queues:
            raise jobs.BadInput("queues must be a non-empty list of queue names")
        for q in queues:
            check_queue(q)
        if len(set(queues)) != len(queues):
            raise jobs.BadInput(f"queues lists a queue twice: {list(queues)!r}")
        self.pools: dict[str, Pool] = {}
        try:
            for q in queues:
                self.pools[q] = Pool(conn, q, handler, size, **pool_opts)  # type: ignore[arg-type]
        except BaseException:
            self.close()  # a refused option opens nothing for the queues after it, and closes the ones before
            raise

    def run(self, max_jobs: int | None = None, timeout: float = 10.0, until_idle: bool = False) -> dict[str, RunReport]:
        """Run every queue's pool on its own thread; ``max_jobs`` bounds each queue. Answers queue → report."""
        out: dict[str, RunReport] = {}
        lock = threading.Lock()

        def work(q: str, pool: Pool) -> None:
            r = pool.run(max_jobs=max_jobs, timeout=timeout, until_idle=until_idle)
            with lock:
                out[q] = r

        threads = [threading.Thread(target=work, args=(q, p), daemon=True) for q, p in self.pools.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout + 10)
        return out

    @staticmethod
    def total(reports: dict[str, RunReport]) -> RunReport:
        """The queues' reports added up (seconds: the longest)."""
        return _combine(list(reports.values()), max((r.seconds for r in reports.values()), default=0.0))

    def close(self) -> None:
        for p in self.pools.values():
            p.close()
