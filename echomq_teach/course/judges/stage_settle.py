"""03.3 · your queue, stage 2: complete and retry, judged.

``complete.lua`` and ``retry.lua`` run in the places of the kit's ``@complete`` and ``@retry`` (their keys,
arguments and replies, a plain job's: a flow child comes at 05.2). Both are fenced by the token and the
row's state: a caller whose token is not the row's attempts, or whose job is no longer active, gets 0 and
nothing is written. A completion takes the job out of active, records its one ending on the completions stream
when the caller asks (``record``) and deletes the row. A retry differs from the kit's twice: its delay doubles
with each try of the job's life (``delay_ms · 2^(n-1)``, n the tries since the life began: attempts less
``prior_attempts``), and a job whose row carries its own ``max_attempts`` is held to that cap, not the
caller's; at the cap the job is buried in dead, its ending recorded.

The probes: a zombie recorded as a run records it (claimed, lapsed, swept, claimed again; the first worker
retries and completes late, the second completes, twice), read by the checker; the gap (a worker wakes after a
sweep put its job back, before any claim, and completes); a completion recorded and one not; the fork of one
job through its backoff to dead; a job's own cap, below the caller's and above it; a life after a reprocess
(each case with a delay and a cap of its own). The judged run: three worker processes drain jobs that fail a
few times, and jobs that always fail under a cap of their own, under a seeded nemesis of a kill and a freeze
past the lease (a zombie).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ... import completions, jobs, keyspace, snapshots
from ...lab.checker import CLOCK_SLACK_MS
from ...lab.history import History
from ...lab.nemesis import Nemesis
from ...lab.run import Run
from ..registry import Findings
from .frame import FreezeFirst, server_ms, state_holds, unchanged
from .queue import Loaded, failed_in, judged_run, probing, ran_clean, run_folder, scenario


class SETTLE:
    """The judged run of 03.3."""

    LEASE_MS = 600
    WORK_MS = 120
    DELAY_MS = 40
    MAX_ATTEMPTS = 4  # the workers' cap; the jobs that always fail carry a cap of their own
    OWN_CAP = 2
    WORKERS = 3
    SEEDS = 2
    DEADLINE_S = 8.0

    @staticmethod
    def nemesis(seed: int) -> Nemesis:
        # a freeze past the lease first (a zombie that wakes to retry or complete late), then a kill
        return FreezeFirst(seed=seed, kinds=("freeze", "kill"), count=2, must=("freeze", "kill"), gap_s=(0.1, 0.3),
                           freeze_s=(0.9, 1.1))


SEEDS, DEADLINE_S = SETTLE.SEEDS, SETTLE.DEADLINE_S
#: the judged run's jobs: how many times each fails before it works ("always": it never does)
PLAN = ["0"] * 7 + ["1", "1", "2", "always", "always"]


def backoff(delay_ms: int, tries: int) -> int:
    """The delay before the next try, after the ``tries``-th try of the life failed: it doubles each try."""
    return delay_ms * 2 ** (tries - 1)


def _handler_module(folder: Path) -> str:
    """The workers' handler: the payload says how often the job fails before it works."""
    (folder / "judge_settle.py").write_text(
        "# written by echomq_teach.course.judges.stage_settle for one judged run\n"
        "from echomq_teach.consumer import Error\n\n\n"
        "def handler(job, ctx):\n"
        "    ctx.work()\n"
        "    fails = job.payload.split()[-1]\n"
        "    if fails == 'always' or job.attempts <= int(fails):\n"
        "        return Error(f'try {job.attempts} fails')\n"
        "    return f'done on try {job.attempts}'\n"
    )
    return "judge_settle:handler"


