"""03.7 · your queue, stage 4: the beat, judged.

``beat.py`` is your consumer's beat: a worker process calls ``beat(queue, handle, budget)`` again and again
(``lab.own_beat``), in the place of its own beat and of the run's metronome. One beat promotes the retries
that came due and recovers the lapsed leases (your recover.lua), whatever its budget says; then, with budget
left (``budget.take()``), it claims one job (a claim that brings nothing gives the budget back), hands it to
``handle`` and settles it as the handler said: complete, or retry with the reason. It answers the settle's
outcome, or None when it claimed nothing. No one else sweeps: a beat that never recovers strands every job a
killed worker held.

The probes call your beat in this process, on the judge's node, each beat's calls recorded for the checker: on
an empty queue, on one job, on a job whose handler fails, on a budget of none beside a lapsed lease and a due
retry (the sweeps must still come), on three jobs with a budget of one; each beat's answer (the settle's outcome,
None when it claimed nothing) and the result a completion records. The judged run: three worker processes beat
with your beat.py (no metronome), twelve jobs (two fail once, one is poison: its handler kills its worker every
time), under a seeded nemesis of a kill and a freeze past the lease; then, late, the queue drained and every
worker long started, three jobs more and a freeze past the lease of a worker holding one: a killed worker's slot
is refilled and a fresh process's first beats recover, so only this late lapse shows a beat that stops sweeping.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ... import completions, jobs, keyspace, snapshots
from ...errors import BadStream
from ...lab.checker import FinalState
from ...lab.history import History
from ...lab.nemesis import Nemesis
from ...lab.own_beat import Calls, share_of
from ...lab.run import Fault
from ..registry import Findings
from .frame import server_ms, state_holds
from .queue import Loaded, Scenario, judged_run, ran_clean, run_folder, scenario
from .stage_recover import KeptRun, held_by_the_killed, poison_bound


class BEAT:
    """The judged run of 03.7: no metronome, only your workers' beats."""

    LEASE_MS = 600
    WORK_MS = 100
    DELAY_MS = 40
    MAX_ATTEMPTS = 3
    WORKERS = 3
    JOBS = 12  # two fail once (a "!"), the last is the poison
    BUDGET = 40  # each worker's: more than it needs, a bound all the same
    SEEDS = 2
    DEADLINE_S = 12.0
    #: late in the run: the queue drained, the workers beat idle this long, then a freeze past the lease takes a
    #: worker holding one of LATE jobs (its slot is not refilled: only the others' beats, long started, recover it)
    IDLE_S = 1.0
    LATE = 3
    LATE_FREEZE_S = 1.6
    #: how many beats a probe allows for what a beat must do (a beat may sweep on some beats only)
    BEATS = 10
    POISON = "poison"

    @staticmethod
    def nemesis(seed: int) -> Nemesis:
        return Nemesis(seed=seed, kinds=("kill", "freeze"), count=2, must=("kill", "freeze"), gap_s=(0.15, 0.35),
                       freeze_s=(1.0, 1.2))


SEEDS, DEADLINE_S = BEAT.SEEDS, BEAT.DEADLINE_S


def _handler_module(folder: Path) -> str:
    """The workers' handler: work; fail the first try of a job marked "!"; the poison kills its worker."""
    (folder / "judge_beat.py").write_text(
        "# written by echomq_teach.course.judges.stage_beat for one judged run\n"
        "import os\nimport signal\nimport time\n\nfrom echomq_teach.consumer import Error\n\n\n"
        "def handler(job, ctx):\n"
        f"    if job.payload == {BEAT.POISON!r}:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)  # a poison message: its handler takes the worker down\n"
        "    ctx.work()\n"
        "    if job.payload.startswith('late'):\n"
        "        time.sleep(0.3)  # late in the run: long enough that a freeze finds its worker at it\n"
        "    if job.payload.endswith('!') and job.attempts == 1:\n"
        "        return Error('the first try of a job marked ! fails')\n"
        "    return f'done {job.payload}'\n"
    )
    return "judge_beat:handler"


