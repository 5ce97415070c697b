"""Notebook 03 · completion and recovery: the morgue, a crashed worker, the counted sweep, two stuck jobs."""

from __future__ import annotations

import time
from typing import Any

from ... import jobs, snapshots, stalled
from ...connector import Connector
from ..judge import judge_reap
from ..registry import Findings, exercise, judged, keyed_dict, prediction, setup_for


@exercise(
    "03.1",
    "Into the morgue",
    "Hint: the cap counts claims. Between the two failures the job sits on schedule until its run-at; "
    "only a promote after that brings it back to be claimed again.",
    solution="03_1_into_the_morgue.py",
    kind="build",
)
def _v031(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    (job_id,) = args
    s = snapshots.snapshot(conn, queue)
    where = s.where(job_id) or "no set"
    if not f.expect(s.where(job_id) == ["dead"], f"{job_id} should be in dead; it is in {where}."):
        return
    r = s.rows[job_id]
    f.expect(r.get("attempts") == "2", f"attempts should equal the cap, 2; it is {r.get('attempts')}.")
    f.expect(bool(r.get("last_error")), "the dead row should carry a last_error.")


@setup_for("03.1")
def _s031(conn: Connector, queue: str) -> tuple[Any, ...]:
    return (jobs.enqueue(conn, queue, "doomed"),)


@exercise(
    "03.2",
    "Recover a crashed worker's job",
    "Hint: nothing moves a lapsed lease but a client's sweep; after it, the job is claimable again, and the "
    "old token is no longer the one the fence wants.",
    solution="03_2_recover.py",
    kind="repair",
)
def _v032(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    job_id, old_token = args
    s = snapshots.snapshot(conn, queue)
    f.expect(not s.where(job_id), f"{job_id} should be settled; it is still in {s.where(job_id)}.")
    f.expect(s.completed == 1, f"metrics:completed should count 1; it counts {s.completed}.")
    reaped = any(e.script == "@reap" and e.reply for e in conn.last(20))
    f.expect(reaped, "the lapsed lease must come back through @reap (a client sweep), not by waiting.")


@setup_for("03.2")
def _s032(conn: Connector, queue: str) -> tuple[Any, ...]:
    job_id = jobs.enqueue(conn, queue, "worker crashed on me")
    claimed = jobs.claim(conn, queue, 50)
    assert claimed is not None
    return job_id, claimed.attempts


# -- 03.3 · predict the counted sweep ----------------------------------------------------------------------
ROUNDS = 3
MAX_STALLED = 2


@prediction(
    "03.3",
    "Predict the counted sweep",
    "Hint: each sweep adds one to the row's stalled count for a lapsed lease; the job is buried only when "
    "the count goes OVER max_stalled. A buried job is in no pending set, so the next round's claim finds nothing.",
    solution="03_3_predict_the_sweep.py",
    shape=keyed_dict(("where after each round", "stalled count at the end")),
)
def _r033(conn: Connector, queue: str, args: tuple[Any, ...]) -> dict[str, Any]:
    (job_id,) = args
    where_after: list[str] = []
    for _ in range(ROUNDS):
        jobs.claim(conn, queue, 20)  # a worker that dies at once (answers None once the job is dead)
        time.sleep(0.03)
        stalled.check(conn, queue, max_stalled=MAX_STALLED)
        where_after.append("/".join(snapshots.snapshot(conn, queue).where(job_id)) or "nowhere")
    row = snapshots.snapshot(conn, queue).rows.get(job_id, {})
    return {"where after each round": where_after, "stalled count at the end": int(row.get("stalled", 0))}


@setup_for("03.3")
def _s033(conn: Connector, queue: str) -> tuple[Any, ...]:
    return (jobs.enqueue(conn, queue, "a job whose workers keep dying"),)


# -- 03.4 · two stuck jobs -----------------------------------------------------------------------------------
_STUCK: dict[str, dict[str, str]] = {}


@exercise(
    "03.4",
    "Two stuck jobs",
    "Hint: look at which set each id is in and at its score against server now (snapshots.snapshot(conn, "
    "queue).render()). One set is emptied of due members by promote/3, the other of lapsed leases by reap/2.",
    solution="03_4_unstick.py",
    kind="repair",
)
def _v034(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
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


@setup_for("03.4")
def _s034(conn: Connector, queue: str) -> tuple[Any, ...]:
    parked = jobs.enqueue(conn, queue, "failed once, due again")
    c = jobs.claim(conn, queue, 30_000)
    jobs.retry(conn, queue, c.id, c.attempts, "the mailer was down", delay_ms=1, max_attempts=5)
    lapsed = jobs.enqueue(conn, queue, "its worker vanished")
    jobs.claim(conn, queue, 20)
    time.sleep(0.03)
    _STUCK[queue] = {parked: "promote", lapsed: "reap"}
    return (sorted([parked, lapsed]),)


# -- 03.5 · build: your own reap, judged by the checker under worker kills ----------------------------------------
@judged(
    "03.5",
    "Your own reap",
    "Hint: the server's TIME in milliseconds is seconds * 1000 + microseconds // 1000; ZRANGEBYSCORE active "
    "-inf (now LIMIT 0 N finds the lapsed leases, earliest first. For each: ZREM from active, ZADD pending 0, "
    "and the row's state back to pending. Leave attempts alone: the next claim raises it, and that new token "
    "is what the dead worker's settle will not match.",
    solution="03_5_your_own_reap.py",
)
def _j035(answer: Any, f: Findings) -> None:
    judge_reap(answer, f)