# -- the probes ------------------------------------------------------------------------------------------------
def _zombie(node: Any, loaded: Loaded, f: Findings) -> bool:
    """Recorded and read by the checker: w1's lease lapses, a sweep puts the job back, w2 claims it; w1 wakes,
    retries and completes with its old token; w2 completes, and sends its completion again."""
    with scenario(node, loaded, "probe-settle-zombie") as s:
        job = s.enqueue("contested")
        first = s.claim("w1", 20)
        time.sleep(0.04)
        s.reap()
        second = s.claim("w2", 30_000)
        assert first is not None and second is not None and first.id == second.id == job
        try:
            late_retry = s.retry("w1", job, first.attempts, "w1 woke late", 10, 5)
            late = s.complete("w1", job, first.attempts, "w1 woke late")
            on_time = s.complete("w2", job, second.attempts, "w2's work")
            again = s.complete("w2", job, second.attempts, "w2's work, sent again")
        except Exception as exc:  # noqa: BLE001 - your script's runtime error: a finding naming its line
            return failed_in("complete.lua or retry.lua", "when a zombie and a new holder settled one job", exc, f)
        said = ("a job claimed by w1 on a 20 ms lease, swept back after it lapsed and claimed by w2; then w1 woke and "
                "retried and completed with its old token, and w2 completed it, twice")
        if not s.valid(said, f):
            return False
        return (f.expect((late_retry, late) == (jobs.STALE, jobs.STALE),
                         f"{said}: w1's retry and completion should both be answered 0 (stale): its token is no longer "
                         f"the row's; yours answered {late_retry!r} and {late!r}.")
                and f.expect((on_time, again) == (jobs.OK, jobs.STALE),
                             f"{said}: w2's completion should be answered 1, and the same completion sent again 0 (its "
                             f"row is gone); yours answered {on_time!r}, then {again!r}."))


def _gap(conn: Any, queue: str, f: Findings) -> bool:
    """The gap the state guards: a sweep put the job back in pending, nobody claimed it since, and its old holder
    wakes and settles with its token (still the row's attempts)."""
    for settle in ("complete", "retry"):
        jobs.drop(conn, queue)
        job = jobs.enqueue(conn, queue, "its worker stalled")
        c = jobs.claim(conn, queue, 20)
        assert c is not None
        time.sleep(0.04)
        jobs.reap(conn, queue)
        before = snapshots.snapshot(conn, queue)
        said = (f"a worker whose lease lapsed woke after a sweep put its job back in pending, before any new claim, "
                f"and called {settle} with its token {c.attempts} (still the row's attempts)")
        try:
            reply = (jobs.complete(conn, queue, job, c.attempts, "late", record=True) if settle == "complete"
                     else jobs.retry(conn, queue, job, c.attempts, "late", 10, 5, record=True))
        except Exception as exc:  # noqa: BLE001
            return failed_in(f"{settle}.lua", "when a worker woke after a sweep", exc, f)
        if not (state_holds(conn, queue, f, f"after {said}")
                and f.expect(reply == jobs.STALE, f"{said}: yours answered {reply!r}; the fence answers 0 once the row "
                             "is no longer active (its state is what tells: the token is still the row's)")
                and unchanged(conn, queue, before, f, f"your {settle}.lua answered 0 when {said}")):
            return False
    return True


def _completes(conn: Any, queue: str, f: Findings) -> bool:
    """A completion asked to record writes one entry; one not asked writes none; both delete the row."""
    jobs.drop(conn, queue)
    stream = keyspace.queue_key(queue, "stream:completions")
    for record in (True, False):
        job = jobs.enqueue(conn, queue, f"a job completed {'with' if record else 'without'} record")
        c = jobs.claim(conn, queue, 30_000)
        assert c is not None and c.id == job
        n = int(conn.call("XLEN", stream))
        try:
            reply = jobs.complete(conn, queue, job, c.attempts, "the result", record=record)
        except Exception as exc:  # noqa: BLE001
            return failed_in("complete.lua", "when a job's holder completed it", exc, f)
        s = snapshots.snapshot(conn, queue)
        entries = [e for e in completions.read_all(conn, queue) if e.job_id == job]
        said = f"the holder of {job} completed it{' asking to record it (ARGV[6] = 1)' if record else ''}"
        if not (f.expect(reply == jobs.OK and not s.where(job) and job not in s.rows,
                         f"{said}: your complete.lua should answer 1, take it out of active and delete its row; it "
                         f"answered {reply!r} and left it in {'/'.join(s.where(job)) or 'no set'}"
                         f"{' with its row' if job in s.rows else ''}.")
                and state_holds(conn, queue, f, f"after {said}", settled=[job])):
            return False
        want = 1 if record else 0
        if not f.expect(int(conn.call("XLEN", stream)) - n == want and len(entries) == want
                        and all((e.outcome, e.attempts, e.result) == ("completed", c.attempts, "the result")
                                for e in entries),
                        f"{said}: the completions stream should hold {want} entry for it"
                        f"{' (id, outcome completed, attempts its token, result)' if record else ' (no record asked)'}"
                        f"; it holds {len(entries)}: {entries}."):
            return False
    return True


