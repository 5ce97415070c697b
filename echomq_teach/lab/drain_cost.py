"""What one clean drain costs a queue: round trips per job and jobs a second, the kit's or one of your own.

``drain_cost(node, label, **run_options)`` fills a fresh queue with N no-op jobs, starts a ``Run`` of worker
processes on it (``run_options``: a ``scripts`` set and a ``beat`` of your own, or nothing for the kit's
queue), waits until it drained, and reads two figures: every round trip the run's processes made (the
workers' and the metronome's: ``Run.round_trips``) per job, and the jobs settled per second from the first
claim to the last settle, on the node's clock. No faults: valid first (the checker's verdict under a nemesis),
then fast, and this is the fast. The figures move with the machine's load; they are printed, never asserted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import ids, jobs
from ..errors import BadInput
from .run import Run

MAX_JOBS = 2_000  # a drain stays a few seconds at most


@dataclass(frozen=True)
class DrainCost:
    """One clean drain measured."""

    label: str
    jobs: int
    seconds: float  # from the first claim's send to the last settle's answer, on the node's clock
    round_trips: int

    @property
    def jobs_per_s(self) -> float:
        return self.jobs / self.seconds if self.seconds > 0 else float("inf")

    @property
    def trips_per_job(self) -> float:
        return self.round_trips / self.jobs

    def __str__(self) -> str:
        return (f"{self.label}: {self.jobs} jobs in {self.seconds:.2f} s · {self.jobs_per_s:.0f} jobs/s · "
                f"{self.trips_per_job:.1f} round trips a job")


def drain_cost(node: Any, label: str, *, n: int = 200, workers: int = 3, work_ms: int = 1, timeout: float = 60.0,
               **run_options: Any) -> DrainCost:
    """One clean drain of ``n`` jobs by ``workers`` worker processes, measured (``run_options`` go to the ``Run``)."""
    jobs.positive_int("n", n)
    if n > MAX_JOBS:
        raise BadInput(f"n must be at most {MAX_JOBS}: a drain stays a few seconds")
    queue = f"cost-{ids.mint()[3:].lower()}"
    # a long lease and a slow idle poll: nothing lapses, and a worker waiting at the end costs little
    with Run(node, queue, workers=workers, work_ms=work_ms, lease_ms=10_000, idle_ms=50, tick_ms=50,
             timeout=timeout, **run_options) as run:
        try:
            run.produce(n)
            run.start()
            drained = run.wait_drained(timeout)
            run.stop()
            report = run.check()
            history = run.history()
        finally:
            jobs.drop(run.conn, queue)
        if not drained or report.completed != n:
            raise RuntimeError(f"{label}: the drain completed {report.completed} of {n} jobs")
        first = min(o.sent for o in history.calls("claim"))
        last = max(o.answered or o.sent for o in history.calls("complete") if o.ok)
        return DrainCost(label, n, (last - first) / 1000, run.round_trips())
