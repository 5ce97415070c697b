"""Notebook 02 · claim and the lease: a late worker, an empty queue that is not, a lease renewed.

(A five-second lease, a paused claim and the ghost guard are worked examples in the notebook, not exercises.)
"""

from __future__ import annotations

import random
import secrets
import time
from typing import Any

from ... import ids, jobs, keyspace, snapshots
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