# -- the probes: your beat in this process, each of its calls recorded -------------------------------------------
class _Probe:
    """Beats of your beat on one probe's queue: its calls recorded as worker ``mine``'s, a handler that fails
    what the payload says, and a budget."""

    def __init__(self, s: Scenario, loaded: Loaded, budget: int | None) -> None:
        self.s, self.beat = s, loaded.beat
        self.calls = Calls(s.conn, s.queue, s.rec("mine"), lease_ms=30_000, retry_delay_ms=BEAT.DELAY_MS,
                           max_attempts=BEAT.MAX_ATTEMPTS, record=True)
        self.share = share_of(budget)
        self.handled: list[str] = []
        #: what your beat answered on the beat that handed each job to handle; and on each beat that handed none
        self.answered: dict[str, Any] = {}
        self.idle: list[Any] = []

    def handle(self, job: jobs.Claimed) -> tuple[bool, Any]:
        self.handled.append(job.id)
        if job.payload.startswith("fails"):
            return False, "the handler failed"
        return True, f"done {job.payload}"

    def beats(self, n: int, f: Findings, when: str, until: Callable[[], bool] = lambda: False) -> bool:
        """Up to ``n`` beats (fewer once ``until()`` holds); False, with the finding, when one raised."""
        assert self.beat is not None
        for _ in range(n):
            before = len(self.handled)
            try:
                answer = self.beat(self.calls, self.handle, self.share)
            except Exception as exc:  # noqa: BLE001 - your beat's bug: a finding that names its line
                where = next((fr for fr in reversed(traceback.extract_tb(exc.__traceback__))
                              if fr.filename.endswith("beat.py")), None)
                at = f" (line {where.lineno} of beat.py)" if where else ""
                f.expect(False, f"your beat raised {when}: {type(exc).__name__}: {exc}{at}.")
                return False
            if len(self.handled) > before:
                self.answered[self.handled[-1]] = answer
            else:
                self.idle.append(answer)
            if until():
                break
        return True

    def claims(self) -> int:
        return sum(1 for o in self.s.history().calls("claim") if o.ok and o.job and o.worker == "mine")


def _one_job(node: Any, loaded: Loaded, f: Findings) -> bool:
    """An empty queue, then one job, then one whose handler fails: the first beat claims nothing and keeps its
    budget; the next completes the job; the next retries the failing one with its reason."""
    with scenario(node, loaded, "probe-beat-one") as s:
        p = _Probe(s, loaded, 5)
        if not p.beats(1, f, "on an empty queue"):
            return False
        if not f.expect(p.idle == [None], f"on an empty queue your beat claimed nothing: it should answer None (the "
                        f"worker then pauses before its next beat); it answered {p.idle[0]!r}."):
            return False
        if not f.expect(p.share.budget.taken == 0, f"on an empty queue your beat claimed nothing, yet its budget went "
                        f"from 5 jobs left to {5 - p.share.budget.taken}: a beat takes one before its claim "
                        "(budget.take()) and gives it back when the claim brings nothing (budget.give_back())."):
            return False
        job = s.enqueue("one job")
        if not p.beats(BEAT.BEATS, f, "on a queue of one job", lambda: job in p.handled):
            return False
        snap = snapshots.snapshot(s.conn, s.queue)
        if not f.expect(p.handled == [job] and job not in snap.rows and not snap.where(job),
                        f"one job waits: a beat should claim it, hand it to handle and complete it (its row gone); "
                        f"after {BEAT.BEATS} beats, handle saw {p.handled}, and the job is in "
                        f"{'/'.join(snap.where(job)) or 'no set'}{' with its row' if job in snap.rows else ''}."):
            return False
        if not (_answered(p, job, "ok", "completed it", f) and _settled_as_said(s, job, "done one job", f)):
            return False
        failing = s.enqueue("fails: its handler raises")
        if not p.beats(BEAT.BEATS, f, "on a job whose handler fails", lambda: failing in p.handled):
            return False
        snap = snapshots.snapshot(s.conn, s.queue)
        if not f.expect(snap.where(failing) == ["schedule"] and snap.rows[failing].get("last_error")
                        == "the handler failed",
                        f"a job's handler answered (False, 'the handler failed'): your beat should retry it with that "
                        f"reason (queue.retry(job, reason)): it waits in schedule; it is in "
                        f"{'/'.join(snap.where(failing)) or 'no set'}, last_error "
                        f"{snap.rows.get(failing, {}).get('last_error')!r}."):
            return False
        if not _answered(p, failing, "scheduled", "retried it", f):
            return False
        return (state_holds(s.conn, s.queue, f, "after your beats", settled=[job])
                and f.expect(p.share.budget.taken == 2, f"two jobs were claimed, and each claim took one of the "
                             f"budget: it should have taken 2; it took {p.share.budget.taken}.")
                and s.valid("your beats on an empty queue, one job, and a job whose handler fails", f))