def _retried(conn: Any, queue: str, job: str, token: int, delay: int, cap: int, want: str, f: Findings,
             said: str) -> bool:
    """One retry of ``job``'s holder: answered ``want``; scheduled at the server's now plus the backoff of this
    life's tries, or buried in dead (scored now) with its ending recorded; the row says so, with the reason."""
    tries = token - int(snapshots.snapshot(conn, queue).rows[job].get("prior_attempts", "0"))
    lo = server_ms(conn)
    try:
        reply = jobs.retry(conn, queue, job, token, f"try {token} failed", delay, cap, record=True)
    except Exception as exc:  # noqa: BLE001
        return failed_in("retry.lua", f"when {said}", exc, f)
    hi = server_ms(conn)
    s = snapshots.snapshot(conn, queue)
    if not (f.expect(reply == want, f"{said}: your retry.lua should answer {want!r}; it answered {reply!r}.")
            and state_holds(conn, queue, f, f"after {said}")):
        return False
    row = s.rows.get(job, {})
    if not f.expect(row.get("last_error") == f"try {token} failed",
                    f"{said}: the row keeps the reason as last_error; it says {row.get('last_error')!r}."):
        return False
    if want == jobs.SCHEDULED:
        wait = backoff(delay, tries)
        score = conn.call("ZSCORE", keyspace.queue_key(queue, "schedule"), job)
        return f.expect(score is not None and lo + wait - 1 <= float(score) <= hi + wait + 1,
                        f"{said}: the job waits in schedule until the server's now plus {wait} ms (delay_ms {delay} × "
                        f"2^{tries - 1}: try {tries} of this life failed); your retry.lua scored it "
                        f"{'nothing' if score is None else f'{float(score) - hi:.0f} ms from now'}.")
    score = conn.call("ZSCORE", keyspace.queue_key(queue, "dead"), job)
    if not f.expect(score is not None and lo - 1 <= float(score) <= hi + 1,
                    f"{said}: buried, the job is scored in dead with the server's TIME now, in milliseconds (when it "
                    f"died); your retry.lua scored it "
                    f"{'nothing' if score is None else f'{float(score) - hi:.0f} ms from now'}."):
        return False
    entries = [e for e in completions.read_all(conn, queue) if e.job_id == job and e.outcome == jobs.DEAD]
    return f.expect(len(entries) == 1 and entries[0].attempts == token,
                    f"{said}: the burial is the life's one ending, recorded once on the completions stream (outcome "
                    f"dead, attempts the token {token}, error the reason); the stream holds {len(entries)} for it.")


def _due_now(conn: Any, queue: str, job: str) -> None:
    """The scheduled ``job`` made due (as its delay passing would), then promoted: a probe does not wait out a
    backoff, which it checks from the score."""
    conn.call("ZADD", keyspace.queue_key(queue, "schedule"), "XX", 0, job)
    jobs.promote(conn, queue)


