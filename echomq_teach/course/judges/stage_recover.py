"""03.6 · your queue, stage 3: recover, with a poison bound, judged.

``recover.lua`` runs in the place of the kit's counted stall sweep (``@stalled_check``: its keys, arguments and
reply; the metronome, a consumer's recovery leg and your beat call it). It differs from the kit's: it counts no
stalls. It takes the lapsed leases, earliest deadline first, at most 100 a call; a job whose tries in this life
(attempts less ``prior_attempts``) are below its cap (its row's own ``max_attempts``, else ``ARGV[1]``) goes back to
pending, attempts untouched; a job that reached its cap is buried: in dead (scored with the server's now), its row's
state ``dead`` and ``last_error`` "stalled", its one ending recorded on the completions stream (outcome
``stalled``) when the caller asks. A poison job (one whose handler kills its worker, every time) is then tried up to
its cap and no more. An id in active whose row is gone leaves active and goes nowhere.

The probes are deterministic: lapsed leases whose answers are known (one at the cap after two handler errors, two
below it, one live, one of a new life after a reprocess, one under a cap of its own, one with no row, and two under
the caller's caps of 2 and 5, so that no cap written into the script passes; a burial scored with the server's now
and its entry carrying the row's attempts), the queue held to notebook 01's table after each call and the gap probed
(the dead workers wake before anyone claims again and complete with their old tokens: your complete.lua must refuse
them), the cap of 2 called without record (no entry), then 150 lapsed leases (100 a call, earliest first). The
judged run: three worker processes drain twelve jobs, one of them poison, while a seeded nemesis kills one worker
and freezes another past its lease; the run's metronome calls your recover.lua every 50 ms with a cap of 3. A queue
that loses no job yet lets the poison loop is valid to the checker: the stage's own finding says how often it was
claimed, and that it was never buried.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from ... import completions, jobs, keyspace, snapshots, transitions
from ...errors import BadInput, BadStream
from ...lab.checker import CLOCK_SLACK_MS
from ...lab.history import History, Op, Recorder
from ...lab.nemesis import Nemesis
from ...lab.run import RecordedMetronome, Run
from ...lab.worker_process import WorkerProcess
from ...stalled import StallReport
from ..registry import Findings
from .frame import server_ms, state_holds
from .queue import Loaded, failed_in, judged_run, probing, ran_clean, run_folder


class REAP:
    """The judged run of 03.6: workers killed, frozen and poisoned mid-job; only your recover.lua brings
    their jobs back, and buries the poison at the cap."""

    LEASE_MS = 600
    WORK_MS = 250
    WORKERS = 3
    JOBS = 12  # the last is the poison
    MAX_ATTEMPTS = 3
    TICK_MS = 50
    SEEDS = 2
    DEADLINE_S = 15.0  # a bound for a loaded machine: a passing run takes about four seconds
    POISON = "poison"
    #: the most lapsed leases one call handles
    PER_CALL = 100

    @staticmethod
    def nemesis(seed: int) -> Nemesis:
        # a kill and a freeze longer than the lease (a zombie) in every schedule, early, while workers are mid-job
        return Nemesis(seed=seed, kinds=("kill", "freeze"), count=2, must=("kill", "freeze"), gap_s=(0.15, 0.35),
                       freeze_s=(1.1, 1.3))


SEEDS, DEADLINE_S = REAP.SEEDS, REAP.DEADLINE_S


def as_report(reply: Any) -> StallReport:
    """Your recover.lua's reply, ``{moved back, buried}``, as a sweep's report; ``BadInput`` for any other shape."""
    ok = (isinstance(reply, list) and len(reply) == 2
          and all(isinstance(part, list) and all(isinstance(i, str) for i in part) for part in reply))
    if not ok:
        raise BadInput(f"your recover.lua answered {reply!r}: answer two lists, {{the ids moved back, the ids buried}}")
    return StallReport(list(reply[0]), list(reply[1]))


class KeptRun(Run):
    """A Run whose slots are kept filled: a worker that died (the poison killed it) is replaced, as a supervisor
    would; the keeper starts with the workers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._slots_lock = threading.Lock()
        self._keeping = threading.Event()
        self._keeper: threading.Thread | None = None
        self.keeper_failures: list[BaseException] = []  # the keeper's error, once it fails: the run is not judged

    def start(self, **options: Any) -> list[WorkerProcess]:
        started = super().start(**options)
        if self._keeper is None:
            self._keeping.set()
            self._keeper = threading.Thread(target=self._keep, name="judge-keeper", daemon=True)
            self._keeper.start()
        return started

    def kill(self, slot: int, replace: bool = True) -> WorkerProcess | None:
        with self._slots_lock:  # the keeper never fills a slot the nemesis is refilling
            return super().kill(slot, replace)

    def _keep(self) -> None:
        try:
            while self._keeping.is_set():
                with self._slots_lock:
                    for i, w in enumerate(self.slots):
                        if self._keeping.is_set() and w is not None and not w.alive and not w.frozen:
                            self.spawn(i).wait_ready()
                time.sleep(0.05)
        except Exception as exc:  # noqa: BLE001 - the harness's failure: kept for the judge (Unjudged), not printed
            self.keeper_failures.append(exc)

    def stop(self) -> None:
        self._keeping.clear()
        if self._keeper is not None:
            self._keeper.join(timeout=30)
        super().stop()


