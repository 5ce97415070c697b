"""Crash points: one job, a worker that kills itself at one point between its round trips, the run judged.

``crash_point(node, queue, point)`` runs one scenario: worker ``w0`` dies by
SIGKILL at ``point`` (``worker.CRASH_POINTS``) on the one job, a healthy
worker takes over after the crashed one's lease, and the outcome says how often
the handler ran, how many side effects it made, and whose settle counted.
``crash_points`` runs each point side by side, one queue each.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import jobs, keyspace
from ..errors import BadInput
from .checker import Report, check
from .history import History
from .run import Run
from .worker import CRASH_POINTS


@dataclass
class CrashOutcome:
    """What one crash point did to one job: the runs of its handler, its charges, and who settled it."""

    point: str
    job: str
    runs: int  # handler runs started, the crashed one included
    charges: int  # side effects made (the not-idempotent list and the idempotent hash together)
    token: int | None  # the token whose settle the completions stream holds
    settled_by: str | None
    recovered: bool  # a reap put it back after the crash
    report: Report
    history: History = field(repr=False, default_factory=lambda: History([]))

    def row(self) -> tuple[str, int, int, int | None, str | None, bool]:
        return (self.point, self.runs, self.charges, self.token, self.settled_by, self.recovered)


#: the healthy workers' lease: far longer than their one job takes even on a loaded machine, so that only the
#: crashed worker's lease lapses (a healthy one's lapse would add a run, a charge and a stale settle)
HEALTHY_LEASE_MS = 10_000


#: the handler of 07's table: it works, then charges
CRASH_HANDLER = "echomq_teach.lab.handlers:charge"


def crash_point(node: Any, queue: str, point: str, *, lease_ms: int = 300, work_ms: int = 40,
                timeout: float = 60.0) -> CrashOutcome:
    """One job; worker ``w0`` kills itself at ``point`` on it; a healthy worker takes over; the run judged.

    The handler is 07's table's, ``CRASH_HANDLER``, and no other: prediction 07.1 asks about another handler
    under two crashes, and a crash point that took any handler would answer half of it with one keyword.
    ``lease_ms`` is the crashed worker's lease: how long its job waits for the reap. The queue is
    dropped first, so the outcome is this scenario's alone.
    """
    handler = CRASH_HANDLER
    if point not in CRASH_POINTS:
        raise BadInput(f"point must be one of {CRASH_POINTS}, got {point!r}")
    with Run(node, queue, workers=2, lease_ms=HEALTHY_LEASE_MS, work_ms=work_ms, handler=handler, tick_ms=25,
             timeout=timeout) as run:
        jobs.drop(run.conn, queue)
        [job] = run.produce(1)
        doomed = run.spawn(0, crash_at=point, lease_ms=lease_ms)
        doomed.wait_ready()
        run.start_metronome()
        doomed.wait(timeout=timeout)
        return settle_and_judge(run, job, point, timeout)


def settle_and_judge(run: Run, job: str, point: str, timeout: float) -> CrashOutcome:
    """After the crash (or crashes) of a run of one job: healthy workers settle it, and the run is judged."""
    from . import handlers

    run.start()  # a healthy worker in each empty slot
    if not run.wait_drained(timeout):
        raise RuntimeError(f"the job of crash point {point!r} was not settled within {timeout} s")
    run.stop()
    history = run.history()
    report = check(history, run.final_state(), recorded=run.record)
    entries = run.conn.client.xrange(keyspace.queue_key(run.queue, "stream:completions"))
    token = int(entries[-1][1]["attempts"]) if entries else None
    by = next((o.worker for o in history.calls("complete") if o.token == token), None)
    charges = handlers.effects(run.conn, run.queue)[job] + (job in handlers.effects_once(run.conn, run.queue))
    return CrashOutcome(point, job, report.handler_runs[job], charges, token, by, job in report.recovered,
                        report, history)


def crash_points(node: Any, queue_prefix: str, points: Iterable[str] = CRASH_POINTS,
                 **kwargs: Any) -> list[CrashOutcome]:
    """``crash_point`` for each point, side by side (one queue each: ``<prefix>-<point>``), in order."""
    points = list(points)
    out: dict[str, CrashOutcome] = {}
    errors: list[BaseException] = []

    def one(p: str) -> None:
        try:
            out[p] = crash_point(node, f"{queue_prefix}-{p}", p, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(p,), daemon=True) for p in points]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=kwargs.get("timeout", 60.0) * 2)
    if errors:
        raise errors[0]
    return [out[p] for p in points]