def _answered(p: _Probe, job: str, outcome: str, did: str, f: Findings) -> bool:
    """The beat that settled ``job`` answered the settle's ``outcome``, as a worker reads it."""
    said = p.answered.get(job)
    return f.expect(said == outcome, f"your beat {did}, and the settle answered {outcome!r}: a beat answers the "
                    f"settle's outcome (the worker reads it: None says it claimed nothing, and the worker pauses as "
                    f"on an empty queue); yours answered {said!r}.")


def _settled_as_said(s: Scenario, job: str, result: str, f: Findings) -> bool:
    """``job``'s completion recorded the handler's result, as the handler said it."""
    try:
        ended = [e for e in completions.read_all(s.conn, s.queue) if e.job_id == job]
    except BadStream as exc:
        return f.expect(False, f"the completion of {job} left an entry the completions stream's readers refuse: {exc}.")
    got = ended[0].result if ended else None
    return f.expect(got == result, f"the handler answered (True, {result!r}): your beat should complete the job with "
                    f"that result, as the handler said it (its readers, and a flow's parent, read it); the completion "
                    f"recorded {got!r}.")


def _due_as_asked(s: Scenario, job: str, sent: int, delay_ms: int, f: Findings) -> bool:
    """The retry the probe made (your retry.lua, stage 03.3) is due when the spec says: ``delay_ms`` after the
    retry on the job's first try. When it is not, your retry.lua is the cause, not your beat: the finding says so."""
    score = s.conn.client.zscore(keyspace.queue_key(s.queue, "schedule"), job)
    ahead = None if score is None else int(score) - sent
    # not in schedule at all: the findings that follow say where it is; the margin is a loaded machine's round trip
    return f.expect(ahead is None or ahead <= delay_ms + 250,
                    f"your retry.lua (stage 03.3), not your beat, is the cause here: handed delay_ms {delay_ms} on a "
                    f"job's first try, it scheduled the retry {ahead} ms ahead, where the spec says delay_ms × 2^0 = "
                    f"{delay_ms} ms (it reads delay_ms from ARGV[3]; a delay written into the script passes only when "
                    f"the caller's is the same). Repair retry.lua, or load 03.3's reference, and check again.")


def _sweeps_without_budget(node: Any, loaded: Loaded, f: Findings) -> bool:
    """A budget of none, a lease that lapsed (its worker gone), a retry that came due, a job pending: within a
    few beats the lapsed lease is recovered and the retry promoted, and nothing is claimed."""
    with scenario(node, loaded, "probe-beat-sweeps") as s:
        lapsed, due, waiting = (s.enqueue(p) for p in ("its worker is gone", "failed once", "waiting"))
        gone = s.claim("gone", 20)
        failed = s.claim("earlier", 30_000)
        assert gone is not None and gone.id == lapsed and failed is not None and failed.id == due
        sent = server_ms(s.conn)
        s.retry("earlier", due, failed.attempts, "failed once", 1, BEAT.MAX_ATTEMPTS)
        if not _due_as_asked(s, due, sent, 1, f):
            return False
        time.sleep(0.05)
        p = _Probe(s, loaded, 0)
        back = lambda: snapshots.snapshot(s.conn, s.queue).pending == sorted([lapsed, due, waiting])  # noqa: E731
        if not p.beats(BEAT.BEATS, f, "with no budget left", back):
            return False
        snap = snapshots.snapshot(s.conn, s.queue)
        if not f.expect(p.claims() == 0 and not p.handled, f"with no budget left (budget.take() answers 0) your beat "
                        f"claimed {p.claims()} job(s): a worker whose budget is spent claims nothing more."):
            return False
        return (f.expect(snap.where(lapsed) == ["pending"],
                         f"a lease lapsed 50 ms ago (its worker gone): within {BEAT.BEATS} beats your beat should "
                         f"recover it (queue.recover()), budget or none, as nobody else sweeps; it is still in "
                         f"{'/'.join(snap.where(lapsed)) or 'no set'}.")
                and f.expect(snap.where(due) == ["pending"],
                             f"a retry came due 50 ms ago: within {BEAT.BEATS} beats your beat should promote it "
                             f"(queue.promote()), budget or none; it is still in "
                             f"{'/'.join(snap.where(due)) or 'no set'}.")
                and state_holds(s.conn, s.queue, f, "after your beats with no budget")
                and s.valid("your beats with no budget, beside a lapsed lease and a due retry", f))


