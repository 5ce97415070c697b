"""02.2 · your queue, stage 1: claim and renew, judged.

``claim.lua`` runs in the place of the kit's ``@claim2`` (its keys, arguments and reply), with one thing the
kit's claim does not do: a ghost at the head of pending (an id with no row) is dropped and the claim goes on to
the next id, at most ten ids a call, so that a claim answers empty only when no job can be handed out within
reach. ``renew.lua`` is the lease extension a handler calls while it outlives its lease: 1 and the deadline
moved to the server's now plus the lease while the caller holds the job (in active, its token the row's
attempts), else 0 and nothing written.

The probes: the claim on an empty queue, on two jobs (oldest first, the token, the deadline on the server's
clock, the row active), behind two ghosts and behind eleven; a zombie recorded as a run records it (claimed,
lapsed, swept, claimed again, then the first worker completes late), read by the checker; then the renewal
for six callers whose answers are known (two of them after their handler's retry sent the job to schedule or
dead, the token unchanged). The judged run: three worker processes claim with your claim.lua
and run handlers that work 2 s on a 1.5 s lease, renewing every 100 ms by your renew.lua, under a seeded
nemesis of freezes and kills.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ... import jobs, keyspace, snapshots, transitions
from ...lab.history import History, Op
from ...lab.nemesis import Nemesis
from ...lab.run import Run
from ..registry import Findings
from .frame import call_script, lapsed_under_healthy, server_ms, state_holds, unchanged
from .queue import Loaded, failed_in, judged_run, probing, ran_clean, run_folder, scenario


class LEASE:
    """The judged run of 02.2: handlers that work 2× their lease, renewing it every ``EVERY_MS``."""

    # a healthy handler loses its lease only if its worker stalls 1.4 s between two renewals: a loaded
    # machine's pauses are shorter than that (at 900 ms, one try in 30 lost one at load 26)
    LEASE_MS = 1_500
    EVERY_MS = 100
    WORK_MS = 2_000
    WORKERS = 3
    JOBS = 6
    SEEDS = 2
    DEADLINE_S = 10.0
    #: how many ids one claim may pop
    REACH = 10

    @staticmethod
    def nemesis(seed: int) -> Nemesis:
        # one freeze in every schedule, early and longer than the lease (a zombie), thawed before the job's
        # new holder is done with it; the other fault a freeze or a kill, as the seed draws
        return Nemesis(seed=seed, kinds=("freeze", "kill"), count=2, must=("freeze",), gap_s=(0.1, 0.3),
                       freeze_s=(1.8, 2.0))


SEEDS, DEADLINE_S = LEASE.SEEDS, LEASE.DEADLINE_S


def _handler_module(folder: Path, sha: str) -> str:
    """The workers' handler, bound to your loaded renew.lua: a module in the run's folder."""
    (folder / "judge_lease_extension.py").write_text(
        "# written by echomq_teach.course.judges.stage_claim for one judged run\n"
        "from echomq_teach.lab.handlers import renewing\n\n\n"
        "def handler(job, ctx):\n"
        f"    return renewing(job, ctx, {sha!r}, {LEASE.LEASE_MS}, {LEASE.EVERY_MS})\n"
    )
    return "judge_lease_extension:handler"


# -- the claim's probes ---------------------------------------------------------------------------------------
def _ghosts(conn: Any, queue: str, n: int) -> list[str]:
    """``n`` ghosts at the head of pending: ids with no row, sorting before every minted id."""
    ghosts = [f"JOB000000gh{i:03d}" for i in range(n)]
    conn.call("ZADD", keyspace.queue_key(queue, "pending"), *[x for g in ghosts for x in (0, g)])
    return ghosts


def _claim(conn: Any, queue: str, lease_ms: int, f: Findings, when: str) -> tuple[bool, jobs.Claimed | None]:
    try:
        return True, jobs.claim(conn, queue, lease_ms)
    except Exception as exc:  # noqa: BLE001 - your claim.lua's runtime error: a finding naming its line
        return failed_in("claim.lua", when, exc, f), None


def _claims_oldest(conn: Any, queue: str, f: Findings) -> bool:
    """Two jobs: the claim hands out the older, its token 1, its row active, its deadline the server's now plus
    the lease, its payload as it was enqueued."""
    first = jobs.enqueue(conn, queue, "the older job")
    jobs.enqueue(conn, queue, "the newer job")
    lo = server_ms(conn)
    ok, c = _claim(conn, queue, 30_000, f, "on a queue of two jobs")
    hi = server_ms(conn)
    if not ok:
        return False
    if not f.expect(c is not None and c.id == first and c.payload == "the older job",
                    f"two jobs wait, enqueued one after the other: your claim should hand out the older, {first} "
                    f"with its payload; it answered {c!r}."):
        return False
    assert c is not None
    if not state_holds(conn, queue, f, "after your claim handed out a job"):
        return False
    s = snapshots.snapshot(conn, queue)
    score = conn.call("ZSCORE", keyspace.queue_key(queue, "active"), first)
    return (f.expect(c.attempts == 1 and s.rows[first].get("attempts") == "1",
                     f"a job's first claim answers token 1, its row's attempts raised from 0 to 1; your claim "
                     f"answered token {c.attempts}, the row says attempts {s.rows[first].get('attempts')!r}.")
            and f.expect(score is not None and lo + 30_000 - 1 <= float(score) <= hi + 30_000 + 1,
                         f"claimed with a 30 s lease, the job's score in active (its deadline) should be the server's "
                         f"TIME now, in milliseconds, plus 30000; it is {score!r}, "
                         f"{'' if score is None else f'{float(score) - hi:.0f} ms from now'}."))


def _claims_past_ghosts(conn: Any, queue: str, f: Findings) -> bool:
    """Behind two ghosts, a real job is handed out by one claim and the ghosts are gone; behind eleven, one
    claim pops ten and answers empty, and the next one reaches the job."""
    jobs.drop(conn, queue)
    real = jobs.enqueue(conn, queue, "waiting behind two ghosts")
    _ghosts(conn, queue, 2)
    ok, c = _claim(conn, queue, 30_000, f, "behind two ghosts")
    if not ok:
        return False
    left = snapshots.snapshot(conn, queue).pending
    if not f.expect(c is not None and c.id == real and left == [],
                    f"pending holds two ghosts (ids with no row) and then job {real}: one call of your claim should "
                    f"drop both ghosts and hand out {real}; it answered {c!r}, and pending still holds {left}. "
                    "(The kit's @claim2 answers empty at a ghost; yours goes on to the next id.)"):
        return False
    if not state_holds(conn, queue, f, "after your claim went past two ghosts"):
        return False
    jobs.drop(conn, queue)
    real = jobs.enqueue(conn, queue, "waiting behind eleven ghosts")
    ghosts = _ghosts(conn, queue, LEASE.REACH + 1)
    ok, c = _claim(conn, queue, 30_000, f, "behind eleven ghosts")
    if not ok:
        return False
    left = snapshots.snapshot(conn, queue).pending
    if not f.expect(c is None and left == [ghosts[-1], real],
                    f"pending holds eleven ghosts and then job {real}: one call may pop at most {LEASE.REACH} ids, "
                    f"so it answers empty and leaves the eleventh ghost and the job; your claim answered {c!r} and "
                    f"left {len(left)} ids in pending."):
        return False
    ok, c = _claim(conn, queue, 30_000, f, "behind the one ghost left")
    return ok and f.expect(c is not None and c.id == real,
                           f"the next claim should drop the last ghost and hand out {real}; it answered {c!r}.")


def _zombie_refused(node: Any, loaded: Loaded, f: Findings) -> bool:
    """Recorded: w1 claims on a 20 ms lease and stalls; a sweep puts the job back; w2 claims it; w1 wakes and
    completes with its token, then w2 completes. The checker reads the history: valid only when w2's claim
    moved the token past w1's (so the fence refused w1) and both claims were recorded as the node answered."""
    with scenario(node, loaded, "probe-claim-zombie") as s:
        job = s.enqueue("contested")
        try:
            first = s.claim("w1", 20)
            time.sleep(0.04)
            s.reap()
            second = s.claim("w2", 30_000)
        except Exception as exc:  # noqa: BLE001 - your claim.lua's runtime error
            return failed_in("claim.lua", "when two workers claimed one job in turn", exc, f)
        if not f.expect(first is not None and second is not None and first.id == second.id == job,
                        f"one job, claimed, its lease lapsed and swept back, claimed again: both claims should hand "
                        f"out {job}; yours answered {first!r} and {second!r}."):
            return False
        assert first is not None and second is not None
        s.complete("w1", job, first.attempts, "late")
        s.complete("w2", job, second.attempts, "on time")
        said = ("a job claimed by w1 on a 20 ms lease, swept back after it lapsed, claimed by w2; then w1 woke and "
                "completed with its token")
        return s.valid(said, f) and f.expect(second.attempts == first.attempts + 1,
                                              f"{said}: w2's claim should answer token {first.attempts + 1}, one "
                                              f"more than w1's; it answered {second.attempts}.")


