"""Notebook 03 · completion and recovery: out of the morgue, a crashed worker, a reap that stops a poison job, the
counted sweep, two stuck jobs."""

from __future__ import annotations

import time
from typing import Any

from ... import jobs, snapshots, stalled
from ...connector import Connector
from ..judges.reap import judge_reap
from ..registry import Findings, exercise, judged, keyed_dict, prediction, setup_for


# -- 03.1 · repair: out of the morgue --------------------------------------------------------------------------
@exercise(
    "03.1",
    "Out of the morgue",
    "Hint: an operator's call sends a dead job back for a new life without touching attempts (notebook 03, "
    "after the failure fork). A job enqueued again under its old id starts at attempts 0, and its claims "
    "hand out tokens the first life already used.",
    solution="03_1_out_of_the_morgue.py",
    kind="repair",
)
def _verify_out_of_the_morgue(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    job_id, old_token = args
    s = snapshots.snapshot(conn, queue)
    row = s.rows[job_id]  # no row: the check says the queue is in a shape no transition makes
    if not f.expect(s.where(job_id) == ["pending"], f"{job_id} should be back in pending; it is in "
                    f"{s.where(job_id) or 'no set'}."):
        return
    f.expect(row.get("state") == "pending", f"its row should say pending; it says {row.get('state')!r}.")
    f.expect(row.get("payload") == "send the invoice",
             f"its payload should be unchanged; it is {row.get('payload')!r}.")
    f.expect(len(s.rows) == 1, f"one job only: the queue holds rows for {sorted(s.rows)}.")
    # the new life's first claim, and the first life's worker waking up late with its token
    c = jobs.claim(conn, queue, 30_000)
    if not f.expect(c is not None and c.id == job_id, f"the next claim should hand out {job_id}; it answered {c!r}."):
        return
    if not f.expect(c.attempts > old_token, f"the new life's first claim handed out token {c.attempts}, and the "
                    f"first life's claims handed out tokens 1 … {old_token}: a token is used again once the new life "
                    "reaches it, and a late worker of the first life holding it would pass the fence."):
        return
    late = jobs.complete(conn, queue, job_id, old_token, "late")
    f.expect(late == jobs.STALE, f"the first life's late worker (token {old_token}) completed it ({late!r}).")


@setup_for("03.1")
def _setup_out_of_the_morgue(conn: Connector, queue: str) -> tuple[Any, ...]:
    job_id = jobs.enqueue(conn, queue, "send the invoice")
    token = 0
    for reason in ("the mailer was down", "the mailer is still down"):
        c = jobs.claim(conn, queue, 30_000)
        assert c is not None
        token = c.attempts
        jobs.retry(conn, queue, job_id, token, reason, delay_ms=1, max_attempts=2)
        time.sleep(0.005)
        jobs.promote(conn, queue)
    assert snapshots.snapshot(conn, queue).where(job_id) == ["dead"]
    return job_id, token


@exercise(
    "03.2",
    "Recover a crashed worker's job",
    "Hint: nothing moves a lapsed lease but a client's sweep; after it, the job is claimable again, and the "
    "old token is no longer the one the fence wants.",
    solution="03_2_recover.py",
    kind="repair",
)
def _verify_recover(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    job_id, old_token = args
    s = snapshots.snapshot(conn, queue)
    f.expect(not s.where(job_id), f"{job_id} should be settled; it is still in {s.where(job_id)}.")
    f.expect(s.completed == 1, f"metrics:completed should count 1; it counts {s.completed}.")
    reaped = any(e.script == "@reap" and e.reply for e in conn.last(20))
    f.expect(reaped, "the lapsed lease must come back through @reap (a client sweep), not by waiting.")


@setup_for("03.2")
def _setup_recover(conn: Connector, queue: str) -> tuple[Any, ...]:
    job_id = jobs.enqueue(conn, queue, "worker crashed on me")
    claimed = jobs.claim(conn, queue, 50)
    assert claimed is not None
    return job_id, claimed.attempts


# -- 03.4 · predict the counted sweep ----------------------------------------------------------------------
ROUNDS = 3
MAX_STALLED = 2


@prediction(
    "03.4",
    "Predict the counted sweep",
    "Hint: each sweep adds one to the row's stalled count for a lapsed lease; the job is buried only when "
    "the count goes OVER max_stalled. A buried job is in no pending set, so the next round's claim finds nothing.",
    solution="03_4_predict_the_sweep.py",
    shape=keyed_dict(("where after each round", "stalled count at the end")),
)
def _run_predict_the_sweep(conn: Connector, queue: str, args: tuple[Any, ...]) -> dict[str, Any]:
    (job_id,) = args
    where_after: list[str] = []
    for _ in range(ROUNDS):
        jobs.claim(conn, queue, 20)  # a worker that dies at once (answers None once the job is dead)
        time.sleep(0.03)
        stalled.check(conn, queue, max_stalled=MAX_STALLED)
        where_after.append("/".join(snapshots.snapshot(conn, queue).where(job_id)) or "nowhere")
    row = snapshots.snapshot(conn, queue).rows.get(job_id, {})
    return {"where after each round": where_after, "stalled count at the end": int(row.get("stalled", 0))}


@setup_for("03.4")
def _setup_predict_the_sweep(conn: Connector, queue: str) -> tuple[Any, ...]:
    return (jobs.enqueue(conn, queue, "a job whose workers keep dying"),)


# -- 03.5 · two stuck jobs -----------------------------------------------------------------------------------
_STUCK: dict[str, dict[str, str]] = {}


@exercise(
    "03.5",
    "Two stuck jobs",
    "Hint: look at which set each id is in and at its score against server now (snapshots.snapshot(conn, "
    "queue).render()). One set is emptied of due members by promote/3, the other of lapsed leases by reap/2.",
    solution="03_5_unstick.py",
    kind="repair",
)
def _verify_unstick(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    (stuck,) = args
    truth = _STUCK.pop(queue)
    s = snapshots.snapshot(conn, queue)
    for job_id in stuck:
        f.expect(s.where(job_id) == ["pending"], f"{job_id} should be back in pending; it is in {s.where(job_id)}.")
        f.expect(s.completed == 0, "bring them back, do not complete them: the next worker will.")
    if f.expect(
        isinstance(result, dict) and set(result) == set(stuck),
        f"return a dict from each stuck id to the call that freed it; got {result!r}.",
    ):
        for job_id in stuck:
            f.expect(result[job_id] == truth[job_id], f"{job_id}: {result[job_id]!r} is not the call that frees it.")
    sent = {e.script for e in conn.last(20)}
    f.expect({"@promote", "@reap"} <= sent, "each job comes back by its own sweep: @promote and @reap.")


@setup_for("03.5")
def _setup_unstick(conn: Connector, queue: str) -> tuple[Any, ...]:
    parked = jobs.enqueue(conn, queue, "failed once, due again")
    c = jobs.claim(conn, queue, 30_000)
    jobs.retry(conn, queue, c.id, c.attempts, "the mailer was down", delay_ms=1, max_attempts=5)
    lapsed = jobs.enqueue(conn, queue, "its worker vanished")
    jobs.claim(conn, queue, 20)
    time.sleep(0.03)
    _STUCK[queue] = {parked: "promote", lapsed: "reap"}
    return (sorted([parked, lapsed]),)


# -- 03.3 · build: your own reap, judged by the checker under worker kills ----------------------------------------
@judged(
    "03.3",
    "A reap that stops a poison job",
    "Hint: the server's TIME in milliseconds is seconds * 1000 + microseconds // 1000; ZRANGEBYSCORE active -inf "
    "(now LIMIT 0 N finds the lapsed leases, earliest first. For each, ZREM it from active and read its row's "
    "attempts. Below the cap: ZADD pending 0, the row's state back to pending, attempts left alone (the next "
    "claim raises it). At the cap: ZADD dead now, the row's state dead, and one XADD to the stream with id, "
    "outcome stalled, attempts and error. Answer {moved back, buried}.",
    solution="03_3_your_own_reap.py",
)
def _judge_your_own_reap(answer: Any, f: Findings) -> None:
    judge_reap(answer, f)
