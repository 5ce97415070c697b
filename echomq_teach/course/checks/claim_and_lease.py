"""Notebook 02 · claim and the lease: a late worker, an empty queue that is not, a lease renewed.

(A five-second lease, a paused claim and the ghost guard are worked examples in the notebook, not exercises.)
"""

from __future__ import annotations

import time
from typing import Any

from ... import jobs, keyspace, snapshots
from ...connector import Connector
from ..judges.renewal import judge_lease_extension
from ..registry import Findings, exercise, judged, prediction, setup_for

# -- 02.1 · late, but not too late ---------------------------------------------------------------------
SCENARIOS = (
    "lease lapsed, no sweep yet: the first worker completes",
    "lease lapsed, a reap ran: the first worker completes",
    "reaped and claimed again: the first worker completes",
    "reaped and claimed again: the second worker completes",
)


def _late_shape(answer: Any, args: tuple[Any, ...]) -> str | None:
    if not isinstance(answer, dict) or set(answer) != set(SCENARIOS):
        return f"return a dict with exactly the keys {sorted(SCENARIOS)}; got {answer!r}."
    bad = sorted({v for v in answer.values() if v not in (jobs.OK, jobs.STALE)}, key=str)
    return f'each prediction is "ok" or "stale" (jobs.OK, jobs.STALE); {bad} is not.' if bad else None


@prediction(
    "02.1",
    "Late, but not too late",
    "Hint: read the first lines of @complete (scripts.show('complete')): which two fields of the row does "
    "the fence compare, and does it read the clock at all?",
    solution="02_1_late_worker.py",
    shape=_late_shape,
    explain="@complete compares the caller's token with the row's attempts, and wants the row active; it never "
    "reads the clock. A lapsed lease nobody swept is still the caller's; a reap moved the row out of active; a "
    "new claim raised attempts past the first worker's token.",
)
def _run_late_worker(conn: Connector, queue: str, args: tuple[Any, ...]) -> dict[str, str]:
    seen: dict[str, str] = {}
    # each scenario on a job of its own, leases of 30 ms
    job = jobs.enqueue(conn, queue, "no sweep")
    first = jobs.claim(conn, queue, 30)
    time.sleep(0.05)
    seen[SCENARIOS[0]] = jobs.complete(conn, queue, job, first.attempts)
    job = jobs.enqueue(conn, queue, "a reap ran")
    first = jobs.claim(conn, queue, 30)
    time.sleep(0.05)
    jobs.reap(conn, queue)
    seen[SCENARIOS[1]] = jobs.complete(conn, queue, job, first.attempts)
    jobs.remove(conn, queue, job)
    job = jobs.enqueue(conn, queue, "claimed again")
    first = jobs.claim(conn, queue, 30)
    time.sleep(0.05)
    jobs.reap(conn, queue)
    second = jobs.claim(conn, queue, 30_000)
    seen[SCENARIOS[2]] = jobs.complete(conn, queue, job, first.attempts)
    seen[SCENARIOS[3]] = jobs.complete(conn, queue, job, second.attempts)
    return seen


# -- 02.3 · empty, yet not empty ---------------------------------------------------------------------------
@exercise(
    "02.3",
    "Empty, yet not empty",
    "Hint: two different things answer an empty claim here. Look at what jobs.paused says, and at the first "
    "members of the pending set (ZRANGE … 0 2): does each of them have a row?",
    solution="02_3_empty_yet_not.py",
    kind="repair",
)
def _verify_empty_yet_not(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    (job_id,) = args
    s = snapshots.snapshot(conn, queue)
    f.expect(not s.paused, "the queue is still paused: a paused queue's claim answers empty whatever is pending.")
    where = s.where(job_id)
    f.expect(where == ["active"], f"the real job {job_id} should be claimed (active); it is in {where}.")
    f.expect(
        isinstance(result, jobs.Claimed) and result.id == job_id,
        f"return the claim that handed out {job_id}; got {result!r}.",
    )
    f.expect(set(s.rows) == {job_id}, f"no other row should exist (a ghost mints none); rows: {sorted(s.rows)}.")
    ghosts = [i for i in s.pending if i not in s.rows]
    f.expect(not ghosts, f"pending still holds {ghosts}, with no row: a claim pops such an id and answers empty, "
             "minting nothing (the ghost guard), so it stands in front of the real job.")


@setup_for("02.3")
def _setup_empty_yet_not(conn: Connector, queue: str) -> tuple[Any, ...]:
    job_id = jobs.enqueue(conn, queue, "the job someone is waiting for")
    # two ids with no row, sorting before every minted id: what a hand-typed ZADD leaves behind
    conn.call("ZADD", keyspace.queue_key(queue, "pending"), 0, "JOB00000000000", 0, "JOB00000000001")
    jobs.pause(conn, queue)
    return (job_id,)


# -- 02.2 · build: renew a lease, judged by the checker ------------------------------------------------------------
@judged(
    "02.2",
    "Renew the lease, only while it is yours",
    "Hint: two things decide whether this caller still holds the job: the job is in active, and the row's "
    "attempts still equal the caller's token (a new claim raised it). Only then ZADD the active score to the "
    "server's TIME plus the lease, in milliseconds; else answer 0 and write nothing.",
    solution="02_2_renew_the_lease.py",
)
def _judge_renew_the_lease(answer: Any, f: Findings) -> None:
    judge_lease_extension(answer, f)
