"""02.2 · the learner's lease renewal, judged: handlers that outlive their lease renew it under freezes and kills."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ... import jobs, keyspace, snapshots
from ...lab.history import History, Op
from ...lab.nemesis import Nemesis
from ...lab.run import Run
from ..registry import Findings
from .frame import (
    Watched,
    call_script,
    checker_and_state,
    end_run,
    judge_script,
    lapsed_under_healthy,
    server_ms,
    state_holds,
    unchanged,
    wait_drained,
)


class LEASE:
    """The judged run of 02.2: handlers that work 2× their lease, renewing it every ``EVERY_MS``."""

    # a healthy handler loses its lease only if its worker stalls 1.4 s between two renewals: a loaded
    # machine's pauses are shorter than that (at 900 ms, one try in 30 lost one at load 26)
    LEASE_MS = 1_500
    EVERY_MS = 100
    WORK_MS = 2_000
    WORKERS = 3
    JOBS = 6
    SEEDS = 3
    DEADLINE_S = 10.0

    @staticmethod
    def nemesis(seed: int) -> Nemesis:
        # one freeze in every schedule, early and longer than the lease (a zombie), thawed before the job's
        # new holder is done with it; the other fault a freeze or a kill, as the seed draws
        return Nemesis(seed=seed, kinds=("freeze", "kill"), count=2, must=("freeze",), gap_s=(0.1, 0.3),
                       freeze_s=(1.8, 2.0))


def _handler_module(folder: Path, sha: str) -> str:
    """The workers' handler, bound to the loaded script: a module in the run's folder."""
    (folder / "judge_lease_extension.py").write_text(
        "# written by echomq_teach.course.judges.renewal for one judged run\n"
        "from echomq_teach.lab.handlers import renewing\n\n\n"
        "def handler(job, ctx):\n"
        f"    return renewing(job, ctx, {sha!r}, {LEASE.LEASE_MS}, {LEASE.EVERY_MS})\n"
    )
    return "judge_lease_extension:handler"


def _keys(queue: str, job: str) -> list[str]:
    return [keyspace.queue_key(queue, "active"), keyspace.job_key(queue, job)]


def _renews_from_now(conn: Any, sha: str, queue: str, c: jobs.Claimed, f: Findings, who: str) -> bool:
    """``who`` holds the job: the script answers 1 and sets the deadline to the server's now plus the lease."""
    lo = server_ms(conn)
    ok, reply = call_script(conn, sha, _keys(queue, c.id), [c.id, c.attempts, LEASE.LEASE_MS], f, f"when {who} renewed")
    hi = server_ms(conn)
    if not ok:
        return False
    if not f.expect(reply == 1, f"your script answered {reply!r} to {who}: the caller still holds the job (its "
                    "token is the row's attempts, and the job is in active), so answer 1 and renew it."):
        return False
    score = conn.call("ZSCORE", keyspace.queue_key(queue, "active"), c.id)
    if score is None:
        f.expect(False, f"renewed for {who}, the job is no longer in active: a renewal moves its deadline, it "
                 "never takes it out.")
        return False
    ahead = int(float(score)) - hi
    return f.expect(lo + LEASE.LEASE_MS - 1 <= float(score) <= hi + LEASE.LEASE_MS + 1,
                    f"your script renewed the lease of {who} to a deadline {ahead} ms from the server's clock now; "
                    f"renewed by {LEASE.LEASE_MS} ms, it should be {LEASE.LEASE_MS} ms from now: the new deadline is "
                    "the server's TIME now plus the lease (not the old deadline plus the lease, nor the lease alone).")