def _fork(conn: Any, queue: str, f: Findings) -> bool:
    """One job, cap 3, delay 1.3 s: retried after try 1 (1.3 s), after try 2 (2.6 s), buried after try 3. Then a
    job whose row carries max_attempts 1, retried with a cap of 5: buried at once; and one whose row carries 3,
    retried with a cap of 2 and a delay of 0.9 s: its try 2 is scheduled (1.8 s), its own cap winning both ways.
    Then a job buried at cap 2 and reprocessed, a delay of 0.7 s: its new life's first failure waits 0.7 s again,
    and is not yet at the cap. (Each case asks a delay and a cap of its own, so that none written into the script
    passes; the delays are long, and the probe makes each job due rather than waiting, so that a loaded machine's
    stall between the probe's clock reads and the script never passes a wrong backoff.)"""
    jobs.drop(conn, queue)
    job = jobs.enqueue(conn, queue, "fails three times")
    for token, want in ((1, jobs.SCHEDULED), (2, jobs.SCHEDULED), (3, jobs.DEAD)):
        if not _tried(conn, queue, job, token, 1_300, 3, want, f, f"try {token} of 3 failed (max_attempts 3, "
                      "delay_ms 1300)"):
            return False
    for own, cap, delay, fails in ((1, 5, 1_000, ((1, jobs.DEAD),)),
                                   (3, 2, 900, ((1, jobs.SCHEDULED), (2, jobs.SCHEDULED)))):
        jobs.drop(conn, queue)
        mine = jobs.enqueue(conn, queue, f"its row says max_attempts {own}")
        conn.call("HSET", keyspace.job_key(queue, mine), "max_attempts", own)
        for token, want in fails:
            if not _tried(conn, queue, mine, token, delay, cap, want, f, f"try {token} of a job whose row carries "
                          f"max_attempts {own} failed, its caller handing a cap of {cap} and delay_ms {delay} (a "
                          "job's own cap wins, above the caller's or below it)"):
                return False
    jobs.drop(conn, queue)
    # a cap of 2 this time, the caller's (a cap written into the script fails one of the two)
    life = jobs.enqueue(conn, queue, "buried, then reprocessed")
    for token, want in ((1, jobs.SCHEDULED), (2, jobs.DEAD)):
        if not _tried(conn, queue, life, token, 700, 2, want, f, f"try {token} of 2 failed (max_attempts 2, "
                      "ARGV[4]; delay_ms 700)"):
            return False
    jobs.reprocess(conn, queue, life)
    c = jobs.claim(conn, queue, 30_000)
    assert c is not None and c.id == life and c.attempts == 3, f"the probe's reprocessed job was not claimed: {c!r}"
    return _retried(conn, queue, life, 3, 700, 2, jobs.SCHEDULED, f, "the first try of a new life failed (a job "
                    "buried at its cap of 2, reprocessed: prior_attempts 2, token 3; max_attempts 2, delay_ms 700)")


def _tried(conn: Any, queue: str, job: str, token: int, delay: int, cap: int, want: str, f: Findings,
           said: str) -> bool:
    """``job`` made due, claimed (its try ``token``) and failed: ``_retried``'s verdict on your retry.lua."""
    _due_now(conn, queue, job)
    c = jobs.claim(conn, queue, 30_000)
    assert c is not None and c.id == job and c.attempts == token, f"the probe's job was not claimed: {c!r}"
    return _retried(conn, queue, job, token, delay, cap, want, f, said)


def probes(node: Any, loaded: Loaded, f: Findings) -> bool:
    """Stage 2's probes: the zombie the checker reads, the gap, completions, the retry's fork."""
    if not _zombie(node, loaded, f):
        return False
    queue = "probe-settle"
    with probing(node, loaded, queue) as conn:
        return _gap(conn, queue, f) and _completes(conn, queue, f) and _fork(conn, queue, f)


# -- the judged run ----------------------------------------------------------------------------------------------
def early_claims(history: History, delay_ms: int) -> list[str]:
    """Each claim that came before its job's backoff was over: after a retry answered ``scheduled`` on try n, the
    job's next claim ran no earlier than the retry's send plus ``delay_ms · 2^(n-1)`` (both on the node's clock)."""
    claims: dict[str, list[Any]] = {}
    for c in history.calls("claim"):
        if c.ok and c.job:
            claims.setdefault(c.job, []).append(c)
    out = []
    for r in history.calls("retry"):
        if not (r.ok and r.reply == jobs.SCHEDULED and r.job and r.token):
            continue
        nxt = next((c for c in sorted(claims.get(r.job, []), key=lambda c: c.sent) if c.sent > r.sent), None)
        wait = backoff(delay_ms, r.token)
        if nxt is not None and (nxt.answered or nxt.sent) + CLOCK_SLACK_MS < r.sent + wait:
            out.append(f"{r.job} (try {r.token} failed; claimed again "
                       f"{(nxt.answered or nxt.sent) - r.sent:.0f} ms after its retry, its backoff {wait} ms)")
    return out


