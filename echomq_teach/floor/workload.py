"""Settles to fold: jobs enqueued, then settled by a recording Consumer (``record=True``).

Every ``dead_every``-th job's handler fails and, with one attempt allowed,
dies, so a stream made here holds both outcomes.
"""

from __future__ import annotations

from .. import jobs
from ..completions import completions_stream
from ..connector import Connector
from ..consumer import Consumer, Error


def settle_jobs(conn: Connector, queue: str, n: int, *, start: int = 0, dead_every: int = 10) -> list[str]:
    """Enqueue ``job <start>`` … and settle them all with ``record=True``; answers their ids in settle order."""
    ids = [jobs.enqueue(conn, queue, f"job {i}") for i in range(start, start + n)]
    report = recording_consumer(conn, queue, dead_every).run(max_jobs=n, timeout=60)
    if report.settled != n:
        raise RuntimeError(f"only {report.settled} of {n} jobs settled in 60 s: {report}")
    return ids


def recording_consumer(conn: Connector, queue: str, dead_every: int = 10) -> Consumer:
    """A Consumer that records every settle; the handler fails the jobs whose number ends a ``dead_every``."""

    def handler(job: jobs.Claimed) -> str | Error:
        n = int(job.payload.rsplit(" ", 1)[-1])
        return Error("a tenth of the jobs fail") if (n + 1) % dead_every == 0 else f"done {job.payload}"

    return Consumer(conn, queue, handler, record=True, max_attempts=1)


def stream_len(conn: Connector, queue: str) -> int:
    """``XLEN emq:{q}:stream:completions``."""
    return int(conn.call("XLEN", completions_stream(queue)))
