"""Notebook 02 · claim and the lease: a lease, a paused claim, a ghost, a late worker, an empty queue that is not."""

from __future__ import annotations

import time
from typing import Any

from ... import jobs, keyspace, snapshots
from ...connector import Connector
from ..judge import judge_lease_extension
from ..registry import Findings, exercise, judged, prediction, setup_for


@exercise(
    "02.1",
    "A five-second lease",
    "Hint: the lease is the one argument claim/3 takes after the queue, in milliseconds.",
    solution="02_1_five_second_lease.py",
    kind="build",
)
def _v021(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    (job_id,) = args
    s = snapshots.snapshot(conn, queue)
    if not f.expect(job_id in s.sets["active"], f"{job_id} should be in active; it is in {s.where(job_id)}."):
        return
    left = s.relative("active", job_id)
    f.expect(0 < left <= 5_000, f"the active score should be server now + 5000 ms; it is now {left:+d} ms.")
    f.expect(
        isinstance(result, jobs.Claimed) and result.attempts == 1,
        f"return the Claimed that jobs.claim answered; got {result!r}.",
    )


@setup_for("02.1")
def _s021(conn: Connector, queue: str) -> tuple[Any, ...]:
    return (jobs.enqueue(conn, queue, "lease me"),)


@exercise(
    "02.2",
    "Claim from a paused queue",
    "Hint: pausing is a call of its own in jobs; the claim after it is an ordinary one.",
    solution="02_2_paused_claim.py",
    kind="build",
)
def _v022(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    (job_id,) = args
    s = snapshots.snapshot(conn, queue)
    f.expect(s.paused, "the queue should be paused (emq:{q}:paused present).")
    f.expect(result is None, f"a paused queue's claim answers None (:empty); yours answered {result!r}.")
    f.expect(s.pending == [job_id], f"pending should still hold {job_id}, untouched; it holds {s.pending}.")


@setup_for("02.2")
def _s022(conn: Connector, queue: str) -> tuple[Any, ...]:
    return (jobs.enqueue(conn, queue, "wait for resume"),)


@exercise(
    "02.3",
    "Feed the ghost guard",
    "Hint: a ghost is a pending member with no row; the pending key is keyspace.queue_key(queue, 'pending'), "
    "and a pending score is 0.",
    solution="02_3_feed_the_ghost.py",
    kind="build",
)
def _v023(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    s = snapshots.snapshot(conn, queue)
    f.expect(result is None, f"a ghost head answers None (:empty); the claim answered {result!r}.")
    f.expect(not s.pending, f"the ghost should have been consumed by the pop; pending holds {s.pending}.")
    f.expect(not s.rows, f"the guard mints no row; the queue has rows for {sorted(s.rows)}.")
    sent = [e.line for e in conn.last(6)]
    f.expect(any("ZADD" in ln for ln in sent), "add the ghost yourself with a plain ZADD on pending (no row).")


# -- 02.4 · late, but not too late ---------------------------------------------------------------------
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
    "02.4",
    "Late, but not too late",
    "Hint: read the first lines of @complete (scripts.show('complete')): which two fields of the row does "
    "the fence compare, and does it read the clock at all?",
    solution="02_4_late_worker.py",
    shape=_late_shape,
    explain="@complete compares the caller's token with the row's attempts, and wants the row active; it never "
    "reads the clock. A lapsed lease nobody swept is still the caller's; a reap moved the row out of active; a "
    "new claim raised attempts past the first worker's token.",
)
def _r024(conn: Connector, queue: str, args: tuple[Any, ...]) -> dict[str, str]:
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


# -- 02.5 · empty, yet not empty ---------------------------------------------------------------------------
@exercise(
    "02.5",
    "Empty, yet not empty",
    "Hint: two different things answer an empty claim here. Look at what jobs.paused says, and at the first "
    "members of the pending set (ZRANGE … 0 2): does each of them have a row?",
    solution="02_5_empty_yet_not.py",
    kind="repair",
)
def _v025(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
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
    f.expect(not s.pending, f"the ghosts should be gone from pending; it holds {s.pending}.")


@setup_for("02.5")
def _s025(conn: Connector, queue: str) -> tuple[Any, ...]:
    job_id = jobs.enqueue(conn, queue, "the job someone is waiting for")
    # two ids with no row, sorting before every minted id: what a hand-typed ZADD leaves behind
    conn.call("ZADD", keyspace.queue_key(queue, "pending"), 0, "JOB00000000000", 0, "JOB00000000001")
    jobs.pause(conn, queue)
    return (job_id,)


# -- 02.6 · build: renew a lease, judged by the checker ------------------------------------------------------------
@judged(
    "02.6",
    "Renew the lease, only while it is yours",
    "Hint: two things decide whether this caller still holds the job: the job is in active, and the row's "
    "attempts still equal the caller's token (a new claim raised it). Only then ZADD the active score to the "
    "server's TIME plus the lease, in milliseconds; else answer 0 and write nothing.",
    solution="02_6_renew_the_lease.py",
)
def _j026(answer: Any, f: Findings) -> None:
    judge_lease_extension(answer, f)