def capped_wrong(history: History, always: set[str], cap: int) -> list[str]:
    """Each retry of a job in ``always`` (its row's own cap ``cap``, no reprocess) answered against its cap: a
    retry the fence let through answers scheduled on a try below the cap, dead on a try at it or past it."""
    out = []
    for r in history.calls("retry"):
        if r.ok and r.job in always and r.token and r.reply in (jobs.SCHEDULED, jobs.DEAD):
            if (r.reply == jobs.DEAD) != (r.token >= cap):
                out.append(f"{r.job}: its try {r.token} failed and your retry.lua answered {r.reply!r}")
    return out


def one_seed(node: Any, loaded: Loaded, seed: int, f: Findings) -> bool:
    """One judged run of stage 2; False (with findings) when it does not pass."""
    queue = f"judge-settle-{seed}"
    with run_folder() as folder:
        with Run(node, queue, workers=SETTLE.WORKERS, lease_ms=SETTLE.LEASE_MS, work_ms=SETTLE.WORK_MS,
                 handler=_handler_module(folder), handler_path=folder, max_attempts=SETTLE.MAX_ATTEMPTS,
                 retry_delay_ms=SETTLE.DELAY_MS, tick_ms=25, timeout=SETTLE.DEADLINE_S + 20,
                 scripts=loaded.scripts) as run:
            ids = run.produce(len(PLAN), payload=lambda i: f"job {i} fails {PLAN[i]}")
            always = [j for j, p in zip(ids, PLAN) if p == "always"]
            for j in always:
                run.conn.call("HSET", keyspace.job_key(queue, j), "max_attempts", SETTLE.OWN_CAP)
            e, drained = judged_run(run, seed, SETTLE.nemesis(seed), SETTLE.DEADLINE_S,
                                    lambda h: bool(early_claims(h, SETTLE.DELAY_MS)))
            final = run.final_state()
    if not ran_clean(e, loaded, f):
        return False
    said, history, report = e.said, e.history, e.report
    early = early_claims(history, SETTLE.DELAY_MS)
    if not f.expect(not early, f"{said}: {len(early)} job(s) were claimed again before their backoff was over, "
                    f"e.g. {early[0] if early else ''}: a retry schedules the next try delay_ms × 2^(n-1) after the "
                    "n-th try of the life failed."):
        return False
    deaths = {s.job_id: s for s in final.stream if s.outcome == jobs.DEAD}
    # a try a fault cut short (its lease lapsed, recovered) counts as a try as well, so the death's token may be
    # past the cap: what is judged is each retry's answer, scheduled below the cap, dead at it
    answered = capped_wrong(history, set(always), SETTLE.OWN_CAP)
    wrong = [j for j in always if j not in final.sets["dead"] or j not in deaths
             or deaths[j].attempts < SETTLE.OWN_CAP]
    if not f.expect(not wrong and not answered, f"{said}: {len(wrong) or len(answered)} job(s) whose handler always "
                    f"fails and whose row carries max_attempts {SETTLE.OWN_CAP} did not end in dead at the first "
                    f"failed try from try {SETTLE.OWN_CAP} on (the workers' cap is {SETTLE.MAX_ATTEMPTS}; a job's "
                    f"own cap wins), e.g. {(answered or wrong)[:1]}."):
        return False
    if not drained or report.unfinished or report.completed != len(PLAN) - len(always):
        f.expect(False, f"{said}: {len(report.unfinished)} of {len(PLAN)} jobs were not done within "
                 f"{SETTLE.DEADLINE_S:.0f} s; {report.completed} of the {len(PLAN) - len(always)} that work within a "
                 "few tries completed.")
        return False
    return True
