"""How many jobs a run may still claim: the run's ``Budget`` and each consumer's ``Share`` of it."""

from __future__ import annotations

import threading
import time


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


class Share:
    """One consumer's part of a run's ``Budget``: the jobs it claimed and has not settled, and when it stops claiming.

    A beat takes from it before a claim (nothing once the consumer is stopped or
    its run's deadline has passed), gives back what a claim did not bring, and
    notes each settle; ``drop()`` gives back what the consumer will not settle.
    """

    def __init__(self, budget: Budget, deadline: float | None, stopped: threading.Event) -> None:
        self.budget = budget
        #: when the run ends (monotonic seconds), or None outside a run
        self.deadline = deadline
        self.stopped = stopped
        #: jobs this consumer claimed (or holds) and has not settled
        self.reserved = 0

    def take(self, k: int = 1) -> int:
        """How many jobs the consumer may claim now (up to ``k``)."""
        if self.stopped.is_set() or (self.deadline is not None and time.monotonic() >= self.deadline):
            return 0
        n = self.budget.take(k)
        self.reserved += n
        return n

    def hold(self, n: int) -> None:
        """Count ``n`` jobs already in hand (a pipelined claim before the run began) against the budget."""
        for _ in range(n):
            self.budget.take_anyway()
        self.reserved += n

    def give_back(self, n: int = 1) -> None:
        if n:
            self.budget.give_back(n)
            self.reserved -= n

    def note_settled(self) -> None:
        self.reserved -= 1
        self.budget.note_settled()

    def drop(self) -> None:
        """Give back every job this consumer holds and will not settle."""
        self.budget.give_back(self.reserved)
        self.reserved = 0