def _claim_probes(node: Any, loaded: Loaded, f: Findings) -> bool:
    queue = "probe-claim"
    with probing(node, loaded, queue) as conn:
        ok, c = _claim(conn, queue, 30_000, f, "on an empty queue")
        if not (ok and f.expect(c is None, f"nothing is pending: your claim should answer empty ({{}}); it answered "
                                f"{c!r}.")):
            return False
        return (_claims_oldest(conn, queue, f) and _claims_past_ghosts(conn, queue, f)
                and _zombie_refused(node, loaded, f))


# -- the renewal's probes ---------------------------------------------------------------------------------------
def _keys(queue: str, job: str) -> list[str]:
    return [keyspace.queue_key(queue, "active"), keyspace.job_key(queue, job)]


def _renews_from_now(conn: Any, sha: str, queue: str, c: jobs.Claimed, lease_ms: int, f: Findings, who: str) -> bool:
    """``who`` holds the job: the script answers 1 and sets the deadline to the server's now plus ``lease_ms``
    (ARGV[3]: each probe asks for a lease of its own, none the judged run's, so a lease written into the script
    fails)."""
    lo = server_ms(conn)
    ok, reply = call_script(conn, sha, _keys(queue, c.id), [c.id, c.attempts, lease_ms], f, f"when {who} renewed")
    hi = server_ms(conn)
    if not ok:
        return False
    if not f.expect(reply == 1, f"your renew.lua answered {reply!r} to {who}: the caller still holds the job (its "
                    "token is the row's attempts, and the job is in active), so answer 1 and renew it."):
        return False
    score = conn.call("ZSCORE", keyspace.queue_key(queue, "active"), c.id)
    if score is None:
        f.expect(False, f"renewed for {who}, the job is no longer in active: a renewal moves its deadline, it "
                 "never takes it out.")
        return False
    ahead = int(float(score)) - hi
    return f.expect(lo + lease_ms - 1 <= float(score) <= hi + lease_ms + 1,
                    f"your renew.lua renewed the lease of {who} to a deadline {ahead} ms from the server's clock now; "
                    f"renewed by {lease_ms} ms (its ARGV[3]), it should be {lease_ms} ms from now: the new deadline "
                    "is the server's TIME now plus the lease the caller asks for (not the old deadline plus the "
                    "lease, nor the lease alone, nor a lease of your own).")


