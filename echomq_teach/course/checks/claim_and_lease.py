"""Notebook 02 · claim and the lease: a late worker, your queue's claim and renewal, an empty queue that is not.

(A five-second lease, a paused claim and the ghost guard are worked examples in the notebook, not exercises.)
"""

from __future__ import annotations

import time
from typing import Any

from ... import jobs, keyspace, snapshots
from ...connector import Connector
from .. import forms
from ..judges.stages import judge_stage
from ..my_queue.stages import stage as my_stage
from ..registry import Findings, exercise, judged, prediction, setup_for

# -- 02.1 · late, but not too late ---------------------------------------------------------------------
B_CLAIMS = "B's claim, while A's lapsed lease is not swept"
A_REAPED = "A completes, after a reap and before anyone claims again"
B_TOKEN = "B's token, when it claims after that"
A_LATE = "A completes, after B's lease lapsed too (no sweep since)"
B_LATE = "B completes, after A's try (no sweep since)"
SETTLE = forms.words(jobs.OK, jobs.STALE)


@prediction(
    "02.1",
    "Late, but not too late",
    "Hint: read @claim2 (above) for where a claim takes its job from and what it raises, and the first lines of "
    "@complete (scripts.show('complete')): which two fields of the row does the fence compare, and does either "
    "script read a lease's deadline?",
    solution="02_1_late_worker.py",
    form=forms.record({B_CLAIMS: forms.words("the job", "nothing"), A_REAPED: SETTLE, B_TOKEN: forms.Count(1),
                       A_LATE: SETTLE, B_LATE: SETTLE}),
    explain="a lapsed lease moves nothing by itself: the job stays in active until a sweep, so B's first claim "
    "finds pending empty. @complete compares the caller's token with the row's attempts and wants the row "
    "active; it never reads the clock. After the reap the row is pending: A's token is still the row's own, "
    "yet A is refused. A refusal writes nothing, so B's claim raises attempts to 2. Then A's 1 is behind; B's 2 "
    "is the row's own and the row is active (no sweep ran since its lease lapsed), so B's passes.",
)
def _run_late_worker(conn: Connector, queue: str) -> dict[str, Any]:
    # one job, leases of 30 ms, each worker back 50 ms later
    job = jobs.enqueue(conn, queue, "one job, three tries")
    a = jobs.claim(conn, queue, 30)
    time.sleep(0.05)
    seen: dict[str, Any] = {B_CLAIMS: "nothing" if jobs.claim(conn, queue, 30) is None else "the job"}
    jobs.reap(conn, queue)
    seen[A_REAPED] = jobs.complete(conn, queue, job, a.attempts if a else 1)
    b = jobs.claim(conn, queue, 30)
    seen[B_TOKEN] = b.attempts if b else 0
    time.sleep(0.05)
    seen[A_LATE] = jobs.complete(conn, queue, job, a.attempts if a else 1)
    seen[B_LATE] = jobs.complete(conn, queue, job, b.attempts if b else 2)
    jobs.drop(conn, queue)  # the check's queue goes with its run
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


# -- 02.2 · your queue, stage 1: claim and renew, judged by the checker ----------------------------------------------
@judged(
    "02.2",
    my_stage("02.2").title,
    "Hint: claim.lua is a loop of at most ten turns: ZPOPMIN pending; nothing popped, answer {}; the row is "
    "KEYS[3] .. 'job:' .. id, and when it EXISTS, HINCRBY its attempts by 1 (the token), HSET its state active, "
    "ZADD active with TIME's milliseconds plus ARGV[1], and answer {id, payload, token}; when it does not, go "
    "round. renew.lua: two things say the caller still holds the job, its ZSCORE in active and the row's "
    "attempts equal to the caller's token; only then ZADD active XX with TIME's milliseconds plus ARGV[3] and "
    "answer 1; else answer 0 and write nothing.",
    solution="my_queue/02_2",
)
def _judge_stage_claim(answer: Any, f: Findings) -> None:
    judge_stage("02.2", answer, f)
