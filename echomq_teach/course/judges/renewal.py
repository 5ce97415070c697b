"""02.2 · the learner's lease renewal, judged: handlers that outlive their lease renew it under freezes and kills."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ... import jobs, keyspace
from ...lab.checker import Report
from ...lab.history import History, Op
from ...lab.nemesis import Nemesis
from ...lab.run import Run
from ..registry import Findings
from .frame import checker_and_scripts, judge_script, lua_error, wait_drained


class LEASE:
    """The judged run of 02.2: handlers that work 2× their lease, renewing it every ``EVERY_MS``."""

    LEASE_MS = 500
    EVERY_MS = 100
    WORK_MS = 1_000
    WORKERS = 3
    JOBS = 6
    SEEDS = 3
    DEADLINE_S = 6.0

    @staticmethod
    def nemesis(seed: int) -> Nemesis:
        # one freeze in every schedule, early and longer than the lease (a zombie), thawed before the job's
        # new holder is done with it; the other fault a freeze or a kill, as the seed draws
        return Nemesis(seed=seed, kinds=("freeze", "kill"), count=2, must=("freeze",), gap_s=(0.1, 0.3),
                       freeze_s=(1.2, 1.4))


def _handler_module(folder: Path, sha: str) -> str:
    """The workers' handler, bound to the loaded script: a module in the run's folder."""
    (folder / "judge_lease_extension.py").write_text(
        "# written by echomq_teach.course.judges.renewal for one judged run\n"
        "from echomq_teach.lab.handlers import renewing\n\n\n"
        "def handler(job, ctx):\n"
        f"    return renewing(job, ctx, {sha!r}, {LEASE.LEASE_MS}, {LEASE.EVERY_MS})\n"
    )
    return "judge_lease_extension:handler"


def _dry_run(conn: Any, sha: str, f: Findings) -> bool:
    """The script once for the job's holder and once for a stale token: it runs, and answers 1 or 0."""
    queue = "judge-dry"
    job = jobs.enqueue(conn, queue, "a job to renew")
    claimed = jobs.claim(conn, queue, 30_000)
    assert claimed is not None
    keys = (keyspace.queue_key(queue, "active"), keyspace.job_key(queue, job))
    for token, who in ((claimed.attempts, "the job's holder"), (claimed.attempts + 1, "a caller with a stale token")):
        try:
            reply = conn.call("EVALSHA", sha, 2, *keys, job, token, LEASE.LEASE_MS)
        except Exception as exc:  # noqa: BLE001 - a runtime error of the learner's Lua: a finding
            f.expect(False, lua_error(f"your script failed when {who} renewed", exc))
            return False
        if not f.expect(reply in (0, 1), f"your script answered {reply!r} to {who}: answer 1 when it renews the "
                        "lease, 0 when it does not."):
            return False
    jobs.drop(conn, queue)
    return True


def _fault_between(nemesis: list[Op], worker: str, lo: float, hi: float) -> bool:
    return any(n.extra.get("worker") == worker and lo <= n.sent <= hi for n in nemesis)


def _renewal_record(history: History, lease_ms: int) -> tuple[list[Op], int]:
    """The settles refused stale that no fault explains (the lease lapsed under a healthy handler), and
    how many handlers outlived the lease and still completed (their renewals kept it)."""
    claims = {(o.worker, o.token, o.job): o for o in history.calls("claim") if o.ok and o.job}
    nemesis = [n for n in history.notes("freeze", "kill")]
    lapsed, kept = [], 0
    for o in history.calls("complete", "retry"):
        c = claims.get((o.worker, o.token, o.job))
        if c is None or not o.ok:
            continue
        if o.reply == "stale" and not _fault_between(nemesis, o.worker, c.sent, o.sent):
            lapsed.append(o)
        if o.op == "complete" and o.reply == "ok" and o.sent - (c.answered or c.sent) > lease_ms:
            kept += 1
    return lapsed, kept


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
            faults = LEASE.nemesis(seed).run(run, deadline_s=LEASE.DEADLINE_S)
            # a lease lapsed under a healthy handler: the renewal failed
            drained = wait_drained(run, LEASE.DEADLINE_S, lambda h: bool(_renewal_record(h, LEASE.LEASE_MS)[0]))
            run.stop()
            history = run.history()
            report: Report = run.check()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    said = f"seed {seed} ({', '.join(str(x) for x in faults)})"
    if not checker_and_scripts(said, history, report, "extend", f):
        return False
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
