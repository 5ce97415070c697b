"""03.3 · the learner's bounded reap, judged: lapsed leases back to pending, a lapse at the cap buried.

The spec differs from the kit's ``@reap`` (which forgives every lapse, 100 a
call): the learner's reap takes the most leases one call may handle and the
cap on attempts, moves a lapsed lease back to pending while the job's attempts
are below the cap, and buries it in dead — one recorded ending on the
completions stream — once they reached it. A poison job (one whose handler
kills its worker, every time) is then tried ``max_attempts`` times and no more.

The dry run is deterministic: a queue whose answers are known (one lapse at the
cap, two below it, one live lease, a limit of 2), the queue's own state held to
notebook 01's table after each call (``lab.queue_state``), and the gap the reap
guards probed: the dead workers wake between the reap and the next claim and
complete with their old tokens, which the fence must refuse. Then, per seed,
three worker processes drain a queue holding one poison job while a seeded
nemesis kills one worker and freezes another past its lease (a zombie), and
the run's sweeper calls the learner's script every 50 ms, recorded as a stall
sweep (its reply is what it put back and what it buried).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ... import completions, connector, jobs, keyspace, snapshots, stalled
from ...errors import BadInput, BadStream
from ...lab.checker import CLOCK_SLACK_MS
from ...lab.history import History, Op, Recorder
from ...lab.nemesis import Nemesis
from ...lab.run import RecordedMetronome, Run
from ...lab.worker_process import WorkerProcess
from ..registry import Findings
from .frame import Watched, call_script, checker_and_state, end_run, judge_script, state_holds, wait_drained


class REAP:
    """The judged run of 03.3: workers killed, frozen and poisoned mid-job; only the learner's reap brings
    their jobs back, and buries the poison at the cap."""

    LEASE_MS = 600
    WORK_MS = 250
    WORKERS = 3
    JOBS = 12  # the last is the poison
    MAX_ATTEMPTS = 3
    LIMIT = 1  # the N each call of the reap is handed in the run (the dry run hands 2)
    TICK_MS = 50
    SEEDS = 3
    DEADLINE_S = 15.0  # a bound for a loaded machine: a passing run takes about four seconds
    POISON = "poison"

    @staticmethod
    def nemesis(seed: int) -> Nemesis:
        # a kill and a freeze longer than the lease (a zombie) in every schedule, early, while workers are mid-job
        return Nemesis(seed=seed, kinds=("kill", "freeze"), count=2, must=("kill", "freeze"), gap_s=(0.15, 0.35),
                       freeze_s=(1.1, 1.3))


def reap_keys(queue: str) -> list[str]:
    """The reap's KEYS: active, pending, dead, and the queue's base (``emq:{q}:``; a row is base .. 'job:' .. id)."""
    return [keyspace.queue_key(queue, "active"), keyspace.queue_key(queue, "pending"),
            keyspace.queue_key(queue, "dead"), keyspace.base(queue)]


def as_report(reply: Any) -> stalled.StallReport:
    """The reap's reply, ``{moved back, buried}``, as a sweep's report; ``BadInput`` for any other shape."""
    ok = (isinstance(reply, list) and len(reply) == 2
          and all(isinstance(part, list) and all(isinstance(i, str) for i in part) for part in reply))
    if not ok:
        raise BadInput(f"your reap answered {reply!r}: answer two lists, {{the ids moved back, the ids buried}}")
    return stalled.StallReport(list(reply[0]), list(reply[1]))


class _LearnersReap(RecordedMetronome):
    """The run's metronome with the learner's script as its recovery leg, recorded as a stall sweep."""

    def __init__(self, sha: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sha = sha
        self.keys = reap_keys(self.queue)

    def tick(self) -> tuple[list[str], list[str]]:
        def call() -> stalled.StallReport:
            return as_report(self.conn.call("EVALSHA", self.sha, 4, *self.keys, REAP.LIMIT, REAP.MAX_ATTEMPTS))

        try:
            promoted = self.rec.promote(self.conn, self.queue)
            report = self.rec.call("stalled", call)
        except connector.LINK_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - the learner's runtime error: recorded as a refused sweep
            self.notes.note("metronome-error", error=f"{type(exc).__name__}: {exc}")
            return [], []
        self.ticks += 1
        self.promoted += len(promoted)
        self.recovered += len(report.requeued)
        return promoted, report.requeued


class _ReapRun(Run):
    """A Run whose metronome reaps with the learner's script, and whose slots are kept filled: a worker
    the poison killed is replaced, as a supervisor would."""

    def __init__(self, sha: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sha = sha
        self._slots_lock = threading.Lock()
        self._keeping = threading.Event()
        self._keeper: threading.Thread | None = None

    def make_metronome(self, rec: Recorder) -> RecordedMetronome:
        return _LearnersReap(self.sha, self.conn.fork(), self.queue, rec, self.nemesis,
                             interval_ms=self.tick_ms, recovery="stalled", record=self.record)

    def start_metronome(self) -> None:
        super().start_metronome()
        if self._keeper is None:
            self._keeping.set()
            self._keeper = threading.Thread(target=self._keep, name="judge-keeper", daemon=True)
            self._keeper.start()

    def kill(self, slot: int, replace: bool = True) -> WorkerProcess | None:
        with self._slots_lock:  # the keeper never fills a slot the nemesis is refilling
            return super().kill(slot, replace)

    def _keep(self) -> None:
        while self._keeping.is_set():
            with self._slots_lock:
                for i, w in enumerate(self.slots):
                    if self._keeping.is_set() and w is not None and not w.alive:
                        self.spawn(i).wait_ready()
            time.sleep(0.05)

    def stop(self) -> None:
        self._keeping.clear()
        if self._keeper is not None:
            self._keeper.join(timeout=30)
        super().stop()


def _handler_module(folder: Path) -> str:
    """The workers' handler: the kit's ``work``, except for the poison, which kills its worker every time."""
    (folder / "judge_poison.py").write_text(
        "# written by echomq_teach.course.judges.reap for one judged run\n"
        "import os\nimport signal\n\nfrom echomq_teach.lab.handlers import work\n\n\n"
        "def handler(job, ctx):\n"
        f"    if job.payload.endswith({REAP.POISON!r}):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)  # a poison message: its handler takes the worker down\n"
        "    return work(job, ctx)\n"
    )
    return "judge_poison:handler"


# -- the dry run: answers known, the state held to the table, the gap probed ----------------------------------
def _entries(conn: Any, queue: str, job: str, f: Findings) -> list[completions.Settle] | None:
    """The completions stream's entries for ``job`` (None, with a finding, when an entry is of no known shape)."""
    try:
        return [s for s in completions.read_all(conn, queue) if s.job_id == job]
    except BadStream as exc:
        f.expect(False, f"your reap wrote an entry the completions stream's readers refuse: {exc}.")
        return None