class _RecoverRun(KeptRun):
    """A kept Run whose metronome recovers with your recover.lua (the stall sweep's place), handed the cap."""

    def make_metronome(self, rec: Recorder) -> RecordedMetronome:
        m = RecordedMetronome(self.conn.fork(), self.queue, rec, self.nemesis, interval_ms=self.tick_ms,
                              recovery="stalled", record=self.record)
        m.max_stalled = REAP.MAX_ATTEMPTS  # what your recover.lua reads as its cap (ARGV[1])
        return m


def _handler_module(folder: Path) -> str:
    """The workers' handler: the kit's ``work``, except for the poison, which kills its worker every time."""
    (folder / "judge_poison.py").write_text(
        "# written by echomq_teach.course.judges.stage_recover for one judged run\n"
        "import os\nimport signal\n\nfrom echomq_teach.lab.handlers import work\n\n\n"
        "def handler(job, ctx):\n"
        f"    if job.payload.endswith({REAP.POISON!r}):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)  # a poison message: its handler takes the worker down\n"
        "    return work(job, ctx)\n"
    )
    return "judge_poison:handler"


# -- the probes: answers known, the state held to the table, the gap probed ---------------------------------------
def _entries(conn: Any, queue: str, job: str, f: Findings) -> list[completions.Settle] | None:
    """The completions stream's entries for ``job`` (None, with a finding, when an entry is of no known shape)."""
    try:
        return [s for s in completions.read_all(conn, queue) if s.job_id == job]
    except BadStream as exc:
        f.expect(False, f"your recover.lua wrote an entry the completions stream's readers refuse: {exc}.")
        return None


def _buried(conn: Any, queue: str, s: snapshots.Snapshot, job: str, tries: str, since: int, f: Findings,
            recorded: bool = True) -> bool:
    """The job at its cap is buried: in dead, scored with the server's now (read at ``since``, before the call, and
    after it), its row dead with last_error "stalled", attempts as they were, one stalled entry carrying them when
    the call asked to record (``recorded``), none when it did not."""
    said = f"the lease of {job} lapsed on {tries}"
    where = s.where(job)
    if not f.expect(where == ["dead"], f"{said}: a lapse at the cap buries the job in dead, as a poison message "
                    f"must stop somewhere; your recover.lua left it in {'/'.join(where) or 'no set'}."):
        return False
    row = s.rows.get(job, {})
    if not f.expect(row.get("state") == "dead", f"{said}: its row should say state dead; it says "
                    f"{row.get('state')!r}."):
        return False
    if not f.expect(row.get("last_error") == "stalled", f"{said}: buried, its row keeps why as last_error, "
                    "'stalled' (as the kit's sweep writes it), where an operator reading dead sees it; it says "
                    f"{row.get('last_error')!r}."):
        return False
    score, now = conn.call("ZSCORE", keyspace.queue_key(queue, "dead"), job), server_ms(conn)
    if not f.expect(score is not None and since - 1 <= float(score) <= now + 1,
                    f"{said}: buried, it is scored in dead with the server's TIME now, in milliseconds, when your "
                    "recover.lua ran (not its lapsed deadline); it is scored "
                    f"{'nothing' if score is None else f'{float(score) - since:.0f} ms from the moment of the call'}."):
        return False
    entries = _entries(conn, queue, job, f)
    if entries is None:
        return False
    if not recorded:
        return f.expect(not entries, f"{said} (no ARGV[2]): its burial writes no entry on the completions "
                        f"stream; yours wrote {len(entries)}: {entries}.")
    if not f.expect(len(entries) == 1 and entries[0].outcome == jobs.STALLED,
                    f"{said}: its burial is its life's one ending, recorded once on the completions stream "
                    f"(outcome stalled); the stream holds {len(entries)} entries for it"
                    f"{' (outcome ' + entries[0].outcome + ')' if len(entries) == 1 else ''}."):
        return False
    return f.expect(str(entries[0].attempts) == row.get("attempts"),
                    f"{said}: its stalled entry carries the row's attempts ({row.get('attempts')}: the token of the "
                    f"try that lapsed, which the floor and the checker read); yours carries {entries[0].attempts}.")