def _budget_of_one(node: Any, loaded: Loaded, f: Findings) -> bool:
    """Three jobs and a budget of one: however many beats, one job is claimed and completed."""
    with scenario(node, loaded, "probe-beat-budget") as s:
        for i in range(3):
            s.enqueue(f"job {i}")
        p = _Probe(s, loaded, 1)
        if not p.beats(BEAT.BEATS, f, "with a budget of one"):
            return False
        snap = snapshots.snapshot(s.conn, s.queue)
        return f.expect(p.claims() == 1 and len(snap.pending) == 2 and not snap.active,
                        f"three jobs wait and the budget is one: {BEAT.BEATS} beats should claim and complete one "
                        f"and leave two pending; your beats claimed {p.claims()}, and pending holds "
                        f"{len(snap.pending)}, active {len(snap.active)}.")


def probes(node: Any, loaded: Loaded, f: Findings) -> bool:
    """Stage 4's probes: your beat, called in this process."""
    return _one_job(node, loaded, f) and _sweeps_without_budget(node, loaded, f) and _budget_of_one(node, loaded, f)


# -- the judged run ----------------------------------------------------------------------------------------------
def never_finished(history: History, final: FinalState, lease_ms: int) -> list[str]:
    """Each job the run left unfinished, and why as far as the history tells: where it is, who held it last,
    and whether any beat recovered or promoted after its lease lapsed (or its retry came due)."""
    out = []
    sweeps = {op: [o for o in history.calls(op) if o.ok] for op in ("stalled", "promote")}
    t0 = history.start
    for job in sorted(set().union(*(final.sets[s] for s in ("pending", "active", "schedule")))):
        where = final.where(job)[0]
        claims = [c for c in history.calls("claim") if c.ok and c.job == job]
        if where == "active" and claims:
            last = claims[-1]
            lapsed = last.sent + lease_ms
            killed = [n for n in history.notes("kill", "freeze") if n.extra.get("worker") == last.worker]
            after = [o for o in sweeps["stalled"] if o.sent > lapsed]
            why = (f"{last.worker} held it (claimed at +{(last.sent - t0) / 1000:.1f} s)"
                   + (f" when the nemesis {'killed' if killed[0].op == 'kill' else 'froze'} it" if killed else "")
                   + f"; its lease lapsed at +{(lapsed - t0) / 1000:.1f} s and "
                   + (f"{len(after)} recovery call(s) ran after, none moving it" if after
                      else _none_after(history, sweeps["stalled"], lapsed)))
        elif where == "schedule":
            after = [o for o in sweeps["promote"] if job in o.released()]
            why = ("a retry put it in schedule, and no beat promoted it (queue.promote())" if not after
                   else "it was promoted, and failed again")
        else:
            why = "it waits in pending: no beat claimed it (a budget spent on claims that brought nothing?)"
        out.append(f"{job} in {where}: {why}")
    return out


def _late_lapse(watched: Any, held: dict[str, str]) -> list[Fault]:
    """Late in the run (the queue drained, every worker beating for ``IDLE_S`` since): ``LATE`` jobs, and the first
    worker to start one frozen past its lease, then thawed. ``held`` gets that job and its worker; answers the
    freeze."""
    run = watched.run
    # a slot the poison emptied is refilled by the keeper: wait until every worker recorded its start, then more
    ready_by = time.monotonic() + 15.0
    while time.monotonic() < ready_by and not (
            all(w is not None and w.alive for w in run.slots)
            and {w.name for w in run.slots if w is not None} <= set(run.history().workers())):
        time.sleep(0.05)
    time.sleep(BEAT.IDLE_S)
    for _ in range(3):  # a freeze that came after its worker's handler ended holds nothing: thawed, tried again
        late = set(run.produce(BEAT.LATE, payload=lambda i: f"late {i}"))
        deadline = time.monotonic() + 5.0
        started: list[Any] = []
        while not started and time.monotonic() < deadline:
            started = [o for o in run.history().notes("run") if o.job in late]
            time.sleep(0.01)
        if not started:
            return []
        job, who = started[0].job, started[0].worker
        slot = next((i for i, w in enumerate(run.slots) if w is not None and w.name == who), None)
        if slot is None:
            return []
        fault = Fault((started[0].sent - run.history().start) / 1000, "freeze", slot, BEAT.LATE_FREEZE_S)
        watched.apply(fault)
        if any(o.worker == who and o.job == job for o in run.history().notes("ran")):
            watched.thaw(slot)
            run.wait_drained(5.0)
            continue
        held["job"], held["worker"] = job, who
        time.sleep(BEAT.LATE_FREEZE_S)
        watched.thaw(slot)
        return [fault]
    return []


