"""Notebook 03 · completion and recovery: who can still settle, a recovery by hand, your queue's complete and retry,
the counted sweep, the metronome that stopped, your queue's recovery and its beat."""

from __future__ import annotations

import time
from typing import Any

from ... import jobs, keyspace, snapshots, stalled
from ...connector import Connector
from .. import forms
from ..judges.stages import stage_exercise
from ..registry import Calls, Findings, exercise, prediction, setup_for
from . import diagnosis, staging


# -- 03.1 · diagnose: whose late completion would the fence let through? -----------------------------------------
@exercise(
    "03.1",
    "Who can still settle it?",
    "Hint: the fence reads nothing but the job's row, as it is now: whatever the job went through before matters "
    "only through what it left there. Read @complete's first lines (scripts.show('complete')) for what it compares "
    "the token with.",
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
    # the real answer: each quiet worker wakes now, and the node says whose completion it takes
    took = {i for i, token in late.items() if jobs.complete(conn, queue, i, token, "late") == jobs.OK}
    refused = sorted(set(result) - took)
    if refused:  # the first one named; the others counted
        more = f" ({len(refused) - 1} more you named were refused too)" if len(refused) > 1 else ""
        f.expect(False, f"{refused[0]}: you named it, and the node refused its late worker's completion (token "
                 f"{late[refused[0]]}){more}.")
    missed = took - set(result)
    f.expect(not missed, f"{len(missed)} of the late workers the node let through are missing from your answer.")


def _bury(conn: Connector, queue: str, c: jobs.Claimed) -> None:
    assert jobs.retry(conn, queue, c.id, c.attempts, "the mailer was down", max_attempts=1) == jobs.DEAD


def _story_reprocessed_claimed(conn: Connector, queue: str, job: str) -> int:
    """Died, reprocessed, claimed again: the first life's worker holds token 1."""
    jobs.enqueue(conn, queue, "an invoice", job_id=job)
    _bury(conn, queue, staging.claim_this(conn, queue, job, 30_000))
    jobs.reprocess(conn, queue, job)
    staging.claim_this(conn, queue, job, 30_000)
    return 1


def _story_reprocessed_waiting(conn: Connector, queue: str, job: str) -> int:
    """Died, reprocessed, waiting in pending: the first life's worker holds the last token the row counted."""
    jobs.enqueue(conn, queue, "an invoice", job_id=job)
    c = staging.claim_this(conn, queue, job, 30_000)
    _bury(conn, queue, c)
    jobs.reprocess(conn, queue, job)
    return c.attempts


def _story_enqueued_again_claimed(conn: Connector, queue: str, job: str) -> int:
    """Died, removed by an operator, enqueued again under its own id and claimed: a new row, counted from 0."""
    jobs.enqueue(conn, queue, "an invoice", job_id=job)
    _bury(conn, queue, staging.claim_this(conn, queue, job, 30_000))
    jobs.remove(conn, queue, job)
    jobs.enqueue(conn, queue, "an invoice", job_id=job)
    staging.claim_this(conn, queue, job, 30_000)
    return 1


def _story_enqueued_again_waiting(conn: Connector, queue: str, job: str) -> int:
    """Died, removed, enqueued again under its own id, not claimed yet."""
    jobs.enqueue(conn, queue, "an invoice", job_id=job)
    _bury(conn, queue, staging.claim_this(conn, queue, job, 30_000))
    jobs.remove(conn, queue, job)
    jobs.enqueue(conn, queue, "an invoice", job_id=job)
    return 1


def _story_promoted_claimed(conn: Connector, queue: str, job: str) -> int:
    """Failed once, promoted, claimed again: the first claim's worker holds token 1."""
    jobs.enqueue(conn, queue, "an invoice", job_id=job)
    c = staging.claim_this(conn, queue, job, 30_000)
    jobs.retry(conn, queue, job, c.attempts, "a timeout", delay_ms=1, max_attempts=3)
    time.sleep(0.01)
    assert job in jobs.promote(conn, queue)
    staging.claim_this(conn, queue, job, 30_000)
    return 1


def _reaped_and_claimed(conn: Connector, queue: str, job: str, lease_ms: int) -> None:
    jobs.enqueue(conn, queue, "an invoice", job_id=job)
    staging.claim_this(conn, queue, job, 20)
    time.sleep(0.03)
    assert jobs.reap(conn, queue) == [job]  # no other lease has lapsed yet: these stories run first
    staging.claim_this(conn, queue, job, lease_ms)


def _story_reaped_first_worker(conn: Connector, queue: str, job: str) -> int:
    """Lapsed, reaped, claimed again by a worker still on it: the first worker holds token 1."""
    _reaped_and_claimed(conn, queue, job, 30_000)
    return 1


def _story_reaped_second_lapsed(conn: Connector, queue: str, job: str) -> int:
    """Lapsed, reaped, claimed again, and the second worker went quiet too, nobody swept since: it holds token 2."""
    _reaped_and_claimed(conn, queue, job, 20)
    return 2


def _story_lapsed(conn: Connector, queue: str, job: str) -> int:
    """A lease that lapsed while its worker was quiet, and no sweep since."""
    jobs.enqueue(conn, queue, "an invoice", job_id=job)
    return staging.claim_this(conn, queue, job, 20).attempts


#: the stories in the order they are built (a reap takes every lapsed lease: the reaps first, the bare lapses last),
#: each with how many times a check deals it, at least and at most. The ones the fence's rule turns on (an active row
#: with another token, a row not active, a row made again under the same id, a bare lapse) come at least once; the
#: number of jobs, and how many of them the fence lets through, change from one check to the next (a guess that
#: names a fixed share of the ids passes about one check in a hundred). The second reaped story comes at most once:
#: its short second lease would lapse under the next story's reap.
_STORIES_31 = ((_story_reaped_first_worker, 0, 2), (_story_reaped_second_lapsed, 0, 1),
               (_story_reprocessed_claimed, 1, 2), (_story_reprocessed_waiting, 1, 2),
               (_story_enqueued_again_claimed, 1, 2), (_story_enqueued_again_waiting, 0, 2),
               (_story_promoted_claimed, 0, 2), (_story_lapsed, 1, 3))


@setup_for("03.1")
def _setup_who_can_still_settle(conn: Connector, queue: str) -> tuple[Any, ...]:
    rng = staging.chance()
    order = [story for story, least, most in _STORIES_31 for _ in range(rng.randint(least, most))]
    late = {job: story(conn, queue, job) for story, job in zip(order, staging.dealt(len(order), rng))}
    time.sleep(0.03)  # the last short leases lapse
    diagnosis.keep(conn, queue)
    return (dict(sorted(late.items())),)  # by id: the order says nothing of the stories


# -- 03.2 · repair: recoveries made by hand ---------------------------------------------------------------------
@exercise(
    "03.2",
    "Recovered by hand",
    "Hint: the fence reads the row, not the sets. For each job, put what its row says beside what is true of it: "
    "the set it sits in, and how many claims it has had (its crashed worker's token counts one of them).",
    solution="03_2_recovered_by_hand.py",
    kind="repair",
)
def _verify_recovered_by_hand(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    (crashed,) = args
    s = snapshots.snapshot(conn, queue)
    f.expect(s.completed == 0, "nothing should be completed: a job no handler finished is not done.")
    back = []
    for job_id, old_token in crashed.items():
        row = s.rows.get(job_id)
        if not f.expect(row is not None, f"{job_id} has no row any more: bring the job back for its next worker, do "
                        "not complete or remove it (its work was never done)."):
            continue
        where, state = s.where(job_id), row.get("state")
        if not f.expect(where == ["pending"] and state == "pending",
                        f"{job_id} should wait in pending for its next worker; its row says {state!r} and it sits in "
                        f"{'/'.join(where) or 'no set'}."):
            continue
        f.expect(row.get("payload") == "resize the photo",
                 f"{job_id}'s payload should be unchanged; it is {row.get('payload')!r}.")
        counted = row.get("attempts", "")
        if not f.expect(counted.isdigit() and int(counted) >= old_token,
                        f"{job_id}'s row counts {counted!r} claims, and its crashed worker holds token {old_token}: "
                        "a later claim hands that token out again."):
            continue
        # more than it had is wrong too: each claim counted that never happened is a try the job loses at its cap
        if f.expect(int(counted) == old_token, f"{job_id}'s row counts {counted} claims, and it has had "
                    f"{old_token} (its crashed worker's was the last): a claim counted that never happened is a try "
                    "the job loses, and a retry buries it sooner."):
            back.append(job_id)
    if len(back) < len(crashed):
        return
    for job_id, old_token in crashed.items():
        woke = jobs.complete(conn, queue, job_id, old_token, "late")  # the crashed worker wakes up
        if not f.expect(woke == jobs.STALE, f"{job_id}'s crashed worker woke and completed the job with its old "
                        f"token {old_token} ({woke!r}), for work it never finished."):
            return
    for job_id, old_token in crashed.items():
        c = staging.claim_this(conn, queue, job_id, 30_000)
        woke = jobs.complete(conn, queue, job_id, old_token, "late")  # and again, once the next worker holds it
        f.expect(woke == jobs.STALE, f"the next claim handed out {job_id} with token {c.attempts}, and its crashed "
                 f"worker, waking then with token {old_token}, completed it ({woke!r}) under the new worker's feet.")


def _crash(conn: Connector, queue: str, job: str, claims: int) -> int:
    """``job`` claimed ``claims`` times, each worker gone (the earlier ones reaped): the last one's token."""
    jobs.enqueue(conn, queue, "resize the photo", job_id=job)
    for n in range(claims):
        c = staging.claim_this(conn, queue, job, 20)
        time.sleep(0.03)
        if n < claims - 1:
            assert jobs.reap(conn, queue) == [job]
    return c.attempts


def _by_hand(conn: Connector, queue: str, job: str, *, state: bool = False, attempts: bool = False) -> None:
    """A colleague's recovery: out of active, into pending at 0; the state, the attempts written or not."""
    conn.call("ZREM", keyspace.queue_key(queue, "active"), job)
    conn.call("ZADD", keyspace.queue_key(queue, "pending"), 0, job)
    if state:
        conn.call("HSET", keyspace.job_key(queue, job), "state", "pending")
    if attempts:  # "it never ran, so start it again from nothing"
        conn.call("HSET", keyspace.job_key(queue, job), "attempts", 0)


@setup_for("03.2")
def _setup_recovered_by_hand(conn: Connector, queue: str) -> tuple[Any, ...]:
    rng = staging.chance()
    # three jobs, each recovered by hand before any sweep ran: one with nothing else written, one with its state
    # set too and its attempts put back to 0, one with both its state and its attempts left alone; each crashed
    # holding its first or its second claim
    recoveries = ({}, {"state": True, "attempts": True}, {} if rng.random() < 0.5 else {"state": True})
    crashed = {}
    for job, how in zip(staging.dealt(3, rng), recoveries):  # one after another: each reap finds its one lease
        crashed[job] = _crash(conn, queue, job, rng.randint(1, 2))
        _by_hand(conn, queue, job, **how)
    return (dict(sorted(crashed.items())),)


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


# -- 03.5 · repair: what each pool's metronome would have done --------------------------------------------------
#: what each of 03.5's queues should hold once repaired, by the check's queue: {queue: {job: (set, stalled)}}
_STOPPED: dict[str, dict[str, dict[str, tuple[str, str | None]]]] = {}


@exercise(
    "03.5",
    "The metronome stopped",
    "Hint: a pool's settings are written nowhere but in what its metronome did before it stopped: the rows of the "
    "jobs it brought back or buried say how it recovers, and where it draws the line. Then, for each job, ask what "
    "one more of its ticks would have done, and to which jobs nothing would have happened.",
    solution="03_5_metronome_stopped.py",
    kind="repair",
)
def _verify_metronome_stopped(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    for q, want in _STOPPED.pop(queue).items():
        s = snapshots.snapshot(conn, q)
        f.expect(s.completed == 0, f"{q}: nothing should be completed: bring jobs back for their next worker.")
        for job, (where, stalls) in want.items():
            row = s.rows.get(job, {})
            now = ("/".join(s.where(job)) or "no set", row.get("stalled"))
            if not f.expect(now == (where, stalls),
                            f"{q}: {job} is in {now[0]} with a stall count of {now[1] or 'none'}; its pool's metronome "
                            f"would have left it in {where} with {stalls or 'none'}."):
                break  # one job per queue is enough to go on
            if where == "pending":
                f.expect(row.get("state") == "pending", f"{q}: {job} is in pending; its row says {row.get('state')!r}.")


def _lapse_round(conn: Connector, q: str, lapsing: list[str], cap: int | None) -> None:
    """Each of ``lapsing`` claimed by a worker that dies; then one tick of the pool's recovery leg."""
    for job in lapsing:
        staging.claim_this(conn, q, job, 20)
    time.sleep(0.03)
    back = jobs.reap(conn, q) if cap is None else stalled.check(conn, q, max_stalled=cap).requeued
    assert set(lapsing) >= set(back)


def _stopped_pool(conn: Connector, q: str, cap: int | None, over: bool, rng: Any) -> dict[str, tuple[str, str | None]]:
    """The queue a pool left when its metronome died (``cap`` None: a pool that reaps); what a tick would make."""
    due, later, live, seen, under, top = staging.dealt(6, rng)
    if cap is None:
        over = False
    for job in (seen, under, top) if over else (seen, under):
        jobs.enqueue(conn, q, "a job", job_id=job)
    if cap is None:
        # a job its reaps brought back once, waiting; another brought back once or twice, and claimed again
        for n in range(rng.randint(1, 2)):
            _lapse_round(conn, q, [seen, under] if n == 0 else [under], None)
        want = {seen: ("pending", None), under: ("pending", None)}
    else:
        # a job its sweeps buried, one lapse over the cap; one a lapse under the cap; maybe one right at it
        for n in range(1, cap + 2):
            _lapse_round(conn, q, [seen] + ([top] if over and n <= cap else []) + ([under] if n < cap else []), cap)
        want = {seen: ("dead", str(cap + 1)), under: ("pending", str(cap))}
        if over:
            want[top] = ("dead", str(cap + 1))
    for job, delay in ((due, 1), (later, 600_000)):
        jobs.enqueue(conn, q, "a job", job_id=job)
        c = staging.claim_this(conn, q, job, 30_000)
        jobs.retry(conn, q, job, c.attempts, "the mailer was down", delay_ms=delay, max_attempts=5)
    jobs.enqueue(conn, q, "a job", job_id=live)
    staging.claim_this(conn, q, live, 60_000)
    for job in (under, top) if over else (under,):  # workers that died after the metronome did
        staging.claim_this(conn, q, job, 20)
    want.update({due: ("pending", None), later: ("schedule", None), live: ("active", None)})
    return want


@setup_for("03.5")
def _setup_metronome_stopped(conn: Connector, queue: str) -> Calls:
    rng = staging.chance()
    caps = rng.sample((1, 2, 3), 2)
    overs = staging.shuffled([True, False], rng)
    settings = staging.shuffled([(None, False), (caps[0], overs[0]), (caps[1], overs[1])], rng)
    pools = {f"{queue}-{n}": _stopped_pool(conn, f"{queue}-{n}", cap, over, rng)
             for n, (cap, over) in enumerate(settings)}
    time.sleep(0.03)  # the last short leases lapse, the short retries come due
    _STOPPED[queue] = pools
    return Calls((q, ()) for q in pools)


# -- 03.3 · your queue, stage 2: complete and retry, judged by the checker ----------------------------------------
stage_exercise(
    "03.3",
    "Hint: a settle is a write only the job's holder may make: which two things on the row say a caller is "
    "still that holder, and what may a refused caller leave behind? For a retry, count only the tries of this "
    "life (a reprocess starts a new one), let a job's own cap win over the caller's, and record each ending "
    "once, in the same step as the write that ends the job.",
)


# -- 03.6 · your queue, stage 3: recover, with a poison bound ---------------------------------------------------------
stage_exercise(
    "03.6",
    "Hint: a lease has lapsed by the server's clock, not the caller's. For each lapsed lease ask: is the job "
    "still there at all; is this the lapse of its last try, and whose cap says so; and which set and state tell "
    "the truth about it afterwards, so that its old worker's settle is refused? A burial is an ending: scored and "
    "recorded when it happens, with the try it ended.",
)


# -- 03.7 · your queue, stage 4: the beat ----------------------------------------------------------------------------
stage_exercise(
    "03.7",
    "Hint: which work must a worker do on every beat, whether or not its budget has room for a job? And what "
    "does it owe its budget when a claim brings nothing? The handler says whether the job worked; each answer "
    "has its one settle.",
)
