"""The Pool (EchoMQ.Pool): several consumers of one queue on threads, one Metronome for their recovery."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from .. import jobs, stalled
from ..connector import Connector
from ..jobs import positive_int
from ..shortcuts import HIREDIS, POOL_SHORTCUTS
from .budget import Budget
from .consumer import Consumer
from .handler import Handler
from .legs import check_recovery, taken_shortcuts
from .metronome import Metronome
from .report import RunReport, combine, failure


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
        taken = taken_shortcuts(conn, shortcuts, POOL_SHORTCUTS)
        own = sorted(taken - {HIREDIS})
        opts = dict(recovery=None, promote=False, lost_link=lost_link, shortcuts=own, **consumer_opts)
        Consumer(conn, queue, handler, **opts)  # type: ignore[arg-type]
        positive_int("size", size)
        positive_int("metronome_ms", metronome_ms)
        check_recovery(recovery, max_stalled)
        parser = "hiredis" if HIREDIS in taken else None
        if parser:
            from ..connector import check_parser

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
                c.drop_reservations()  # what it held in hand is forgotten (its run gave back its budget)
                r = RunReport(stopped_by="error", errors=[failure(name, exc)])
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
        return combine(reports, time.monotonic() - start, errors)

    def close(self) -> None:
        for c in self.consumers:
            c.conn.close()
        self.metronome.conn.close()
