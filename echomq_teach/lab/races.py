"""Races: threads that claim and complete one queue at once, recorded, with broken twins to race.

``race`` starts ``threads`` threads, each with its own connector and history
lane, released together by a barrier; each claims until nothing is left and
completes what it got. Handed ``jobs.claim`` (the page's ``@claim2``, one
atomic step) the checker finds nothing. Handed ``naive_claim`` — the same
claim written as separate round trips, as a first try might be — it finds
jobs handed to two workers. ``naive_complete`` settles without the token
fence, so a worker whose lease was taken over still completes.

The two naive functions exist to be raced in notebook 07 and the tests; the
kit never calls them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from .. import jobs
from ..connector import Connector
from ..jobs import Claimed
from ..keyspace import job_key, queue_key
from .checker import FinalState, Report, check
from .history import History, Recorder, ServerClock, claimed_fields

ClaimFn = Callable[[Connector, str, int], "Claimed | None"]


def naive_claim(conn: Connector, queue: str, lease_ms: int) -> Claimed | None:
    """A claim in five round trips: read the head, remove it, count the attempt, mark it, lease it.

    Between the read and the remove, another worker reads the same head; both
    remove it (the second remove answers 0, and nobody looks), both count an
    attempt, and both believe they hold the job.
    """
    head = conn.call("ZRANGE", queue_key(queue, "pending"), 0, 0)
    if not head:
        return None
    job_id = head[0]
    conn.call("ZREM", queue_key(queue, "pending"), job_id)  # the answer says who won; it is not read
    att = int(conn.call("HINCRBY", job_key(queue, job_id), "attempts", 1))
    conn.call("HSET", job_key(queue, job_id), "state", "active")
    sec, usec = conn.call("TIME")
    conn.call("ZADD", queue_key(queue, "active"), int(sec) * 1000 + int(usec) // 1000 + lease_ms, job_id)
    payload = conn.call("HGET", job_key(queue, job_id), "payload")
    return Claimed(job_id, payload or "", att)


def naive_complete(conn: Connector, queue: str, job_id: str, token: int, result: str = "",
                   *, record: bool = True) -> str:
    """``@complete`` without its fence: it settles without asking whether this worker still holds the job.

    The settle's own steps are the script's (remove from active, record, delete
    the row, count); what is missing is the check of the token and the state.
    """
    conn.call("ZREM", queue_key(queue, "active"), job_id)
    if record:
        conn.call("XADD", queue_key(queue, "stream:completions"), "*", "id", job_id, "outcome", "completed",
                  "attempts", str(token), "result", result)
    conn.call("DEL", job_key(queue, job_id))
    conn.call("HINCRBY", queue_key(queue, "metrics:completed"), "count", 1)
    return jobs.OK


def race(conn: Connector, queue: str, folder: str | Path, *, claim: ClaimFn = jobs.claim, threads: int = 8,
         lease_ms: int = 30_000) -> History:
    """``threads`` threads claim and complete ``queue`` until it is empty; answers their history.

    The jobs must already be enqueued (record them with a ``Recorder`` so the
    checker knows them). Every thread gets its own connector (``conn.fork()``).
    """
    jobs.positive_int("threads", threads)
    clock = ServerClock(conn)
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def one(i: int) -> None:
        c = conn.fork()
        rec = Recorder(folder, f"t{i}", clock)
        try:
            barrier.wait(timeout=30)
            while True:
                got = rec.call("claim", lambda: claim(c, queue, lease_ms), shape=claimed_fields)
                if got is None:
                    return
                rec.note("run", job=got.id, token=got.attempts)
                rec.complete(c, queue, got.id, got.attempts, f"done by t{i}", record=True)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            errors.append(exc)
        finally:
            rec.close()
            c.close()

    ts = [threading.Thread(target=one, args=(i,), name=f"race-{i}", daemon=True) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    if errors:
        raise errors[0]
    return History.read(folder)


def judge(conn: Connector, queue: str, folder: str | Path) -> Report:
    """The checker on a race's folder and the queue's state now."""
    return check(History.read(folder), FinalState.read(conn, queue))


def produce(conn: Connector, queue: str, folder: str | Path, n: int) -> list[str]:
    """Enqueue ``n`` jobs, recorded in the ``producer`` lane of ``folder``."""
    with Recorder(folder, "producer", ServerClock(conn)) as rec:
        return [rec.enqueue(conn, queue, f"job {i}") for i in range(n)]