def _moved_back(s: snapshots.Snapshot, job: str, attempts: int, tries: str, f: Findings) -> bool:
    """A job below its cap is back in pending, its row pending, its attempts as the dead worker left them."""
    where, row = s.where(job), s.rows.get(job, {})
    said = f"the lease of {job} lapsed on {tries}"
    return (f.expect(where == ["pending"], f"{said}: your recover.lua should move it back to pending; it is in "
                     f"{'/'.join(where) or 'no set'}.")
            and f.expect(row.get("state") == "pending", f"{said}: moved back, its row should say pending; it says "
                         f"{row.get('state')!r}.")
            and f.expect(row.get("attempts") == str(attempts), f"{said}: its attempts should stay {attempts} (the "
                         "next claim raises it, and that new token is what the dead worker's settle cannot match); "
                         f"it is {row.get('attempts')!r}."))


def _call(conn: Any, queue: str, n: int, f: Findings, cap: int = REAP.MAX_ATTEMPTS,
          record: bool = True) -> StallReport | None:
    """Your recover.lua called once (as the stall sweep, cap ``cap`` in ARGV[1], recording unless ``record`` is
    False: then no ARGV[2]): its report, or None with a finding."""
    try:
        reply = conn.run(transitions.stalled_check(queue, cap, record=record))
    except Exception as exc:  # noqa: BLE001 - a runtime error of your Lua: a finding naming its line
        failed_in("recover.lua", f"on call {n} of the probes", exc, f)
        return None
    try:
        return as_report(reply)
    except BadInput as exc:
        f.expect(False, f"call {n} of the probes: {exc}.")
        return None


def _answered(report: StallReport, want: tuple[list[str], list[str]], n: int, f: Findings) -> bool:
    return f.expect((sorted(report.requeued), sorted(report.dead)) == (sorted(want[0]), sorted(want[1])),
                    f"call {n} of the probes should answer {{{want[0]}, {want[1]}}} (the ids moved back, the ids "
                    f"buried); your recover.lua answered {{{report.requeued}, {report.dead}}}.")


def _lapse(conn: Any, queue: str, want: str, lease_ms: int = 20) -> jobs.Claimed:
    c = jobs.claim(conn, queue, lease_ms)
    assert c is not None and c.id == want, f"the probe's job {want} was not claimed: {c!r}"
    time.sleep(0.003)  # the deadlines keep the claims' order
    return c


def _failed_to(conn: Any, queue: str, job: str, times: int) -> None:
    """``job`` (the only one pending) claimed and failed by its handler ``times`` times, each retry made due and
    promoted (as its delay passing would: whatever backoff your retry.lua asks, the probe does not wait it out)."""
    for i in range(times):
        c = jobs.claim(conn, queue, 30_000)
        assert c is not None and c.id == job, f"the probe's job {job} was not claimed for its try {i + 1}: {c!r}"
        jobs.retry(conn, queue, c.id, c.attempts, "the handler failed", delay_ms=1, max_attempts=REAP.MAX_ATTEMPTS)
        conn.call("ZADD", keyspace.queue_key(queue, "schedule"), "XX", 0, job)
        jobs.promote(conn, queue)