def _buried(conn: Any, queue: str, s: snapshots.Snapshot, job: str, f: Findings) -> bool:
    """The job at the cap is buried: in dead, its row dead, attempts as they were, one stalled entry."""
    said = (f"the lease of {job} lapsed on its attempt {REAP.MAX_ATTEMPTS} of {REAP.MAX_ATTEMPTS} (max_attempts, "
            "ARGV[2])")
    where = s.where(job)
    if not f.expect(where == ["dead"], f"{said}: a lapse at the cap buries the job in dead, as a poison message "
                    f"must stop somewhere; your reap left it in {'/'.join(where) or 'no set'}."):
        return False
    row = s.rows.get(job, {})
    if not f.expect(row.get("state") == "dead" and row.get("attempts") == str(REAP.MAX_ATTEMPTS),
                    f"{said}: its row should say state dead, attempts {REAP.MAX_ATTEMPTS}; it says "
                    f"state {row.get('state')!r}, attempts {row.get('attempts')!r}."):
        return False
    entries = _entries(conn, queue, job, f)
    if entries is None:
        return False
    return f.expect(len(entries) == 1 and entries[0].outcome == jobs.STALLED,
                    f"{said}: its burial is its life's one ending, recorded once on the completions stream "
                    f"(outcome stalled); the stream holds {len(entries)} entries for it"
                    f"{' (outcome ' + entries[0].outcome + ')' if len(entries) == 1 else ''}.")


def _moved_back(s: snapshots.Snapshot, job: str, f: Findings) -> bool:
    """A job below the cap is back in pending, its row pending, its attempts as the dead worker left them."""
    where, row = s.where(job), s.rows.get(job, {})
    said = f"the lease of {job} lapsed on its attempt 1 of {REAP.MAX_ATTEMPTS}"
    return (f.expect(where == ["pending"], f"{said}: your reap should move it back to pending; it is in "
                     f"{'/'.join(where) or 'no set'}.")
            and f.expect(row.get("state") == "pending", f"{said}: moved back, its row should say pending; it says "
                         f"{row.get('state')!r}.")
            and f.expect(row.get("attempts") == "1", f"{said}: its attempts should stay 1 (the next claim raises "
                         f"it, and that new token is what the dead worker's settle cannot match); it is "
                         f"{row.get('attempts')!r}."))