def _refuses(conn: Any, sha: str, queue: str, job: str, token: int, f: Findings, who: str) -> bool:
    """``who`` no longer holds the job: the script answers 0 and writes nothing; the queue keeps the table."""
    before = snapshots.snapshot(conn, queue)
    ok, reply = call_script(conn, sha, _keys(queue, job), [job, token, LEASE.LEASE_MS], f, f"when {who} renewed")
    if not ok:
        return False
    said = f"called by {who}"
    if not f.expect(reply in (0, 1), f"your renew.lua answered {reply!r} to {who}: answer 1 when it renews the lease, "
                    "0 when it does not."):
        return False
    if not state_holds(conn, queue, f, f"after your renew.lua was {said}"):
        return False
    return (f.expect(reply == 0, f"your renew.lua answered 1 to {who}: that caller no longer holds the job, so "
                     "answer 0, and renew nothing.")
            and unchanged(conn, queue, before, f, f"your renew.lua answered 0 {said}"))


def _renew_probes(conn: Any, sha: str, f: Findings) -> bool:
    """The script on four callers whose answers are known, each on a job of its own: the holder (renewed from
    the server's now), a stale token, the gap (a lease lapsed and swept, no claim since: the old holder's token
    is still the row's attempts, but the job is in pending), and a lapsed lease no sweep has touched (still
    its holder's); then two renewals after their handler's retry (``_settled_refused``)."""
    queue = "judge-dry"
    jobs.drop(conn, queue)
    jobs.enqueue(conn, queue, "a job to renew")
    held = jobs.claim(conn, queue, 30_000)
    assert held is not None
    if not _renews_from_now(conn, sha, queue, held, 7_000, f, "the job's holder (its 30 s lease still running)"):
        return False
    if not _refuses(conn, sha, queue, held.id, held.attempts + 1, f, "a caller with a stale token (a later claim's)"):
        return False
    # the gap: lapsed, swept back to pending, not claimed again yet
    jobs.enqueue(conn, queue, "a job whose lease lapses")
    lapsed = jobs.claim(conn, queue, 20)
    assert lapsed is not None
    time.sleep(0.04)
    if jobs.reap(conn, queue) != [lapsed.id]:
        raise RuntimeError("the dry run's lapsed lease was not reaped")
    if not _refuses(conn, sha, queue, lapsed.id, lapsed.attempts, f, "a worker that woke after a sweep took its "
                    "lapsed lease back to pending (no claim since, so its token is still the row's attempts)"):
        return False
    jobs.drop(conn, queue)
    jobs.enqueue(conn, queue, "a job whose lease lapsed, no sweep yet")
    late = jobs.claim(conn, queue, 20)
    assert late is not None
    time.sleep(0.04)
    if not _renews_from_now(conn, sha, queue, late, 2_500, f,
                            "the holder of a lease that lapsed 20 ms ago (no sweep since)"):
        return False
    return _settled_refused(conn, sha, queue, f)


