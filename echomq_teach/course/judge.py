"""The course's judge: a learner's mechanism run inside a recorded run, under a seeded nemesis.

A build exercise judged by the checker hands its answer (a Lua script: a
lease extension for 02.2, a reap for 03.3, a flow child's completion for 05.2)
to a judge here (``judge_script`` is what they share). The judge starts a node of its own (never the
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

import dataclasses
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .. import connector, flows, ids, jobs, keyspace
from ..lab.checker import CLOCK_SLACK_MS, Report, check
from ..lab.crashes import crash_points
from ..lab.history import History, Op, Recorder
from ..lab.nemesis import Nemesis
from ..lab.run import Fault, RecordedMetronome, Run
from ..lab.worker import CRASH_POINTS
from ..nodes.local import LocalNode
from .registry import Findings

__all__ = ["CRASH_POINTS", "FANIN", "LEASE", "Nemesis", "REAP", "Run", "crash_points", "judge_fan_in",
           "judge_lease_extension", "judge_reap", "judge_script", "lua_error"]


def lua_error(what: str, exc: BaseException) -> str:
    """A Lua error as one finding that names the script's line (``user_script:N`` in the node's words)."""
    text = str(exc)
    m = re.search(r"user_script:(\d+)", text)
    reason = re.sub(r"^Error compiling script \(new function\): ", "", text)
    reason = re.sub(r"\s*script: .*$", "", re.sub(r"user_script:\d+:\s*", "", reason)).strip()
    where = f"line {m.group(1)} of your script" if m else "your script"
    return f"{what}: {where}: {reason}"


# -- 02.2 · the lease extension ----------------------------------------------------------------------
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


def _wait(run: Run, deadline_s: float, failed: Callable[[History], bool]) -> bool:
    """Until the queue is drained (True), the deadline, or ``failed(history)`` (the verdict is known then:
    waiting on would only take time)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if run.wait_drained(0.3):
            return True
        if failed(run.history()):
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


def _checker_and_scripts(said: str, history: History, report: Report, op: str, f: Findings) -> bool:
    """What every judged run asks first: did the learner's script fail inside the run (the recorded ``op``
    refused), and does the checker say valid? False (with the finding) when either is not so."""
    refused = [o for o in history.calls(op) if o.at == "refused"]
    if refused:
        f.expect(False, lua_error(f"{said}: your script failed inside the run", Exception(refused[0].error)))
        return False
    if not report.valid:
        counts = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in report.counts().items() if n)
        f.expect(False, f"{said}: the checker says invalid ({counts}). Its counterexample:\n"
                 + _counterexample(report.findings[0]))
        return False
    return True


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
            drained = _wait(run, LEASE.DEADLINE_S, lambda h: bool(_renewal_record(h, LEASE.LEASE_MS)[0]))
            run.stop()
            history = run.history()
            report: Report = run.check()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    said = f"seed {seed} ({', '.join(str(x) for x in faults)})"
    if not _checker_and_scripts(said, history, report, "extend", f):
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


DryRun = Callable[[Any, str, Findings], bool]
OneSeed = Callable[[Any, str, int, Findings], bool]


def judge_script(source: Any, f: Findings, *, dry_run: DryRun, one_seed: OneSeed, seeds: Iterable[int] | None,
                 n_seeds: int, join_s: float) -> None:
    """Judge a learner's Lua script on a node of the judge's own: it must compile, pass ``dry_run`` (a few
    calls whose answers are known), then pass ``one_seed`` on every seed (drawn here unless given), the
    seeds run side by side, one queue each. The first seed that failed gives the findings."""
    if not isinstance(source, str) or not source.strip():
        f.expect(False, f"return your script's Lua source as a str; got {type(source).__name__}.")
        return
    seeds = list(seeds) if seeds is not None else [secrets.randbelow(1_000_000) for _ in range(n_seeds)]
    node = LocalNode()
    try:
        conn = node.connector()
        try:
            try:
                sha = conn.client.script_load(source)
            except Exception as exc:  # noqa: BLE001 - the node's compile error: a finding naming the line
                f.expect(False, lua_error("your script does not compile", exc))
                return
            if not dry_run(conn, sha, f):
                return
            found = {seed: Findings() for seed in seeds}
            errors: list[BaseException] = []

            def one(seed: int) -> None:
                try:
                    one_seed(node, sha, seed, found[seed])
                except BaseException as exc:  # noqa: BLE001 - handed to the caller
                    errors.append(exc)

            threads = [threading.Thread(target=one, args=(seed,), daemon=True) for seed in seeds]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=join_s)
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