def _call(conn: Any, sha: str, queue: str, n: int, f: Findings) -> tuple[bool, Any]:
    return call_script(conn, sha, reap_keys(queue), [2, REAP.MAX_ATTEMPTS], f, f"on call {n} of a dry run")


def _answered(reply: Any, want: tuple[list[str], list[str]], n: int, f: Findings) -> bool:
    """The reply of call ``n`` is ``{moved back, buried}`` as ``want`` says (read after what the call did)."""
    try:
        report = as_report(reply)
    except BadInput as exc:
        f.expect(False, f"call {n} of a dry run: {exc}.")
        return False
    return f.expect((report.requeued, report.dead) == want,
                    f"call {n} of a dry run should answer {{{want[0]}, {want[1]}}} (the ids moved back, the ids "
                    f"buried); your reap answered {{{report.requeued}, {report.dead}}}.")


def _reap_dry_run(conn: Any, sha: str, f: Findings) -> bool:
    """Three leases lapsed — ``capped`` on its third attempt of three (two handler errors before), ``first``
    and ``third`` on their first — and one live, a limit of 2: call 1 buries ``capped`` and moves ``first``
    back, call 2 moves ``third``, call 3 nothing; the live lease is never touched. After call 1, before any
    claim, the dead workers wake and complete with their old tokens: both refused, nothing written."""
    queue = "judge-dry-reap"
    jobs.drop(conn, queue)
    capped = jobs.enqueue(conn, queue, "fails twice, then its worker dies")
    for _ in range(REAP.MAX_ATTEMPTS - 1):
        c = jobs.claim(conn, queue, 30_000)
        assert c is not None and c.id == capped
        jobs.retry(conn, queue, c.id, c.attempts, "the handler failed", delay_ms=1, max_attempts=REAP.MAX_ATTEMPTS)
        time.sleep(0.005)
        jobs.promote(conn, queue)
    first, third, live = (jobs.enqueue(conn, queue, f"job {i}") for i in range(3))
    held: dict[str, jobs.Claimed] = {}
    for want in (capped, first, third):  # three deadlines, 3 ms apart, in this order
        c = jobs.claim(conn, queue, 20)
        assert c is not None and c.id == want
        held[want] = c
        time.sleep(0.003)
    assert held[capped].attempts == REAP.MAX_ATTEMPTS
    alive = jobs.claim(conn, queue, 60_000)
    assert alive is not None and alive.id == live
    time.sleep(0.05)
    deadline = conn.call("ZSCORE", keyspace.queue_key(queue, "active"), live)

    ok, reply = _call(conn, sha, queue, 1, f)
    if not ok:
        return False
    s = snapshots.snapshot(conn, queue)
    if not state_holds(conn, queue, f, "after call 1 of a dry run (a limit of 2)"):
        return False
    if not f.expect(s.where(capped) != ["active"] or s.where(first) != ["active"],
                    "call 1 of a dry run moved nothing, though three leases lapsed some 50 ms ago by the server's "
                    "clock: a lease has lapsed once the server's TIME, in milliseconds, has passed its deadline."):
        return False
    if not (f.expect(s.where(live) == ["active"] and conn.call("ZSCORE", keyspace.queue_key(queue, "active"), live)
                     == deadline, f"your reap moved {live}, whose lease runs for another minute by the server's "
                     "clock: only a lease whose deadline has passed is reaped.")
            and f.expect(s.where(third) == ["active"], f"call 1 of a dry run handed a limit of 2 (ARGV[1]) also "
                         f"moved {third}, a third lapsed lease: at most N a call, so that one call never holds the "
                         "node for long.")
            and _buried(conn, queue, s, capped, f) and _moved_back(s, first, f)):
        return False
    if not _answered(reply, ([first], [capped]), 1, f):
        return False
    # the gap: the dead workers wake before anyone claims again, and complete with their old tokens
    for job in (first, capped):
        before = snapshots.snapshot(conn, queue)
        late = jobs.complete(conn, queue, job, held[job].attempts, "late")
        said = (f"after your reap, the worker that held {job} woke before any new claim and completed with its "
                f"token {held[job].attempts}")
        if not state_holds(conn, queue, f, said):
            return False
        if not f.expect(late == jobs.STALE, f"{said}: the fence answered {late!r}, because its row still says "
                        f"{before.state(job)!r}; the fence refuses a settle once the row is no longer active, so a "
                        "reap leaves every row it moves in the state of its new set."):
            return False
    for n, want in ((2, ([third], [])), (3, ([], []))):
        ok, reply = _call(conn, sha, queue, n, f)
        if not (ok and state_holds(conn, queue, f, f"after call {n} of a dry run") and _answered(reply, want, n, f)):
            return False
    jobs.drop(conn, queue)
    return True


