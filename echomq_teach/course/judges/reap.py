"""03.3 · the learner's own reap, judged: the run's sweeper reaps with the learner's script under worker kills."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from ... import connector, jobs, keyspace
from ...lab.checker import CLOCK_SLACK_MS, Report
from ...lab.history import History, Op, Recorder
from ...lab.nemesis import Nemesis
from ...lab.run import RecordedMetronome, Run
from ..registry import Findings
from .frame import checker_and_scripts, judge_script, lua_error, wait_drained


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
        drained = wait_drained(run, REAP.DEADLINE_S, lambda h: bool(_released_early(h, REAP.LEASE_MS)))
        run.stop()
        history = run.history()
        report: Report = run.check()
    said = f"seed {seed} ({', '.join(str(x) for x in faults)})"
    if not checker_and_scripts(said, history, report, "reap", f):
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