def _settled_refused(conn: Any, sha: str, queue: str, f: Findings) -> bool:
    """A renewal that races its own handler's retry: the job went to schedule (cap 2), or to dead (cap 1), by the
    kit's retry, and its token is still the row's attempts. Only the row's state tells that the caller no longer
    holds it: refused, the job left in its one set."""
    kit = conn.fork()
    kit.script_set = transitions.KIT  # the kit's retry: your retry.lua is stage 2's
    try:
        for cap, went in ((2, "retried to schedule"), (1, "retried at its cap and buried in dead")):
            jobs.drop(conn, queue)
            jobs.enqueue(conn, queue, f"a job {went}")
            c = jobs.claim(conn, queue, 30_000)
            assert c is not None
            jobs.retry(kit, queue, c.id, c.attempts, "the handler failed", 60_000, cap)
            if not _refuses(conn, sha, queue, c.id, c.attempts, f, f"a handler's renewal thread after its job was "
                            f"{went} (its token {c.attempts} still the row's attempts)"):
                return False
    finally:
        kit.close()
    jobs.drop(conn, queue)
    return True


def _renewal_record(history: History, lease_ms: int) -> tuple[list[Op], int]:
    """The settles refused stale that no fault explains (the lease lapsed under a healthy handler), and
    how many handlers outlived the lease and still completed (their renewals kept it)."""
    claims = {(o.worker, o.token, o.job): o for o in history.calls("claim") if o.ok and o.job}
    kept = sum(1 for o in history.calls("complete") if o.ok and o.reply == "ok"
               and (c := claims.get((o.worker, o.token, o.job))) is not None
               and o.sent - (c.answered or c.sent) > lease_ms)
    return lapsed_under_healthy(history), kept


def probes(node: Any, loaded: Loaded, f: Findings) -> bool:
    """Stage 1's probes: the claim's, then the renewal's (a claim by your claim.lua on each)."""
    if not _claim_probes(node, loaded, f):
        return False
    assert loaded.renew is not None
    with probing(node, loaded, "judge-dry") as conn:
        return _renew_probes(conn, loaded.renew.sha, f)


def one_seed(node: Any, loaded: Loaded, seed: int, f: Findings) -> bool:
    """One judged run; False (with findings) when it does not pass."""
    assert loaded.renew is not None
    queue = f"judge-{seed}"
    with run_folder() as folder:
        with Run(node, queue, workers=LEASE.WORKERS, lease_ms=LEASE.LEASE_MS, work_ms=LEASE.WORK_MS,
                 handler=_handler_module(folder, loaded.renew.sha), handler_path=folder, max_attempts=10,
                 retry_delay_ms=20, tick_ms=25, timeout=LEASE.DEADLINE_S + 20, scripts=loaded.scripts) as run:
            run.produce(LEASE.JOBS)
            # a lease lapsed under a healthy handler: the renewal failed
            e, drained = judged_run(run, seed, LEASE.nemesis(seed), LEASE.DEADLINE_S,
                                    lambda h: bool(_renewal_record(h, LEASE.LEASE_MS)[0]))
    if not ran_clean(e, loaded, f):
        return False
    said, history, report = e.said, e.history, e.report
    lapsed, kept = _renewal_record(history, LEASE.LEASE_MS)
    if lapsed:
        o = lapsed[0]
        f.expect(False, f"{said}: {len(lapsed)} handler(s) that no fault touched lost their job all the same "
                 f"(e.g. {o.worker}'s {o.op} of {o.job}, token {o.token}, was refused stale): your renew.lua did "
                 "not keep the lease of a handler that outlives it.")
        return False
    if not f.expect(kept > 0, f"{said}: no handler that outlived its lease completed: your renew.lua did not "
                    "keep any lease."):
        return False
    if not drained or report.unfinished:
        f.expect(False, f"{said}: {len(report.unfinished)} of {LEASE.JOBS} jobs were not done within "
                 f"{LEASE.DEADLINE_S:.0f} s.")
        return False
    return True