# -- the judged run ----------------------------------------------------------------------------------------------
def _released_early(history: History, lease_ms: int) -> list[tuple[Op, Op]]:
    """Each call of the reap that moved a job before the lease of its last claim could have lapsed, with that claim.

    Sound whatever the workers' speed: the claim's deadline is no earlier than its send plus the lease,
    and the reap ran no later than its answer, both stamped on the node's clock."""
    claims: dict[str, list[Op]] = {}
    for c in history.calls("claim"):
        if c.ok and c.job:
            claims.setdefault(c.job, []).append(c)
    out = []
    for reap in history.calls("stalled"):
        for job in reap.released() + reap.buried():
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


def _poison_claims(history: History, poison: str) -> int:
    return sum(1 for c in history.calls("claim") if c.ok and c.job == poison)


def _one_reap_seed(node: Any, sha: str, seed: int, f: Findings) -> bool:
    """One judged run of a reap; False (with findings) when it does not pass."""
    queue = f"judge-reap-{seed}"
    folder = Path(tempfile.mkdtemp(prefix="echomq-judge-"))
    try:
        with _ReapRun(sha, node, queue, workers=REAP.WORKERS, lease_ms=REAP.LEASE_MS, work_ms=REAP.WORK_MS,
                      handler=_handler_module(folder), handler_path=folder, max_attempts=REAP.MAX_ATTEMPTS,
                      retry_delay_ms=20, tick_ms=REAP.TICK_MS, timeout=REAP.DEADLINE_S + 20) as run:
            enqueued = run.produce(REAP.JOBS, payload=lambda i: REAP.POISON if i == REAP.JOBS - 1 else f"job {i}")
            poison = enqueued[-1]
            run.start()
            watched = Watched(run)
            faults = REAP.nemesis(seed).run(watched, deadline_s=REAP.DEADLINE_S)  # type: ignore[arg-type]
            # stop early once the verdict is known: a lease reaped before it lapsed, the poison past its cap
            drained = wait_drained(run, REAP.DEADLINE_S, lambda h: bool(_released_early(h, REAP.LEASE_MS))
                                   or _poison_claims(h, poison) > REAP.MAX_ATTEMPTS)
            e = end_run(run, seed, faults, watched=watched)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if not checker_and_state(e, "stalled", f):
        return False
    said, history, report = e.said, e.history, e.report
    big = [o for o in history.calls("stalled") if o.ok and len(o.released()) + len(o.buried()) > REAP.LIMIT]
    if not f.expect(not big, f"{said}: a call of your reap handed a limit of {REAP.LIMIT} handled "
                    f"{len(big[0].released()) + len(big[0].buried()) if big else 0} leases."):
        return False
    early = _released_early(history, REAP.LEASE_MS)
    if early:
        reap, claim = early[0]
        f.expect(False, f"{said}: your reap moved {len(early)} lease(s) before they could have lapsed (e.g. "
                 f"{claim.job}, claimed by {claim.worker} with a {REAP.LEASE_MS} ms lease, was reaped "
                 f"{reap.latest - claim.sent:.0f} ms after the claim was sent, by the server's clock).")
        return False
    tries = _poison_claims(history, poison)
    if not f.expect(tries <= REAP.MAX_ATTEMPTS and report.dead == 1 and poison in {
            j for o in history.calls("stalled") for j in o.buried()},
                    f"{said}: the poison job {poison} (its handler kills its worker, every time) was claimed {tries} "
                    f"times with max_attempts {REAP.MAX_ATTEMPTS}, and {'buried' if report.dead else 'never buried'}: "
                    "the lapse of its last attempt must bury it."):
        return False
    held = _held_by_the_killed(history)
    missed = sorted(held - set(report.recovered))
    if not drained or report.unfinished or missed:
        f.expect(False, f"{said}: {len(report.unfinished)} of {REAP.JOBS} jobs were not done within "
                 f"{REAP.DEADLINE_S:.0f} s; of the {len(held)} job(s) killed workers held, your reap brought back "
                 f"and saw done {len(held) - len(missed)}.")
        return False
    return True


def judge_reap(source: Any, f: Findings, seeds: Iterable[int] | None = None) -> None:
    """Judge a bounded reap script (03.3) on a node of the judge's own, over seeds it draws: its dry run, then
    every seed's run under a kill, a zombie and a poison job."""
    judge_script(source, f, dry_run=_reap_dry_run, one_seed=_one_reap_seed, seeds=seeds, n_seeds=REAP.SEEDS,
                 join_s=REAP.DEADLINE_S * 4 + 60)

