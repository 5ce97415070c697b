"""Notebook 03 · completion and recovery: who can still settle, a recovery by hand, your queue's complete and retry,
the counted sweep, the metronome that stopped, your queue's recovery and its beat."""

from __future__ import annotations

import time
from typing import Any

from ... import ids, jobs, keyspace, snapshots, stalled
from ...connector import Connector
from .. import forms
from ..judges.stages import judge_stage
from ..my_queue.stages import stage as my_stage
from ..registry import Findings, exercise, judged, prediction, setup_for
from . import diagnosis


# -- 03.1 · diagnose: whose late completion would the fence let through? -----------------------------------------
@exercise(
    "03.1",
    "Who can still settle it?",
    "Hint: read each row's attempts and state, and put them beside the token that job's quiet worker holds. "
    "The fence lets a completion through when the token equals attempts and the row is active, whatever the "
    "job went through before: the row is all it reads.",
    solution="03_1_who_can_still_settle.py",
    kind="diagnose",
)
def _verify_who_can_still_settle(conn: Connector, queue: str, result: Any, args: tuple[Any, ...],
                                 f: Findings) -> None:
    (late,) = args
    if not diagnosis.untouched(conn, queue, f):
        return
    if not f.expect(isinstance(result, (set, frozenset, list, tuple)) and set(result) <= set(late),
                    f"return the set of ids (of the {len(late)} you were handed) whose late worker would settle "
                    f"the job; got {result!r}."):
        return
    rows = snapshots.snapshot(conn, queue).rows
    # the real answer: each quiet worker wakes now, and the node says whose completion it takes
    took = {i for i, token in late.items() if jobs.complete(conn, queue, i, token, "late") == jobs.OK}
    refused = sorted(set(result) - took)
    if refused:  # the first one explained, by its row; the others counted
        i, row = refused[0], rows.get(refused[0], {})
        more = f" ({len(refused) - 1} more you named were refused too)" if len(refused) > 1 else ""
        f.expect(False, f"{i}: its quiet worker holds token {late[i]}, and the row says attempts "
                 f"{row.get('attempts')}, state {row.get('state')}: the fence wants that very token and an "
                 f"active row, so the node refused it{more}.")
    missed = took - set(result)
    f.expect(not missed, f"{len(missed)} of the late workers the node let through are missing from your answer: "
             "a late completion passes when the row is active and its attempts equal that worker's token, "
             "whatever the job went through before.")


@setup_for("03.1")
def _setup_who_can_still_settle(conn: Connector, queue: str) -> tuple[Any, ...]:
    # minted up front, used highest first: a job enqueued later sorts before the ones left waiting in pending
    pool = sorted((ids.mint() for _ in range(5)), reverse=True)
    late: dict[str, int] = {}

    def claimed(payload: str, lease_ms: int = 30_000, job_id: str | None = None) -> jobs.Claimed:
        job = jobs.enqueue(conn, queue, payload, job_id=job_id or pool.pop(0))
        c = jobs.claim(conn, queue, lease_ms)
        assert c is not None and c.id == job
        return c

    def buried(c: jobs.Claimed) -> None:
        assert jobs.retry(conn, queue, c.id, c.attempts, "the mailer was down", max_attempts=1) == jobs.DEAD

    # reprocessed out of dead and claimed again: the first life's worker holds token 1
    c = claimed("reprocessed and claimed again")
    buried(c)
    jobs.reprocess(conn, queue, c.id)
    assert jobs.claim(conn, queue, 30_000).attempts == 2
    late[c.id] = 1
    # reprocessed and waiting in pending: the first life's worker holds the last token the row counted
    c = claimed("reprocessed, waiting")
    buried(c)
    jobs.reprocess(conn, queue, c.id)
    late[c.id] = 1
    # removed from dead and enqueued again under its own id by an operator, then claimed: a new row from 0
    c = claimed("removed and enqueued again under its id")
    buried(c)
    jobs.remove(conn, queue, c.id)
    assert claimed("removed and enqueued again under its id", job_id=c.id).attempts == 1
    late[c.id] = 1
    # failed once, promoted, claimed again: the first claim's worker holds token 1
    c = claimed("retried and claimed again")
    jobs.retry(conn, queue, c.id, c.attempts, "a timeout", delay_ms=1, max_attempts=3)
    time.sleep(0.01)
    assert jobs.promote(conn, queue) == [c.id]
    assert jobs.claim(conn, queue, 30_000).attempts == 2
    late[c.id] = 1
    # a lease that lapsed while its worker was quiet, and no sweep since
    c = claimed("lapsed, nobody swept", lease_ms=20)
    time.sleep(0.03)
    late[c.id] = c.attempts
    diagnosis.keep(conn, queue)
    return (late,)


