"""The course's judge: a learner's mechanism run inside a recorded run, under a seeded nemesis.

A build exercise judged by the checker hands its answer (a Lua script, for
02.6) to a judge here. The judge starts a node of its own (never the
learner's notebook node, never a classroom's shared one), loads the script,
and runs it in worker processes that drain a queue while a seeded nemesis
freezes and kills them (``lab``: every call recorded, the checker's report at
the end), over several seeds the judge draws. A build passes only when, on
every seed, the checker says valid **and** the mechanism did its job.

This is also the one module of the course that imports the fault lab's run
and nemesis (``Run``, ``Nemesis``, ``crash_points``): the checks take them
from here, so a move of those names is a change of this file alone.
"""

from __future__ import annotations

import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import jobs, keyspace
from ..lab.checker import Report
from ..lab.crashes import crash_points
from ..lab.history import History, Op
from ..lab.nemesis import Nemesis
from ..lab.run import Run
from ..lab.worker import CRASH_POINTS
from ..nodes.local import LocalNode
from .registry import Findings

__all__ = ["CRASH_POINTS", "Nemesis", "Run", "crash_points", "judge_lease_extension", "lua_error", "LEASE"]


def lua_error(what: str, exc: BaseException) -> str:
    """A Lua error as one finding that names the script's line (``user_script:N`` in the node's words)."""
    text = str(exc)
    m = re.search(r"user_script:(\d+)", text)
    reason = re.sub(r"^Error compiling script \(new function\): ", "", text)
    reason = re.sub(r"\s*script: .*$", "", re.sub(r"user_script:\d+:\s*", "", reason)).strip()
    where = f"line {m.group(1)} of your script" if m else "your script"
    return f"{what}: {where}: {reason}"


# -- 02.6 · the lease extension ----------------------------------------------------------------------
class LEASE:
    """The judged run of 02.6: handlers that work 2× their lease, renewing it every ``EVERY_MS``."""

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
        "# written by echomq_teach.course.judge for one judged run\n"
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


def _renewal_record(history: History) -> tuple[list[Op], int]:
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
        if o.op == "complete" and o.reply == "ok" and o.sent - (c.answered or c.sent) > LEASE.LEASE_MS:
            kept += 1
    return lapsed, kept


def _wait(run: Run) -> bool:
    """Until the queue is drained (True), the deadline, or a lease lapsed under a healthy handler (the
    verdict is known then: waiting on would only take time)."""
    deadline = time.monotonic() + LEASE.DEADLINE_S
    while time.monotonic() < deadline:
        if run.wait_drained(0.3):
            return True
        if _renewal_record(run.history())[0]:
            return False
    return False


def _counterexample(finding: Any) -> str:
    """A checker finding as a few lines: what it says, then the claims, releases and late calls that show it."""
    ops = finding.ops
    claims = [o for o in ops if o.op == "claim" and o.at != "note"]
    since = max((c.sent for c in claims), default=0.0)
    shown = [o for o in ops if o.op in ("claim", "reap", "stalled", "promote")
             or (o.at != "note" and o.sent >= since and o.op in ("extend", "complete", "retry"))]
    t0 = min((o.sent for o in ops), default=0.0)
    return "\n".join([f"{finding.kind.replace('_', ' ')}: {finding.job} — {finding.detail}",
                      *[f"    {o.describe(t0)}" for o in shown[:10]]])


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
            drained = _wait(run)
            run.stop()
            history = run.history()
            report: Report = run.check()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    said = f"seed {seed} ({', '.join(str(x) for x in faults)})"
    refused = [o for o in history.calls("extend") if o.at == "refused"]
    if refused:
        f.expect(False, lua_error(f"{said}: your script failed inside a worker", Exception(refused[0].error)))
        return False
    if not report.valid:
        counts = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in report.counts().items() if n)
        f.expect(False, f"{said}: the checker says invalid ({counts}). Its counterexample:\n"
                 + _counterexample(report.findings[0]))
        return False
    lapsed, kept = _renewal_record(history)
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
    """Judge a lease extension script (02.6) on a node of the judge's own, over seeds it draws."""
    if not isinstance(source, str) or not source.strip():
        f.expect(False, f"return your script's Lua source as a str; got {type(source).__name__}.")
        return
    seeds = list(seeds) if seeds is not None else [secrets.randbelow(1_000_000) for _ in range(LEASE.SEEDS)]
    node = LocalNode()
    try:
        conn = node.connector()
        try:
            try:
                sha = conn.client.script_load(source)
            except Exception as exc:  # noqa: BLE001 - the node's compile error: a finding naming the line
                f.expect(False, lua_error("your script does not compile", exc))
                return
            if not _dry_run(conn, sha, f):
                return
            # the seeds side by side, one queue each: the judged run takes one run's time
            found = {seed: Findings() for seed in seeds}
            errors: list[BaseException] = []

            def one(seed: int) -> None:
                try:
                    _one_seed(node, sha, seed, found[seed])
                except BaseException as exc:  # noqa: BLE001 - handed to the caller
                    errors.append(exc)

            threads = [threading.Thread(target=one, args=(seed,), daemon=True) for seed in seeds]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=LEASE.DEADLINE_S * 4 + 60)
            if errors:
                raise errors[0]
            # the first seed that failed is the verdict (one counterexample reads better than three)
            failed = [s for s in seeds if found[s].items]
            if failed:
                f.items.extend(found[failed[0]].items)
                f.items.append(f"failed on {len(failed)} of {len(seeds)} seeds ({', '.join(map(str, failed))}).")
        finally:
            conn.close()
    finally:
        node.stop()