def _refuses(conn: Any, sha: str, queue: str, job: str, token: int, f: Findings, who: str) -> bool:
    """``who`` no longer holds the job: the script answers 0 and writes nothing; the queue keeps the table."""
    before = snapshots.snapshot(conn, queue)
    ok, reply = call_script(conn, sha, _keys(queue, job), [job, token, LEASE.LEASE_MS], f, f"when {who} renewed")
    if not ok:
        return False
    said = f"called by {who}"
    if not f.expect(reply in (0, 1), f"your script answered {reply!r} to {who}: answer 1 when it renews the lease, "
                    "0 when it does not."):
        return False
    if not state_holds(conn, queue, f, f"after your script was {said}"):
        return False
    return (f.expect(reply == 0, f"your script answered 1 to {who}: that caller no longer holds the job, so "
                     "answer 0, and renew nothing.")
            and unchanged(conn, queue, before, f, f"your script answered 0 {said}"))


def _dry_run(conn: Any, sha: str, f: Findings) -> bool:
    """The script on four callers whose answers are known, each on a job of its own: the holder (renewed from
    the server's now), a stale token, the gap (a lease lapsed and swept, no claim since: the old holder's token
    is still the row's attempts, but the job is in pending), and a lapsed lease no sweep has touched (still
    its holder's)."""
    queue = "judge-dry"
    jobs.drop(conn, queue)
    jobs.enqueue(conn, queue, "a job to renew")
    held = jobs.claim(conn, queue, 30_000)
    assert held is not None
    if not _renews_from_now(conn, sha, queue, held, f, "the job's holder (its 30 s lease still running)"):
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
    if not _renews_from_now(conn, sha, queue, late, f, "the holder of a lease that lapsed 20 ms ago (no sweep since)"):
        return False
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


def _one_seed(node: Any, sha: str, seed: int, f: Findings) -> bool:
    """One judged run; False (with findings) when it does not pass."""
    queue = f"judge-{seed}"
    folder = Path(tempfile.mkdtemp(prefix="echomq-judge-"))
    try:
        with Run(node, queue, workers=LEASE.WORKERS, lease_ms=LEASE.LEASE_MS, work_ms=LEASE.WORK_MS,
                 handler=_handler_module(folder, sha), handler_path=folder, max_attempts=10, retry_delay_ms=20,
                 tick_ms=25, timeout=LEASE.DEADLINE_S + 20) as run:
            run.produce(LEASE.JOBS)
            run.start()
            watched = Watched(run)
            faults = LEASE.nemesis(seed).run(watched, deadline_s=LEASE.DEADLINE_S)  # type: ignore[arg-type]
            # a lease lapsed under a healthy handler: the renewal failed
            drained = wait_drained(run, LEASE.DEADLINE_S, lambda h: bool(_renewal_record(h, LEASE.LEASE_MS)[0]))
            e = end_run(run, seed, faults, watched=watched)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if not checker_and_state(e, "extend", f):
        return False
    said, history, report = e.said, e.history, e.report
    lapsed, kept = _renewal_record(history, LEASE.LEASE_MS)
    if lapsed:
        o = lapsed[0]
        f.expect(False, f"{said}: {len(lapsed)} handler(s) that no fault touched lost their job all the same "
                 f"(e.g. {o.worker}'s {o.op} of {o.job}, token {o.token}, was refused stale): the renewal did "
                 "not keep the lease of a handler that outlives it.")
        return False
    if not f.expect(kept > 0, f"{said}: no handler that outlived its lease completed: the renewal did not "
                    "keep any lease."):
        return False
    if not drained or report.unfinished:
        f.expect(False, f"{said}: {len(report.unfinished)} of {LEASE.JOBS} jobs were not done within "
                 f"{LEASE.DEADLINE_S:.0f} s.")
        return False
    return True


def judge_lease_extension(source: Any, f: Findings, seeds: Iterable[int] | None = None) -> None:
    """Judge a lease extension script (02.2) on a node of the judge's own, over seeds it draws."""
    judge_script(source, f, dry_run=_dry_run, one_seed=_one_seed, seeds=seeds, n_seeds=LEASE.SEEDS,
                 join_s=LEASE.DEADLINE_S * 4 + 60)
