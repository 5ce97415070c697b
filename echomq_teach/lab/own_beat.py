"""A beat of your own in a worker process: the calls it is handed, each recorded, and the budget it claims within.

A worker process told ``beat="module:function"`` (``WorkerOptions.beat``) calls that function in the place
of its own beat, again and again, as ``beat(queue, handle, budget)``:

* ``queue`` is a ``Calls``: the worker's calls on its queue, each one real call through the worker's connector
  (and so through the scripts a ``transitions.ScriptSet`` puts in the kit's place), each recorded in the run's
  history as the worker's own beat records it: ``promote()``, ``recover()`` (the stall sweep, handed
  ``max_attempts``), ``claim()``, ``complete(job, result)``, ``retry(job, reason)``;
* ``handle(job)`` runs the run's handler on a claimed job (with the worker's crash points) and answers
  ``(True, result)`` or ``(False, reason)``, as ``consumer.settle_args`` does;
* ``budget`` is the worker's ``consumer.Share`` of a ``Budget`` of ``WorkerOptions.budget`` jobs (no bound
  when None): ``take()`` before a claim, ``give_back()`` when the claim brought nothing.

The beat answers the settle's outcome, or None when it claimed nothing (the worker then pauses ``idle_ms``).
A run whose workers beat this way starts no metronome: promote and recovery are the beats' own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .. import consumer, jobs
from ..connector import Connector
from ..consumer.budget import Budget, Share
from ..stalled import StallReport
from .history import Recorder

#: what a beat of your own is: beat(queue, handle, budget) → an outcome, or None when it claimed nothing
OwnBeat = Callable[["Calls", Callable[[jobs.Claimed], tuple[bool, Any]], Share], Any]


class Calls:
    """One worker's calls on its queue, each a real call, each recorded in its history."""

    def __init__(self, conn: Connector, queue: str, rec: Recorder, *, lease_ms: int, retry_delay_ms: int,
                 max_attempts: int, record: bool) -> None:
        self.conn, self.queue, self.rec = conn, queue, rec
        self.lease_ms, self.retry_delay_ms, self.max_attempts, self.record = (lease_ms, retry_delay_ms,
                                                                              max_attempts, record)

    def promote(self) -> list[str]:
        """Due retries back to pending (``@promote``): the ids moved."""
        return self.rec.promote(self.conn, self.queue)

    def recover(self) -> StallReport:
        """Lapsed leases back to pending, or buried (the stall sweep, or the script in its place, handed
        ``max_attempts``)."""
        return self.rec.stalled(self.conn, self.queue, self.max_attempts, record=self.record)

    def claim(self) -> jobs.Claimed | None:
        """One job under a lease of ``lease_ms``, or None."""
        return self.rec.claim(self.conn, self.queue, self.lease_ms)

    def complete(self, job: jobs.Claimed, result: Any = "") -> str:
        """Complete ``job`` with its token: ``"ok"`` or ``"stale"``."""
        value = result if isinstance(result, (str, bytes)) else str(result)
        return self.rec.complete(self.conn, self.queue, job.id, job.attempts, value, record=self.record)

    def retry(self, job: jobs.Claimed, reason: Any) -> str:
        """Answer ``job``'s error with its token: ``"scheduled"``, ``"dead"`` or ``"stale"``."""
        return self.rec.retry(self.conn, self.queue, job.id, job.attempts, str(reason), self.retry_delay_ms,
                              self.max_attempts, record=self.record)

    def __repr__(self) -> str:
        return f"<your queue {self.queue!r}: lease {self.lease_ms} ms, max_attempts {self.max_attempts}>"


def share_of(budget: int | None) -> Share:
    """A worker's share of a budget of ``budget`` jobs (None: no bound), for a beat of its own."""
    return Share(Budget(budget), None, threading.Event())


def handle_with(work: Callable[[jobs.Claimed], Any]) -> Callable[[jobs.Claimed], tuple[bool, Any]]:
    """``handle(job)`` for a beat: ``work(job)`` (the worker's handler run) as (ok, the result or the reason)."""
    return lambda job: consumer.settle_args(work(job))
