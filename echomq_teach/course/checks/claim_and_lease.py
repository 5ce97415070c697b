"""Notebook 02 · claim and the lease: a late worker, your queue's claim and renewal, an empty queue that is not.

(A five-second lease, a paused claim and the ghost guard are worked examples in the notebook, not exercises.)
"""

from __future__ import annotations

import random
import secrets
import time
from typing import Any

from ... import ids, jobs, keyspace, snapshots
from ...connector import Connector
from .. import forms
from ..judges.stages import stage_exercise
from ..registry import Findings, exercise, prediction, setup_for

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
#: what 02.3's setup left, by queue: the ids in pending with no row, and the job waiting behind the real one
_EMPTY: dict[str, dict[str, Any]] = {}


@exercise(
    "02.3",
    "Empty, yet not empty",
    "Hint: an empty claim has more than one cause here. What does claim/3 read before it sends anything, and "
    "what does @claim2 do with an id it pops (scripts.show('claim2'))? Then look at pending, member by member.",
    solution="02_3_empty_yet_not.py",
    kind="repair",
)
def _verify_empty_yet_not(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    (job_id,) = args
    left = _EMPTY.pop(queue)
    ghosts, behind = left["ghosts"], left["behind"]
    if not f.expect(isinstance(result, tuple) and len(result) == 2,
                    f"return a pair: the ids you found in pending that are no job, and the claim that hands out "
                    f"{job_id}; got {result!r}."):
        return
    named, claimed = result
    s = snapshots.snapshot(conn, queue)
    f.expect(not s.paused, "the queue is still paused: the next claim answers empty whatever is pending.")
    f.expect(isinstance(claimed, jobs.Claimed) and claimed.id == job_id,
             f"the second of the pair should be the claim that handed out {job_id}; got {claimed!r}.")
    f.expect(s.where(job_id) == ["active"], f"the real job {job_id} should be claimed (active); it is in "
             f"{s.where(job_id) or 'no set'}.")
    f.expect(s.where(behind) == ["pending"] and s.rows.get(behind, {}).get("attempts") == "0",
             f"{behind}, the job waiting behind it, was not yours to take: it should still wait in pending, never "
             f"claimed; it is in {s.where(behind) or 'no set'}" + ("" if behind in s.rows else ", with no row") + ".")
    f.expect(set(s.rows) == {job_id, behind}, f"rows appeared for ids that were no job: "
             f"{sorted(set(s.rows) - {job_id, behind})}; a queue gets a job from an enqueue, never from a row "
             "written by hand.")
    still = [i for i in s.pending if i not in s.rows]
    f.expect(not still, f"pending still holds {len(still)} id{'s' if len(still) != 1 else ''} the queue has no "
             f"job for: the claims after yours will answer empty again.")
    named = set(named) if isinstance(named, (set, frozenset, list, tuple)) else named
    if f.expect(isinstance(named, set), f"the first of the pair should be a set of ids; got {named!r}."):
        f.expect(named <= ghosts, f"{len(named - ghosts)} of the ids you named as no job have a job: "
                 f"{sorted(named - ghosts)}.")
        f.expect(ghosts <= named, f"{len(ghosts - named)} of the ids in pending that were no job are missing from "
                 "your answer.")


@setup_for("02.3")
def _setup_empty_yet_not(conn: Connector, queue: str) -> tuple[Any, ...]:
    rng = random.Random(secrets.randbits(64))
    now_ms = time.time_ns() // 1_000_000
    # ids with no row, as a hand-typed ZADD leaves them: some before the real job, one between it and the job
    # waiting behind it; they look like any minted id
    before = {ids.id_at(now_ms - rng.randint(1_000, 3_600_000), rng.randint(0, 50)) for _ in range(rng.randint(1, 3))}
    job_id = jobs.enqueue(conn, queue, "the job someone is waiting for")
    between = ids.mint()
    behind = jobs.enqueue(conn, queue, "a job behind it")
    conn.call("ZADD", keyspace.queue_key(queue, "pending"), *[x for g in (*before, between) for x in (0, g)])
    jobs.pause(conn, queue)
    _EMPTY[queue] = {"ghosts": {*before, between}, "behind": behind}
    return (job_id,)


# -- 02.2 · your queue, stage 1: claim and renew, judged by the checker ----------------------------------------------
stage_exercise(
    "02.2",
    "Hint: for claim.lua, ask what makes a popped id a job you may hand out, and what @claim2 does when it is "
    "not: yours keeps looking, but not for ever. For renew.lua, ask the fence's question (does this caller still "
    "hold the job?) and read both halves of its answer from the node, never from the clock; the new deadline "
    "starts from the server's now, with the lease the caller asked for.",
)