def _known(conn: Any, queue: str, f: Findings) -> bool:
    """Lapsed leases whose answers are known — ``capped`` on its third try of three (two handler errors before),
    ``first`` on its first, ``ghost`` an id in active with no row — and one live lease: call 1 buries ``capped``,
    moves ``first`` back, drops ``ghost``, leaves the live lease. Before any claim, the dead workers wake and
    complete with their old tokens: refused, nothing written; call 2 finds nothing. Then ``renewed`` lapses on
    the first try of a new life (buried at its cap, reprocessed) and ``own`` on its first try under a cap of 1
    of its own: call 3 moves ``renewed`` back and buries ``own``."""
    jobs.drop(conn, queue)
    capped = jobs.enqueue(conn, queue, "fails twice, then its worker dies")
    _failed_to(conn, queue, capped, REAP.MAX_ATTEMPTS - 1)
    first, live = (jobs.enqueue(conn, queue, p) for p in ("its worker dies", "alive"))
    held = {job: _lapse(conn, queue, job) for job in (capped, first)}
    assert held[capped].attempts == REAP.MAX_ATTEMPTS
    alive = jobs.claim(conn, queue, 60_000)
    assert alive is not None and alive.id == live
    conn.call("ZADD", keyspace.queue_key(queue, "active"), 1, "JOB000000ghost0")  # a deadline long past, no row
    time.sleep(0.05)
    deadline = conn.call("ZSCORE", keyspace.queue_key(queue, "active"), live)
    since = server_ms(conn)
    report = _call(conn, queue, 1, f)
    if report is None:
        return False
    s = snapshots.snapshot(conn, queue)
    if not state_holds(conn, queue, f, "after call 1 of the probes"):
        return False
    if not f.expect(s.where(capped) != ["active"] or s.where(first) != ["active"],
                    "call 1 of the probes moved nothing, though two leases lapsed some 50 ms ago by the server's "
                    "clock: a lease has lapsed once the server's TIME, in milliseconds, has passed its deadline."):
        return False
    cap = f"its try {REAP.MAX_ATTEMPTS} of {REAP.MAX_ATTEMPTS} (max_attempts, ARGV[1])"
    if not (f.expect(s.where(live) == ["active"] and conn.call("ZSCORE", keyspace.queue_key(queue, "active"), live)
                     == deadline, f"your recover.lua moved {live}, whose lease runs for another minute by the "
                     "server's clock: only a lease whose deadline has passed is recovered.")
            and _buried(conn, queue, s, capped, cap, since, f)
            and _moved_back(s, first, 1, f"its try 1 of {REAP.MAX_ATTEMPTS}", f)
            and f.expect("JOB000000ghost0" not in s.pending and "JOB000000ghost0" not in s.active,
                         "an id in active whose row is gone (a removed job) leaves active and goes nowhere: your "
                         f"recover.lua left it in {'/'.join(s.where('JOB000000ghost0')) or 'no set'}.")
            and _answered(report, ([first], [capped]), 1, f)):
        return False
    # the gap: the dead workers wake before anyone claims again, and complete with their old tokens
    for job in (first, capped):
        before = snapshots.snapshot(conn, queue)
        try:
            late = jobs.complete(conn, queue, job, held[job].attempts, "late", record=True)
        except Exception as exc:  # noqa: BLE001
            return failed_in("complete.lua", "when a worker woke after your recover.lua", exc, f)
        said = (f"after your recover.lua, the worker that held {job} woke before any new claim and completed with "
                f"its token {held[job].attempts}")
        if not state_holds(conn, queue, f, said):
            return False
        if not f.expect(late == jobs.STALE, f"{said}: it was answered {late!r}, because its row still says "
                        f"{before.state(job)!r}; the fence refuses a settle once the row is no longer active, so a "
                        "recovery leaves every row it moves in the state of its new set."):
            return False
    report = _call(conn, queue, 2, f)
    if not (report and state_holds(conn, queue, f, "after call 2 of the probes") and _answered(report, ([], []), 2, f)):
        return False
    jobs.drop(conn, queue)
    renewed = jobs.enqueue(conn, queue, "buried at its cap, then reprocessed")
    _failed_to(conn, queue, renewed, REAP.MAX_ATTEMPTS)
    jobs.reprocess(conn, queue, renewed)  # its next try is the first of a new life: attempts 4, prior 3
    own = jobs.enqueue(conn, queue, "a cap of its own: 1")
    conn.call("HSET", keyspace.job_key(queue, own), "max_attempts", 1)
    for job in (renewed, own):
        _lapse(conn, queue, job)
    time.sleep(0.05)
    since = server_ms(conn)
    report = _call(conn, queue, 3, f)
    if report is None:
        return False
    s = snapshots.snapshot(conn, queue)
    return (state_holds(conn, queue, f, "after call 3 of the probes")
            and _moved_back(s, renewed, REAP.MAX_ATTEMPTS + 1, f"the first try of a new life (buried at its cap, "
                            f"reprocessed: attempts {REAP.MAX_ATTEMPTS + 1}, prior_attempts {REAP.MAX_ATTEMPTS})", f)
            and _buried(conn, queue, s, own, "its try 1 of 1 (its row's own max_attempts, which wins over ARGV[1])",
                        since, f)
            and _answered(report, ([renewed], [own]), 3, f))