def _none_after(history: History, recoveries: list[Any], lapsed: float) -> str:
    """No recovery call after a lease lapsed: how long the run went on, and whether any ran before (a beat that
    stopped recovering), so that a run cut short by its deadline is not told its beat never recovers."""
    gap = max(0.0, (history.end - lapsed) / 1000)
    before = [o for o in recoveries if o.sent <= lapsed]
    return (f"no recovery call ran in the {gap:.1f} s from then to the run's end"
            + (f", though {len(before)} ran before it" if before else ", nor any before it"))


def one_seed(node: Any, loaded: Loaded, seed: int, f: Findings) -> bool:
    """One judged run of your beat; False (with findings) when it does not pass."""
    assert loaded.beat_file is not None
    queue = f"judge-beat-{seed}"
    with run_folder() as folder:
        with KeptRun(node, queue, workers=BEAT.WORKERS, lease_ms=BEAT.LEASE_MS, work_ms=BEAT.WORK_MS,
                     handler=_handler_module(folder), handler_path=folder, max_attempts=BEAT.MAX_ATTEMPTS,
                     retry_delay_ms=BEAT.DELAY_MS, idle_ms=20, timeout=BEAT.DEADLINE_S + 20,
                     scripts=loaded.scripts, beat=loaded.beat_file, budget=BEAT.BUDGET) as run:
            enqueued = run.produce(BEAT.JOBS, payload=lambda i: BEAT.POISON if i == BEAT.JOBS - 1
                                   else f"job {i}{'!' if i in (2, 5) else ''}")
            poison = enqueued[-1]
            late: dict[str, str] = {}
            e, drained = judged_run(run, seed, BEAT.nemesis(seed), BEAT.DEADLINE_S, lambda h: False,
                                    then=lambda w: _late_lapse(w, late))
            final = run.final_state()
    if not ran_clean(e, loaded, f):
        return False
    said, history, report = e.said, e.history, e.report
    if not drained or report.unfinished:
        left = never_finished(history, final, BEAT.LEASE_MS)
        f.expect(False, f"{said}: {len(report.unfinished)} of {BEAT.JOBS} jobs never finished within "
                 f"{BEAT.DEADLINE_S:.0f} s, with no metronome: only your workers' beats sweep. "
                 + "; ".join(left[:3]) + ("." if len(left) <= 3 else f"; and {len(left) - 3} more."))
        return False
    if not poison_bound(said, history, report.dead, poison, BEAT.MAX_ATTEMPTS, f):
        return False
    held = held_by_the_killed(history) - {poison}
    missed = sorted(held - set(report.recovered))
    if not f.expect(not missed, f"{said}: of the {len(held)} job(s) killed workers held, your beats recovered "
                    f"{len(held) - len(missed)}; {missed[:3]} finished some other way."):
        return False
    return f.expect(bool(late) and late["job"] in report.recovered,
                    f"{said}: late in the run, the queue drained and your workers beating for {BEAT.IDLE_S:g} s, "
                    f"{late.get('worker')} froze for {BEAT.LATE_FREEZE_S:g} s holding {late.get('job')}, past its "
                    f"{BEAT.LEASE_MS} ms lease; the other workers beat on all that time, and none recovered it (it "
                    "waited for its holder to wake). A worker's beats recover for as long as it lives, not only its "
                    "first beats: a worker the supervisor keeps alive for days sweeps on its thousandth beat too."
                    if late else f"{said}: late in the run, no worker started a late job within 5 s.")