# -- 03.2 · repair: a recovery made by hand ---------------------------------------------------------------------
@exercise(
    "03.2",
    "Recovered by hand",
    "Hint: compare the row with the set it is in. The fence reads the row, not the sets: what does the crashed "
    "worker's completion find there? A reap would have written one more field; write it, or put the job back "
    "where a reap finds it and let the reap do it.",
    solution="03_2_recovered_by_hand.py",
    kind="repair",
)
def _verify_recovered_by_hand(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    job_id, old_token = args
    s = snapshots.snapshot(conn, queue)
    row = s.rows.get(job_id)
    if not f.expect(row is not None, f"{job_id} has no row any more: bring the job back for its next worker, do "
                    "not complete or remove it (its work was never done)."):
        return
    f.expect(s.completed == 0, "nothing should be completed: a job no handler finished is not done.")
    where, state = s.where(job_id), row.get("state")
    f.expect(where == ["pending"], f"{job_id} should wait in pending for its next worker; it is in "
             f"{where or 'no set'}.")
    f.expect(state == "pending", f"its row says {state!r} while the job sits in {where or 'no set'}: a row's state "
             "names its set, and the fence reads the state.")
    f.expect(row.get("payload") == "resize the photo",
             f"its payload should be unchanged; it is {row.get('payload')!r}.")
    woke = jobs.complete(conn, queue, job_id, old_token, "late")  # the crashed worker wakes up
    if not f.expect(woke == jobs.STALE, f"the crashed worker woke and completed the job with its old token "
                    f"{old_token} ({woke!r}): its row still said active with attempts {old_token}, so the fence let it "
                    "through, for work it never finished"
                    + (", and the id it left in pending is now a ghost." if woke == jobs.OK else ".")):
        return
    c = jobs.claim(conn, queue, 30_000)
    f.expect(c is not None and c.id == job_id and c.attempts > old_token,
             f"the next claim should hand out {job_id} with a token above {old_token}; it answered {c!r}.")


@setup_for("03.2")
def _setup_recovered_by_hand(conn: Connector, queue: str) -> tuple[Any, ...]:
    job_id = jobs.enqueue(conn, queue, "resize the photo")
    crashed = jobs.claim(conn, queue, 20)
    assert crashed is not None
    time.sleep(0.03)
    # before any sweep ran, a colleague "recovered" it: out of active, into pending, nothing else
    conn.call("ZREM", keyspace.queue_key(queue, "active"), job_id)
    conn.call("ZADD", keyspace.queue_key(queue, "pending"), 0, job_id)
    return job_id, crashed.attempts


# -- 03.4 · predict the counted sweep, among other recoveries -----------------------------------------------------
ROUNDS = (
    "a worker dies holding it; a stall sweep",
    "a worker dies holding it; a reap",
    "its handler fails; a retry, then a promote",
    "a worker dies holding it; a stall sweep",
    "a worker dies holding it; a stall sweep",
)
MAX_STALLED = 2


@prediction(
    "03.4",
    "Predict the counted sweep",
    "Hint: which of the three recoveries writes the row's stalled field, and for what? Read @stalled_check and "
    "@reap (scripts.show) side by side, and @retry's first lines: is a handler's failure a lapse? Then count: a "
    "job is buried when its count goes over max_stalled, and a buried job is in no pending set.",
    solution="03_4_predict_the_sweep.py",
    form=forms.record({"where after each round": forms.Each(forms.words("pending", "active", "dead", "nowhere"), 5,
                                                            tuple(f"round {n}" for n in range(1, 6))),
                       "stalled count at the end": forms.Count()}),
    explain="only the counted sweep counts, and only a lapse: a reap forgives the lapse it returns, and a retry is "
    "no lapse at all. Rounds 1 and 4 count 1 and 2 (not over max_stalled=2: back to pending); round 5 counts 3, "
    "over the cap: buried in dead.",
)
def _run_predict_the_sweep(conn: Connector, queue: str) -> dict[str, Any]:
    job_id = jobs.enqueue(conn, queue, "a job whose workers keep dying")
    where_after: list[str] = []
    for rnd in ROUNDS:
        if rnd.startswith("its handler fails"):
            c = jobs.claim(conn, queue, 30_000)
            if c is not None:
                jobs.retry(conn, queue, c.id, c.attempts, "a timeout", delay_ms=1, max_attempts=10)
                time.sleep(0.01)
                jobs.promote(conn, queue)
        else:
            jobs.claim(conn, queue, 20)  # a worker that dies at once (answers None once the job is dead)
            time.sleep(0.03)
            if rnd.endswith("a reap"):
                jobs.reap(conn, queue)
            else:
                stalled.check(conn, queue, max_stalled=MAX_STALLED)
        where_after.append("/".join(snapshots.snapshot(conn, queue).where(job_id)) or "nowhere")
    row = snapshots.snapshot(conn, queue).rows.get(job_id, {})
    jobs.drop(conn, queue)  # the check's queue goes with its run
    return {"where after each round": where_after, "stalled count at the end": int(row.get("stalled", 0))}


# -- 03.5 · repair: what the consumers' metronome would have done --------------------------------------------------
#: how the consumers of 03.5's queue recover (their metronome stopped)
RECOVERY, MAX_STALLED_35 = "stalled", 2
_STOPPED: dict[str, dict[str, str]] = {}


@exercise(
    "03.5",
    "The metronome stopped",
    "Hint: read each job's set, its score against the server's clock (snapshots.snapshot(conn, queue).render()) "
    "and its row's stalled count. The pool's metronome would have promoted what is due and run its recovery leg, "
    "which here is the counted sweep with max_stalled=2, not a reap; and it leaves alone a lease that still runs "
    "and a retry not yet due.",
    solution="03_5_metronome_stopped.py",
    kind="repair",
)
def _verify_metronome_stopped(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    jobs_ = _STOPPED.pop(queue)
    s = snapshots.snapshot(conn, queue)
    f.expect(s.completed == 0, "nothing should be completed: bring jobs back for their next worker, not done.")
    row = {name: s.rows.get(i, {}) for name, i in jobs_.items()}
    where = {name: s.where(i) for name, i in jobs_.items()}
    due, later, once, twice, live = (jobs_[n] for n in ("due", "later", "once", "twice", "live"))
    f.expect(where["due"] == ["pending"], f"{due} failed and its retry is due: a promote brings it back; it is in "
             f"{where['due'] or 'no set'}.")
    f.expect(where["later"] == ["schedule"], f"{later} is not due for ten minutes: a promote leaves it, and moving it "
             f"early runs it again before its retry delay; it is in {where['later'] or 'no set'}.")
    stalls = row["once"].get("stalled")
    if where["once"] == ["dead"]:
        f.expect(False, f"{once} had stalled once; with max_stalled={MAX_STALLED_35} its second stall sends it "
                 "back to pending, and you buried it.")
    elif where["once"] == ["pending"]:
        f.expect(stalls == "2", f"{once} is back, but its row's stalled count says {stalls!r}: this queue's "
                 f"consumers recover with the counted sweep (recovery={RECOVERY!r}), which counts each lapse; "
                 "a reap forgives it.")
    else:
        f.expect(False, f"{once}'s lease lapsed: the recovery leg brings it back; it is in "
                 f"{where['once'] or 'no set'}.")
    f.expect(where["twice"] == ["dead"] and row["twice"].get("last_error") == "stalled",
             f"{twice} had stalled twice already: the counted sweep (max_stalled={MAX_STALLED_35}) buries it on its "
             f"third lapse, as a job that keeps killing its workers; it is in {where['twice'] or 'no set'}"
             + (" (a reap put it back, uncounted)." if where["twice"] == ["pending"]
                and row["twice"].get("stalled") == "2" else "."))
    f.expect(where["live"] == ["active"] and row["live"].get("attempts") == "1",
             f"{live}'s worker is still on it, its lease runs for half a minute more: nothing may take it back; it "
             f"is in {where['live'] or 'no set'}.")


@setup_for("03.5")
def _setup_metronome_stopped(conn: Connector, queue: str) -> tuple[Any, ...]:
    # minted up front, used highest first: a job enqueued later sorts before the ones waiting in pending
    pool = sorted((ids.mint() for _ in range(5)), reverse=True)
    twice, once = pool.pop(0), pool.pop(0)
    jobs.enqueue(conn, queue, "its handler kills its worker", job_id=twice)
    for _ in range(2):  # it stalled twice under the consumers' sweep, before their metronome stopped
        assert jobs.claim(conn, queue, 20).id == twice
        time.sleep(0.03)
        stalled.check(conn, queue, max_stalled=MAX_STALLED_35)
    jobs.enqueue(conn, queue, "its worker died once before", job_id=once)
    assert jobs.claim(conn, queue, 20).id == once
    time.sleep(0.03)
    stalled.check(conn, queue, max_stalled=MAX_STALLED_35)
    assert [jobs.claim(conn, queue, 20).id for _ in range(2)] == [once, twice]  # both workers die again
    live = pool.pop(0)
    jobs.enqueue(conn, queue, "a worker is on it", job_id=live)
    assert jobs.claim(conn, queue, 30_000).id == live
    due, later = pool.pop(0), pool.pop(0)
    for job_id, delay in ((due, 1), (later, 600_000)):
        jobs.enqueue(conn, queue, "failed once", job_id=job_id)
        assert jobs.claim(conn, queue, 30_000).id == job_id
        jobs.retry(conn, queue, job_id, 1, "the mailer was down", delay_ms=delay, max_attempts=5)
    time.sleep(0.03)  # the two short leases lapse, the first retry comes due
    _STOPPED[queue] = {"due": due, "later": later, "once": once, "twice": twice, "live": live}
    return ()


# -- 03.3 · your queue, stage 2: complete and retry, judged by the checker ----------------------------------------
@judged(
    "03.3",
    my_stage("03.3").title,
    "Hint: both open with the fence: HMGET the row's attempts and state; unless attempts is the caller's token "
    "AND the state is active, answer 0 before any write. complete.lua: ZREM it from active, XADD the ending to "
    "ARGV[3] .. 'stream:completions' when ARGV[6] is '1', DEL the row, answer 1. retry.lua: this life's tries are "
    "attempts minus prior_attempts (0 when absent), the cap is the row's max_attempts when it has one, else "
    "ARGV[4]; below the cap ZADD schedule at TIME's milliseconds plus ARGV[3] * 2 ^ (tries - 1), state scheduled; "
    "at it ZADD dead now, state dead, and XADD outcome dead when ARGV[8] is '1'. Both keep the reason as "
    "last_error.",
    solution="my_queue/03_3",
)
def _judge_stage_settle(answer: Any, f: Findings) -> None:
    judge_stage("03.3", answer, f)


# -- 03.6 · your queue, stage 3: recover, with a poison bound ---------------------------------------------------------
@judged(
    "03.6",
    my_stage("03.6").title,
    "Hint: the server's TIME in milliseconds is seconds * 1000 + microseconds // 1000; ZRANGEBYSCORE active -inf "
    "(now LIMIT 0 100 finds the lapsed leases, earliest first. For each, ZREM it from active and HMGET its row's "
    "attempts, prior_attempts and max_attempts (no row: it goes nowhere). Tries below the cap (its own, else "
    "ARGV[1]): ZADD pending 0, the row's state back to pending, attempts left alone. At the cap: ZADD dead now, "
    "the row's state dead, and one XADD with id, outcome stalled, attempts and error when ARGV[2] is '1'. Answer "
    "{moved back, buried}.",
    solution="my_queue/03_6",
)
def _judge_stage_recover(answer: Any, f: Findings) -> None:
    judge_stage("03.6", answer, f)


# -- 03.7 · your queue, stage 4: the beat ----------------------------------------------------------------------------
@judged(
    "03.7",
    my_stage("03.7").title,
    "Hint: queue.promote() and queue.recover() first, every beat, whatever the budget; then if not "
    "budget.take(): answer None; job = queue.claim(); None: budget.give_back() and answer None; else ok, value "
    "= handle(job) and answer queue.complete(job, value) if ok else queue.retry(job, value).",
    solution="my_queue/03_7",
)
def _judge_stage_beat(answer: Any, f: Findings) -> None:
    judge_stage("03.7", answer, f)