def judge_lease_extension(source: Any, f: Findings, seeds: Iterable[int] | None = None) -> None:
    """Judge a lease extension script (02.2) on a node of the judge's own, over seeds it draws."""
    judge_script(source, f, dry_run=_dry_run, one_seed=_one_seed, seeds=seeds, n_seeds=LEASE.SEEDS,
                 join_s=LEASE.DEADLINE_S * 4 + 60)


# -- 03.3 · the learner's own reap ---------------------------------------------------------------------------
class REAP:
    """The judged run of 03.3: workers killed mid-job; only the learner's reap brings their jobs back."""

    LEASE_MS = 600
    WORK_MS = 250
    WORKERS = 3
    JOBS = 15  # 1.25 s of work a worker: every kill lands mid-job
    LIMIT = 1  # the N each call of the reap is handed in the run (the dry run asks for 2)
    TICK_MS = 50
    SEEDS = 3
    DEADLINE_S = 10.0  # a bound for a slow machine: a passing run takes about three seconds

    @staticmethod
    def nemesis(seed: int) -> Nemesis:
        # two kills early, while every worker is mid-job: two leases left to lapse
        return Nemesis(seed=seed, kinds=("kill",), count=2, gap_s=(0.15, 0.35))


def reap_keys(queue: str) -> tuple[str, str, str]:
    """The reap's KEYS: active, pending, and the queue's base (``emq:{q}:``, a row is base .. 'job:' .. id)."""
    return (keyspace.queue_key(queue, "active"), keyspace.queue_key(queue, "pending"),
            keyspace.base(queue))


def _reap_call(conn: Any, sha: str, queue: str, limit: int) -> Any:
    return conn.call("EVALSHA", sha, 3, *reap_keys(queue), limit)