def _caps(conn: Any, queue: str, f: Findings) -> bool:
    """The cap is the caller's (ARGV[1]) when the row carries none, whatever it is: a job lapsed on its try 2
    under a cap of 2 is buried (call 4, not asked to record: no entry); one lapsed on its try 3 under a cap of 5
    goes back (call 5). No cap written into the script passes both."""
    for n, cap, failed in ((4, 2, 1), (5, 5, 2)):
        jobs.drop(conn, queue)
        job = jobs.enqueue(conn, queue, f"lapses on its try {failed + 1}, under a cap of {cap}")
        _failed_to(conn, queue, job, failed)
        _lapse(conn, queue, job)
        time.sleep(0.05)
        since = server_ms(conn)
        report = _call(conn, queue, n, f, cap=cap, record=n != 4)
        if report is None:
            return False
        s = snapshots.snapshot(conn, queue)
        tries = f"its try {failed + 1} of {cap} (max_attempts {cap}, ARGV[1]; its row carries none)"
        if not state_holds(conn, queue, f, f"after call {n} of the probes"):
            return False
        if failed + 1 >= cap:
            if not (_buried(conn, queue, s, job, f"{tries}, the call not asking to record", since, f,
                            recorded=False) and _answered(report, ([], [job]), n, f)):
                return False
        elif not (_moved_back(s, job, failed + 1, tries, f) and _answered(report, ([job], []), n, f)):
            return False
    jobs.drop(conn, queue)
    return True


def _bounded(conn: Any, queue: str, f: Findings) -> bool:
    """150 lapsed leases, their deadlines 10 ms apart: one call recovers the 100 earliest, the next the other 50,
    the third none (calls 6 to 8)."""
    jobs.drop(conn, queue)
    for i in range(150):
        jobs.enqueue(conn, queue, f"job {i}")
    held = [jobs.claim(conn, queue, 30_000) for _ in range(150)]
    lapsed = server_ms(conn) - 5_000
    active = keyspace.queue_key(queue, "active")
    conn.call("ZADD", active, "XX", *[x for i, c in enumerate(held) if c for x in (lapsed + 10 * i, c.id)])
    moved, first = [], set()
    for n in (6, 7, 8):
        report = _call(conn, queue, n, f)
        if report is None:
            return False
        moved.append(len(report.requeued) + len(report.dead))
        if n == 6:
            first = set(report.requeued + report.dead)
    earliest = {c.id for c in held[:REAP.PER_CALL] if c}
    jobs.drop(conn, queue)
    return (f.expect(moved == [REAP.PER_CALL, 50, 0], f"150 leases lapsed: three calls of your recover.lua should "
                     f"handle {REAP.PER_CALL}, 50 and 0 (at most {REAP.PER_CALL} a call, so that one call never "
                     f"holds the node for long); they handled {moved}.")
            and f.expect(first == earliest, f"150 leases lapsed, their deadlines 10 ms apart: the first call should "
                         f"take the {REAP.PER_CALL} that lapsed earliest (they have waited longest); "
                         f"{len(first - earliest)} of the ids it handled lapsed later than some it left in active."))


def probes(node: Any, loaded: Loaded, f: Findings) -> bool:
    """Stage 3's probes (your recover.lua as the stall sweep, your claim, complete and retry around it)."""
    queue = "probe-recover"
    with probing(node, loaded, queue) as conn:
        return _known(conn, queue, f) and _caps(conn, queue, f) and _bounded(conn, queue, f)


# -- the judged run ----------------------------------------------------------------------------------------------
def released_early(history: History, lease_ms: int) -> list[tuple[Op, Op]]:
    """Each call of the recovery that moved a job before the lease of its last claim could have lapsed, with that
    claim. Sound whatever the workers' speed: the claim's deadline is no earlier than its send plus the lease,
    and the recovery ran no later than its answer, both stamped on the node's clock."""
    claims: dict[str, list[Op]] = {}
    for c in history.calls("claim"):
        if c.ok and c.job:
            claims.setdefault(c.job, []).append(c)
    out = []
    for sweep in history.calls("stalled"):
        for job in sweep.released() + sweep.buried():
            before = [c for c in claims.get(job, []) if (c.answered or c.sent) <= sweep.sent]
            if before and sweep.latest + CLOCK_SLACK_MS < before[-1].sent + lease_ms:
                out.append((sweep, before[-1]))
    return out