class _LearnersReap(RecordedMetronome):
    """The run's metronome with the learner's script as its recovery leg, recorded as a ``reap``."""

    def __init__(self, sha: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sha = sha

    def tick(self) -> tuple[list[str], list[str]]:
        try:
            promoted = self.rec.promote(self.conn, self.queue)
            reply = self.rec.call("reap", lambda: _reap_call(self.conn, self.sha, self.queue, REAP.LIMIT))
        except connector.LINK_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - the learner's runtime error: recorded as a refused reap
            self.notes.note("metronome-error", error=f"{type(exc).__name__}: {exc}")
            return [], []
        recovered = [str(i) for i in reply] if isinstance(reply, list) else []
        self.ticks += 1
        self.promoted += len(promoted)
        self.recovered += len(recovered)
        return promoted, recovered


class _ReapRun(Run):
    """A Run whose metronome reaps with the learner's script."""

    def __init__(self, sha: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sha = sha

    def start_metronome(self) -> None:
        if self._metronome is not None and self._metronome.running:
            return
        rec = Recorder(self.folder, "metronome", self.clock)
        self._metronome = _LearnersReap(self.sha, self.conn.fork(), self.queue, rec, self.nemesis,
                                        interval_ms=self.tick_ms, recovery="reap", record=self.record)
        self._metronome.start()


def _reap_dry_run(conn: Any, sha: str, f: Findings) -> bool:
    """Three leases lapsed, one not, a limit of 2: the two earliest deadlines, then the third, then none;
    the live lease is never moved (the server's clock says it has not lapsed)."""
    queue = "judge-dry-reap"
    ids_ = [jobs.enqueue(conn, queue, f"job {i}") for i in range(4)]
    lapsed = []
    for _ in range(3):
        c = jobs.claim(conn, queue, 20)
        assert c is not None
        lapsed.append(c.id)
        time.sleep(0.003)  # three distinct deadlines
    live = jobs.claim(conn, queue, 60_000)
    assert live is not None and sorted([*lapsed, live.id]) == sorted(ids_)
    time.sleep(0.05)
    expected = (lapsed[:2], lapsed[2:], [])
    for n, want in enumerate(expected, 1):
        try:
            reply = _reap_call(conn, sha, queue, 2)
        except Exception as exc:  # noqa: BLE001 - a runtime error of the learner's Lua: a finding
            f.expect(False, lua_error(f"your script failed on call {n} of a dry run", exc))
            return False
        if not f.expect(isinstance(reply, list) and all(isinstance(i, str) for i in reply),
                        f"your reap answered {reply!r}: answer the list of the ids it moved back."):
            return False
        if not f.expect(live.id not in reply, f"your reap moved {live.id}, whose lease runs for another minute "
                        "by the server's clock: only a lease whose deadline has passed is reaped."):
            return False
        if not f.expect(len(reply) <= 2, f"your reap moved {len(reply)} leases in one call handed a limit of 2 "
                        "(ARGV[1]): at most N a call, so that one call never holds the node for long."):
            return False
        if not f.expect(sorted(reply) == sorted(want),
                        f"call {n} of a dry run (3 leases lapsed 30 ms ago, one live, a limit of 2) should move "
                        f"{want or 'nothing'}, the earliest deadlines first; your reap moved {reply or 'nothing'}."):
            return False
    jobs.drop(conn, queue)
    return True


def _released_early(history: History, lease_ms: int) -> list[tuple[Op, Op]]:
    """Each reap that moved a job before the lease of its last claim could have lapsed, with that claim.

    Sound whatever the workers' speed: the claim's deadline is no earlier than its send plus the lease,
    and the reap ran no later than its answer, both stamped on the node's clock."""
    claims: dict[str, list[Op]] = {}
    for c in history.calls("claim"):
        if c.ok and c.job:
            claims.setdefault(c.job, []).append(c)
    out = []
    for reap in history.calls("reap"):
        for job in reap.released():
            before = [c for c in claims.get(job, []) if (c.answered or c.sent) <= reap.sent]
            if before and reap.latest + CLOCK_SLACK_MS < before[-1].sent + lease_ms:
                out.append((reap, before[-1]))
    return out


def _held_by_the_killed(history: History) -> set[str]:
    """The jobs a killed worker held when it died: claimed, never settled by it."""
    killed = {n.extra.get("worker") for n in history.notes("kill")}
    held = {(o.job, o.token) for o in history.calls("claim") if o.worker in killed and o.ok and o.job}
    settled = {(o.job, o.token) for o in history.calls("complete", "retry") if o.worker in killed}
    return {job for job, _ in held - settled}


def _one_reap_seed(node: Any, sha: str, seed: int, f: Findings, recovered: dict[int, int] | None = None) -> bool:
    """One judged run of a reap; False (with findings) when it does not pass. ``recovered[seed]``: how many
    jobs of killed workers the reap brought back, and were then done."""
    queue = f"judge-reap-{seed}"
    with _ReapRun(sha, node, queue, workers=REAP.WORKERS, lease_ms=REAP.LEASE_MS, work_ms=REAP.WORK_MS,
                  max_attempts=10, retry_delay_ms=20, tick_ms=REAP.TICK_MS, timeout=REAP.DEADLINE_S + 20) as run:
        run.produce(REAP.JOBS)
        run.start()
        faults = REAP.nemesis(seed).run(run, deadline_s=REAP.DEADLINE_S)
        # a lease reaped before it could lapse (a starved worker's overdue lease is the reap's to take back)
        drained = _wait(run, REAP.DEADLINE_S, lambda h: bool(_released_early(h, REAP.LEASE_MS)))
        run.stop()
        history = run.history()
        report: Report = run.check()
    said = f"seed {seed} ({', '.join(str(x) for x in faults)})"
    if not _checker_and_scripts(said, history, report, "reap", f):
        return False
    big = [o for o in history.calls("reap") if o.ok and len(o.released()) > REAP.LIMIT]
    if not f.expect(not big, f"{said}: a call of your reap handed a limit of {REAP.LIMIT} moved "
                    f"{len(big[0].released()) if big else 0} leases."):
        return False
    early = _released_early(history, REAP.LEASE_MS)
    if early:
        reap, claim = early[0]
        f.expect(False, f"{said}: your reap moved {len(early)} lease(s) back before they could have lapsed (e.g. "
                 f"{claim.job}, claimed by {claim.worker} with a {REAP.LEASE_MS} ms lease, was reaped "
                 f"{reap.latest - claim.sent:.0f} ms after the claim was sent, by the server's clock).")
        return False
    held = _held_by_the_killed(history)
    missed = sorted(held - set(report.recovered))
    if not drained or report.unfinished or missed:
        f.expect(False, f"{said}: {len(report.unfinished)} of {REAP.JOBS} jobs were not done within "
                 f"{REAP.DEADLINE_S:.0f} s; of the {len(held)} job(s) killed workers held, your reap brought back "
                 f"and saw done {len(held) - len(missed)}.")
        return False
    if recovered is not None:
        recovered[seed] = len(held)
    return True


def judge_reap(source: Any, f: Findings, seeds: Iterable[int] | None = None) -> None:
    """Judge a reap script (03.3) on a node of the judge's own, under worker kills, over seeds it draws.

    It passes when every seed passes and, over the seeds, at least one job of a killed worker was brought
    back by the learner's reap and then done (a schedule whose kills all hit idle workers proves nothing).
    """
    recovered: dict[int, int] = {}

    def one(node: Any, sha: str, seed: int, found: Findings) -> bool:
        return _one_reap_seed(node, sha, seed, found, recovered)

    judge_script(source, f, dry_run=_reap_dry_run, one_seed=one, seeds=seeds, n_seeds=REAP.SEEDS,
                 join_s=REAP.DEADLINE_S * 4 + 60)
    if not f.items and not any(recovered.values()):
        f.expect(False, "no kill of this judged run hit a worker mid-job, so your reap had nothing to bring "
                 "back: check again (the judge draws new seeds).")


# -- 05.2 · the fan-in of a flow, under kills --------------------------------------------------------
class FANIN:
    """The judged run of 05.2: flows drained by workers whose flow children complete by the learner's script,
    while a seeded nemesis kills workers and freezes one past its lease (a zombie that completes late)."""

    LEASE_MS = 300
    WORK_MS = 250
    WORKERS = 3
    FLOWS = 2
    CHILDREN = 5
    SEEDS = 3
    DEADLINE_S = 5.0
    #: after the queue drained: how long a thawed zombie may take to send its late completion
    GRACE_S = 2.0

    @staticmethod
    def nemesis(seed: int) -> Nemesis:
        # one freeze in every schedule, first (every worker holds a child then: the parents wait for ten; a
        # kill's new worker takes a while to start) and longer than the lease: its child is reaped and
        # completed by another worker before the zombie wakes and completes it too
        return _FreezeFirst(seed=seed, kinds=("freeze", "kill"), count=3, must=("freeze",), gap_s=(0.03, 0.15),
                            freeze_s=(1.2, 1.4))


class _FreezeFirst(Nemesis):
    """A seeded schedule whose first fault is its first freeze (the faults keep their drawn times)."""

    def draw(self, slots: int) -> list[Fault]:
        out = super().draw(slots)
        i = next(n for n, x in enumerate(out) if x.kind == "freeze")
        out[0], out[i] = (dataclasses.replace(out[i], at_s=out[0].at_s), dataclasses.replace(out[0], at_s=out[i].at_s))
        self.schedule = out
        return out


class _AtWork:
    """A run as the nemesis sees it, whose freeze waits (bounded) until the slot's worker is inside a
    handler: a worker frozen between two jobs holds nothing, and no zombie wakes from it."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def __getattr__(self, name: str) -> Any:
        return getattr(self.run, name)

    def apply(self, fault: Fault) -> None:
        if fault.kind == "freeze" and fault.slot is not None:
            name = self.run.worker(fault.slot).name
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                mine = [o for o in self.run.history().ops if o.worker == name]
                if mine and mine[-1].op == "run":
                    break
                time.sleep(0.01)
        self.run.apply(fault)


def _complete_child(conn: Any, sha: str, queue: str, parent: str, child: str, token: int, result: str) -> Any:
    """The learner's script as a worker calls it (``lab.worker``): @complete's KEYS and ARGV for a flow child."""
    keys = [keyspace.queue_key(queue, "active"), keyspace.job_key(queue, child),
            *(keyspace.job_key(queue, parent, s) for s in ("dependencies", "processed")),
            keyspace.job_key(queue, parent)]
    return conn.call("EVALSHA", sha, 5, *keys, child, token, keyspace.base(queue), parent, result)


def _fan_in_dry_run(conn: Any, sha: str, f: Findings) -> bool:
    """The script once for a child's holder and once for a late caller: it runs, and answers 1 or 0."""
    queue = "judge-dry-flow"
    flow = flows.add(conn, queue, "parent", ["a", "b"])
    claimed = jobs.claim(conn, queue, 30_000)
    assert claimed is not None
    for token, who in ((claimed.attempts, "a child's holder"), (claimed.attempts, "a late, repeated completion")):
        try:
            reply = _complete_child(conn, sha, queue, flow.parent_id, claimed.id, token, "a done")
        except Exception as exc:  # noqa: BLE001 - a runtime error of the learner's Lua: a finding
            f.expect(False, lua_error(f"your script failed when {who} completed", exc))
            return False
        if not f.expect(reply in (0, 1), f"your script answered {reply!r} to {who}: answer 1 when this call "
                        "completed the child, 0 when the caller no longer held it."):
            return False
    jobs.drop(conn, queue)
    return True


def _land_flows(run: Run, n: int, children: int) -> dict[str, list[str]]:
    """``n`` flows landed, each recorded in the producer's lane: the parent's enqueue around its children's
    (all sent before the one atomic land, all answered after it), each child's naming its parent."""
    out: dict[str, list[str]] = {}
    for i in range(n):
        pid, kids = ids.mint(), [(ids.mint(), f"flow {i} part {k}") for k in range(children)]

        def nest(k: int, pid: str = pid, kids: list[tuple[str, str]] = kids, i: int = i) -> str:
            if k == len(kids):
                return flows.add(run.conn, run.queue, (pid, f"flow {i} assemble"), kids).parent_id
            run.producer.call("enqueue", lambda: nest(k + 1), job=kids[k][0], extra={"parent": pid})
            return pid

        run.producer.call("enqueue", lambda nest=nest: nest(0), job=pid)
        out[pid] = [k for k, _ in kids]
    return out


def _parents_released_early(history: History, parents: dict[str, list[str]]) -> list[tuple[Op, list[str]]]:
    """Each parent claimed while a child of it had no completion yet (a completion whose answer was lost
    counts from the moment it was sent: the earliest it could have run)."""
    ended: dict[str, float] = {}
    for o in history.calls("complete"):
        if o.job and (o.reply == jobs.OK or o.indeterminate):
            ended[o.job] = min(ended.get(o.job, o.sent), o.sent)
    out = []
    for pid, kids in parents.items():
        first = min((c for c in history.calls("claim") if c.ok and c.job == pid), key=lambda c: c.sent, default=None)
        if first is not None:
            waiting = [k for k in kids if ended.get(k, float("inf")) > (first.answered or first.sent)]
            if waiting:
                out.append((first, waiting))
    return out


def _until(done: Callable[[History], bool], run: Run, timeout_s: float) -> bool:
    """Poll the run's history until ``done`` says so (True), or ``timeout_s`` passed (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if done(run.history()):
            return True
        time.sleep(0.05)
    return False


def _zombies_settled(history: History) -> bool:
    """Every worker the nemesis froze and thawed has sent a call since (its late settle, or its next claim)."""
    thaws = history.notes("thaw")
    return all(any(o.worker == t.extra.get("worker") and o.sent > t.sent for o in history.calls("complete", "claim"))
               for t in thaws)


def _fan_in_seed(node: Any, sha: str, seed: int, f: Findings) -> bool:
    """One judged run of the fan-in; False (with findings) when it does not pass."""
    queue = f"judge-fanin-{seed}"
    with Run(node, queue, workers=FANIN.WORKERS, lease_ms=FANIN.LEASE_MS, work_ms=FANIN.WORK_MS, max_attempts=10,
             retry_delay_ms=20, tick_ms=25, idle_ms=20, record=False, timeout=FANIN.DEADLINE_S + 30) as run:
        # every worker, the ones that replace the killed too, completes a flow child by the learner's script
        run.options = dataclasses.replace(run.options, flow_complete=sha)
        run.start()
        # the flows land once every worker is asking for work (a loaded machine starts processes slowly):
        # the first children then go to all of them at once, and the nemesis finds each inside a handler
        _until(lambda h: len({c.worker for c in h.calls("claim")}) >= FANIN.WORKERS, run, 10.0)
        parents = _land_flows(run, FANIN.FLOWS, FANIN.CHILDREN)
        faults = FANIN.nemesis(seed).run(_AtWork(run), deadline_s=FANIN.DEADLINE_S)  # type: ignore[arg-type]
        drained = run.wait_drained(FANIN.DEADLINE_S)
        _until(_zombies_settled, run, FANIN.GRACE_S)
        drained = run.wait_drained(0.5) and drained
        run.stop()
        history = run.history()
        final = run.final_state()
        report = check(history, final, recorded=False)
        processed = {p: len(flows.children_values(run.conn, queue, p)) for p in parents}
        jobs.drop(run.conn, queue)
    said = f"seed {seed} ({', '.join(str(x) for x in faults)})"
    refused = [o for o in history.calls("complete") if o.at == "refused"]
    if refused:
        f.expect(False, lua_error(f"{said}: your script failed inside a worker", Exception(refused[0].error)))
        return False
    odd = [o for o in history.calls("complete") if o.ok and o.reply not in (jobs.OK, jobs.STALE)]
    if odd:
        f.expect(False, f"{said}: your script answered {odd[0].reply!r}: answer 1 when it completed, 0 when not.")
        return False
    if not report.valid:
        counts = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in report.counts().items() if n)
        # a fence violation first, when there is one: it says why the other findings happened
        first = (report.fence_violations or report.findings)[0]
        f.expect(False, f"{said}: the checker says invalid ({counts}). Its counterexample:\n" + _counterexample(first))
        return False
    early = _parents_released_early(history, parents)
    if early:
        claim, waiting = early[0]
        f.expect(False, f"{said}: parent {claim.job} was released early: {claim.worker} claimed it while "
                 f"{len(waiting)} of its {FANIN.CHILDREN} children had not completed ({', '.join(waiting)}).")
        return False
    held = sorted(p for p in parents if final.rows.get(p, {}).get("state") == "awaiting_children")
    if held:
        f.expect(False, f"{said}: {len(held)} of {len(parents)} parents were never released, though every child "
                 f"completed (e.g. {held[0]}, still awaiting_children): the last child's completion "
                 "must put its parent in pending.")
        return False
    short = {p: n for p, n in processed.items() if n != FANIN.CHILDREN}
    if short:
        p, n = next(iter(short.items()))
        f.expect(False, f"{said}: parent {p}'s :processed holds {n} results, not its {FANIN.CHILDREN} children's: "
                 "each child's completion records its result there, once.")
        return False
    if not drained or report.unfinished:
        f.expect(False, f"{said}: {len(report.unfinished)} jobs were not done within {FANIN.DEADLINE_S:.0f} s.")
        return False
    return True


def judge_fan_in(source: Any, f: Findings, seeds: Iterable[int] | None = None) -> None:
    """Judge a fan-in script (05.2) on a node of the judge's own, over seeds it draws."""
    judge_script(source, f, dry_run=_fan_in_dry_run, one_seed=_fan_in_seed, seeds=seeds, n_seeds=FANIN.SEEDS,
                 join_s=FANIN.DEADLINE_S * 4 + 60)