def held_by_the_killed(history: History) -> set[str]:
    """The jobs a killed worker held when it died: claimed, never settled by it."""
    killed = {n.extra.get("worker") for n in history.notes("kill")}
    held = {(o.job, o.token) for o in history.calls("claim") if o.worker in killed and o.ok and o.job}
    settled = {(o.job, o.token) for o in history.calls("complete", "retry") if o.worker in killed}
    return {job for job, _ in held - settled}


def claims_of(history: History, job: str) -> int:
    return sum(1 for c in history.calls("claim") if c.ok and c.job == job)


def poison_bound(said: str, history: History, dead: int, poison: str, cap: int, f: Findings) -> bool:
    """The poison job was claimed at most ``cap`` times and buried: the stage's own finding when not (the checker
    finds nothing wrong with a queue that loops: no job is lost, none settled twice)."""
    tries = claims_of(history, poison)
    buried = poison in {j for o in history.calls("stalled") for j in o.buried()}
    put_back = sum(1 for o in history.calls("stalled") if poison in o.released())
    return f.expect(tries <= cap and dead >= 1 and buried,
                    f"{said}: the poison job {poison} (its handler kills its worker, every time) was claimed {tries} "
                    f"times with max_attempts {cap}, and {'buried' if buried else 'never buried'}: each lapse of "
                    f"its lease was put back in pending ({put_back} times) by your recovery. The checker finds "
                    "nothing wrong with that (no job lost, none settled twice), and the poison loops for ever: the "
                    "lapse of its last try must bury it.")


def one_seed(node: Any, loaded: Loaded, seed: int, f: Findings) -> bool:
    """One judged run of your recovery; False (with findings) when it does not pass."""
    queue = f"judge-recover-{seed}"
    with run_folder() as folder:
        with _RecoverRun(node, queue, workers=REAP.WORKERS, lease_ms=REAP.LEASE_MS, work_ms=REAP.WORK_MS,
                         handler=_handler_module(folder), handler_path=folder, max_attempts=REAP.MAX_ATTEMPTS,
                         retry_delay_ms=20, tick_ms=REAP.TICK_MS, recovery="stalled",
                         timeout=REAP.DEADLINE_S + 20, scripts=loaded.scripts) as run:
            enqueued = run.produce(REAP.JOBS, payload=lambda i: REAP.POISON if i == REAP.JOBS - 1 else f"job {i}")
            poison = enqueued[-1]
            # stop early once the verdict is known: a lease recovered before it lapsed, the poison past its cap
            e, drained = judged_run(run, seed, REAP.nemesis(seed), REAP.DEADLINE_S,
                                    lambda h: bool(released_early(h, REAP.LEASE_MS))
                                    or claims_of(h, poison) > REAP.MAX_ATTEMPTS)
    if not ran_clean(e, loaded, f):
        return False
    said, history, report = e.said, e.history, e.report
    early = released_early(history, REAP.LEASE_MS)
    if early:
        sweep, claim = early[0]
        f.expect(False, f"{said}: your recover.lua moved {len(early)} lease(s) before they could have lapsed (e.g. "
                 f"{claim.job}, claimed by {claim.worker} with a {REAP.LEASE_MS} ms lease, was recovered "
                 f"{sweep.latest - claim.sent:.0f} ms after the claim was sent, by the server's clock).")
        return False
    finished = drained and not report.unfinished
    tries = claims_of(history, poison)
    # the poison's bound is judged once it looped past its cap, or once the run is over: a run cut short by its
    # deadline before the last lapse was swept says so below, and blames no bound
    if (tries > REAP.MAX_ATTEMPTS or finished) and not poison_bound(said, history, report.dead, poison,
                                                                    REAP.MAX_ATTEMPTS, f):
        return False
    held = held_by_the_killed(history)
    missed = sorted(held - set(report.recovered))
    if not finished or missed:
        f.expect(False, f"{said}: {len(report.unfinished)} of {REAP.JOBS} jobs were not done within "
                 f"{REAP.DEADLINE_S:.0f} s (the poison job claimed {tries} of {REAP.MAX_ATTEMPTS} times); of the "
                 f"{len(held)} job(s) killed workers held, your recover.lua brought back and saw done "
                 f"{len(held) - len(missed)}.")
        return False
    return True
