"""The queue checker: a run's history plus the node's final state → a verdict, with its counterexamples.

It reads what every process of a run recorded (``echomq_teach.lab.history``) and
what the node holds at the end (``FinalState``: the four sets, the rows, and
the completions stream a recording consumer fills), and says, job by job:

* **lost** — an enqueue the node acknowledged, never settled, and in no set;
* **settled twice** — more settles than lives (a reprocess starts a new life);
* **unexpected** — a settle or a claim of a job nobody ever enqueued;
* **stranded** — a row that is in no set and waits for nothing (no flow counter);
* **double hand-outs** — a job claimed again with nothing between the two
  claims that could have put it back (a reap, a stall sweep, a promote, a
  reprocess): two workers holding one lease;
* **fence violations** — a settle (or a lease extension, ``extend``) accepted for
  a claim that a later claim of the same job had already replaced: the token
  fence failed;
* **unrecorded** — (``recorded=True``) an ending the completions stream does not
  hold: a settle the node acknowledged, a burial a stall sweep answered, or a
  job the final dead set holds (a parent failed by its child lands there too)
  with no death entry (``jobs.DEATHS``) on the stream.

and counts what is expected under faults and is not an error: handler runs
per job (at least once: a job may run more than once, and every run past the
first is counted), stale settles refused, jobs recovered (put back by a reap
or a sweep and later settled), and calls whose answer never came.

Each of the seven is its own small function (``INVARIANTS``), reading the
run's facts indexed once (``Facts``); ``check`` composes them into one
``Report``, with any others of the same signature (``Invariant``: the case
files add two). The verdict is ``valid`` when the first seven lists are
empty. Every check is sound under unknown outcomes: a call whose answer was
lost is assumed to have run or not, whichever explains the history; it never
produces a finding on its own. What it may hide is said in ``Report.notes``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from .. import completions, snapshots
from ..connector import Connector
from ..jobs import COMPLETED, DEATHS, REMOVED, STALLED
from ..keyspace import SETS
from .history import History, Op

#: how far two processes' stamps of the node's clock may disagree (one machine: well under 1 ms when quiet, a few
#: ms under heavy load: a promote was once stamped 3.4 ms after the claim it made possible)
CLOCK_SLACK_MS = 5.0
#: the findings that make a run invalid, in the order a report lists them
INVALID = ("lost", "settled_twice", "unexpected", "stranded", "double_handouts", "fence_violations", "unrecorded",
           "released_early")  # the last is judged by lab.models.findings (a flow case file)


@dataclass
class Ending:
    """One ending of a job the checker knows of, and how it knows it.

    ``source`` is ``"stream"`` (an entry of the completions stream), or where
    an ending the stream does not hold is known from: ``"settle"`` (a settle
    the node acknowledged), ``"sweep"`` (a burial a stall sweep answered) or
    ``"dead set"`` (the job is in the final dead set). ``ops`` are the calls
    that show it.
    """

    job: str
    outcome: str  # one of jobs.OUTCOMES: "completed", "dead", "stalled", "child_failed", "removed"
    token: int | None
    at: float | None  # the node's ms: a stream id's first half is the settling script's clock
    source: str
    ops: list[Op] = field(default_factory=list, repr=False)

    @classmethod
    def of(cls, entry: completions.Settle) -> Ending:
        """A completions-stream entry as an ending (its ``attempts`` is the settling claim's token)."""
        return cls(entry.job_id, entry.outcome, entry.attempts, float(entry.stream_id.ms), "stream")


@dataclass
class FinalState:
    """What the node holds for one queue when the run is over."""

    sets: dict[str, set[str]]
    rows: dict[str, dict[str, str]]
    stream: list[completions.Settle]
    flow_counters: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, conn: Connector, queue: str) -> FinalState:
        """The four sets, every row and the whole completions stream (read in pages, untraced)."""
        snap = snapshots.snapshot(conn, queue)
        return cls({s: set(snap.sets[s]) for s in SETS}, snap.rows, completions.read_all(conn, queue),
                   {k.split(":")[0] for k in snap.counters})

    def where(self, job: str) -> list[str]:
        return [s for s in SETS if job in self.sets[s]]


@dataclass
class Finding:
    """One counterexample: a job, what is wrong with it, and the ops that show it."""

    kind: str
    job: str
    detail: str
    ops: list[Op] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"{self.kind}: {self.job} — {self.detail}"]
        t0 = min((o.sent for o in self.ops), default=0.0)
        # a long story keeps its start and its end: the op that proves the finding is often the last
        shown = self.ops if len(self.ops) <= 16 else [*self.ops[:6], None, *self.ops[-9:]]
        lines += [f"    {o.describe(t0)}" if o else f"    … {len(self.ops) - 15} ops between" for o in shown]
        return "\n".join(lines)


@dataclass
class Report:
    """The checker's answer. ``valid`` is the verdict; ``findings`` are its counterexamples."""

    enqueued: int = 0
    enqueue_unknown: int = 0
    settled: int = 0
    completed: int = 0
    dead: int = 0  # ended in the dead set: dead, stalled or child_failed (jobs.DEATHS)
    removed: int = 0
    unfinished: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    stale_refused: int = 0
    handler_runs: Counter[str] = field(default_factory=Counter)
    indeterminate: Counter[str] = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def of(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def jobs_of(self, kind: str) -> list[str]:
        return sorted({f.job for f in self.of(kind)})

    @property
    def lost(self) -> list[str]:
        return self.jobs_of("lost")

    @property
    def settled_twice(self) -> list[str]:
        return self.jobs_of("settled_twice")

    @property
    def unexpected(self) -> list[str]:
        return self.jobs_of("unexpected")

    @property
    def fence_violations(self) -> list[Finding]:
        return self.of("fence_violations")

    @property
    def double_handouts(self) -> list[Finding]:
        return self.of("double_handouts")

    @property
    def valid(self) -> bool:
        return not any(f.kind in INVALID for f in self.findings)

    @property
    def verdict(self) -> str:
        return "valid" if self.valid else "invalid"

    def runs_histogram(self) -> dict[int, int]:
        """How many jobs ran their handler once, twice, …: {runs: jobs}."""
        return dict(sorted(Counter(self.handler_runs.values()).items()))

    def counts(self) -> dict[str, int]:
        """Every finding kind with its number of jobs (zeros included), for a test or a table."""
        return {k: len(self.jobs_of(k)) for k in INVALID}

    def summary(self, examples: int = 3) -> str:
        """The report as text: the counts, then up to ``examples`` counterexamples of each kind."""
        runs = self.runs_histogram()
        more = sum(n for r, n in runs.items() if r > 1)
        lines = [
            f"verdict: {self.verdict}",
            f"enqueued {self.enqueued}" + (f" (+{self.enqueue_unknown} whose answer was lost)"
                                           if self.enqueue_unknown else "")
            + f" · settled {self.settled} (completed {self.completed}, dead {self.dead}"
            + (f", removed {self.removed})" if self.removed else ")")
            + f" · unfinished {len(self.unfinished)}",
            "  ".join(f"{k.replace('_', ' ')} {n}" for k, n in self.counts().items()),
            f"recovered {len(self.recovered)} · stale settles refused {self.stale_refused}"
            + f" · jobs whose handler ran more than once {more} (at least once: expected under faults)",
        ]
        if self.indeterminate:
            lost = sorted(self.indeterminate.items())
            lines.append("calls with no answer: " + ", ".join(f"{k} {v}" for k, v in lost))
        for kind in INVALID:
            for f in self.of(kind)[:examples]:
                lines.append(str(f))
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


@dataclass
class Facts:
    """A run's history and final state, indexed once: what every invariant reads."""

    history: History
    final: FinalState
    recorded: bool
    calls: list[Op]
    #: every op that names a job, or released or buried it
    by_job: dict[str, list[Op]]
    #: enqueues the node acknowledged, and every enqueue tried
    acked: set[str]
    tried: set[str]
    #: each job's endings: the stream's, then those known otherwise (``inferred``, in the order found)
    endings: dict[str, list[Ending]]
    inferred: list[Ending]
    #: lives past the first (each reprocess, and each enqueue of an id whose row went)
    lives: Counter[str]
    claims: dict[str, list[Op]]
    releases: dict[str, list[Op]]
    puts: dict[str, list[Op]]
    retries: dict[str, list[Op]]
    #: recovery calls with no answer: any of them may have put back any job
    unknown_releases: list[Op]

    @classmethod
    def of(cls, history: History, final: FinalState, recorded: bool = True) -> Facts:
        calls = history.calls()
        by_job: dict[str, list[Op]] = defaultdict(list)
        for o in history.ops:
            if o.job:
                by_job[o.job].append(o)
            for j in o.released() + o.buried():
                by_job[j].append(o)
        endings, inferred = _endings(calls, final, by_job)
        # each reprocess starts a new life, and so does an enqueue of an id whose row went (after the first)
        enqueues = Counter(o.job for o in calls if o.op == "enqueue" and o.job and (o.ok or o.indeterminate))
        lives = Counter(o.job for o in calls if o.op == "reprocess" and o.ok and o.job)
        lives.update({j: n - 1 for j, n in enqueues.items() if n > 1})
        return cls(
            history, final, recorded, calls, by_job,
            acked={o.job for o in calls if o.op == "enqueue" and o.ok and o.job},
            tried={o.job for o in calls if o.op == "enqueue" and o.job},
            endings=endings, inferred=inferred, lives=lives,
            claims=_by_job(o for o in calls if o.op == "claim" and o.ok),
            releases=_by_job((o, j) for o in calls for j in o.released()),
            puts=_by_job(o for o in calls if o.op in ("enqueue", "reprocess") and (o.ok or o.indeterminate)),
            retries=_by_job(o for o in calls if o.op == "retry" and (o.ok or o.indeterminate)),
            unknown_releases=[o for o in calls if o.op in ("reap", "stalled", "promote") and o.indeterminate],
        )

    @cached_property
    def settled(self) -> set[str]:
        """The jobs with at least one ending."""
        return {j for j, es in self.endings.items() if es}

    def unexpected(self, job: str) -> bool:
        """Never enqueued, and never claimed either."""
        return job not in self.tried and not any(o.op == "claim" and o.ok for o in self.by_job[job])


def _by_job(items: Iterable[Op | tuple[Op, str]]) -> dict[str, list[Op]]:
    """Ops by the job they name (an op alone) or by the job given with it (an (op, job) pair)."""
    out: dict[str, list[Op]] = defaultdict(list)
    for item in items:
        o, job = item if isinstance(item, tuple) else (item, item.job)
        if job:
            out[job].append(o)
    return out


def _endings(calls: list[Op], final: FinalState,
             by_job: dict[str, list[Op]]) -> tuple[dict[str, list[Ending]], list[Ending]]:
    """Every job's endings: the stream's, then those the stream does not hold but the run shows."""
    endings: dict[str, list[Ending]] = defaultdict(list)
    inferred: list[Ending] = []

    def add(e: Ending) -> None:
        endings[e.job].append(e)
        inferred.append(e)

    for entry in final.stream:
        endings[entry.job_id].append(Ending.of(entry))
    # an acknowledged settle the stream does not hold: known from its answer
    for o in calls:
        if o.op in ("complete", "retry") and o.ok and o.reply in ("ok", "dead") and o.job:
            outcome = COMPLETED if o.reply == "ok" else "dead"
            if not any(e.token == o.token and e.outcome == outcome for e in endings[o.job]):
                add(Ending(o.job, outcome, o.token, o.answered, "settle", [o]))
    # a burial the sweep answered: a recording sweep wrote one "stalled" entry per burial
    for job, n in Counter(j for o in calls for j in o.buried()).items():
        for _ in range(n - sum(1 for e in endings[job] if e.outcome == STALLED)):
            add(Ending(job, STALLED, None, None, "sweep", [o for o in calls if job in o.buried()]))
    # the dead set: every job in it ended there (a parent failed by its child too), and a recording queue
    # wrote that death; an unrecorded run's sweeps and parent deaths are known only from here
    for job in final.sets["dead"]:
        if not any(e.outcome in DEATHS for e in endings[job]):
            add(Ending(job, "dead", None, None, "dead set", by_job[job]))
    return endings, inferred


# -- the invariants: each reads the facts and answers its findings ------------------------------------
def lost(f: Facts) -> list[Finding]:
    """An enqueue the node acknowledged, never settled, in no set and without a row.

    In a run that records no settle (``recorded=False``), a completion whose answer never came may have run:
    the row it deleted is then no loss (a recording run's completion writes its entry in the same step)."""
    return [Finding("lost", job, "enqueued (the node said so), never settled, in no set and without a row",
                    f.by_job[job])
            for job in sorted(f.tried) if _resting(f, job) == "gone" and job in f.acked
            and (f.recorded or not any(o.op == "complete" and o.indeterminate for o in f.by_job[job]))]


def settled_twice(f: Facts) -> list[Finding]:
    """More endings than lives: each life ends once."""
    out = []
    for job, es in f.endings.items():
        allowed = 1 + f.lives[job]
        if not f.unexpected(job) and len(es) > allowed:
            out.append(Finding("settled_twice", job, f"settled {len(es)} times in {allowed} "
                               f"life{'s' if allowed > 1 else ''}: {_outcomes(es)}", f.by_job[job]))
    return out


def unexpected(f: Facts) -> list[Finding]:
    """A settle or a claim of a job nobody ever enqueued."""
    out = [Finding("unexpected", job, f"settled ({_outcomes(es)}) but never enqueued", f.by_job[job])
           for job, es in f.endings.items() if f.unexpected(job)]
    for job in set(f.claims) - f.tried:
        if job not in f.endings:
            out.append(Finding("unexpected", job, "claimed but never enqueued", f.by_job[job]))
    return out


def stranded(f: Facts) -> list[Finding]:
    """A row in no set that waits for nothing (no flow counter): no claim can ever reach it."""
    out = []
    for job in sorted(f.tried):
        row = f.final.rows.get(job)
        if _resting(f, job) == "row" and row is not None and (
            row.get("state") != "awaiting_children" or job not in f.final.flow_counters
        ):
            out.append(Finding("stranded", job, f"its row (state {row.get('state')!r}) is in no set: "
                               "no claim can ever reach it", f.by_job[job]))
    return out


def double_handouts(f: Facts) -> list[Finding]:
    """A job claimed again with nothing between the two claims that could have put it back."""
    return [h for job, cs in f.claims.items()
            for h in _handouts(job, cs, f.releases[job] + f.puts[job], f.unknown_releases, f.retries[job],
                               f.puts[job], f.by_job[job])]


def fence_violations(f: Facts) -> list[Finding]:
    """A settle the node accepted must come from the newest claim of its job when it was sent."""
    return _fence(f.calls, f.claims, f.endings, f.by_job)


def unrecorded(f: Facts) -> list[Finding]:
    """(A recorded run) an ending the completions stream does not hold."""
    if not f.recorded:
        return []
    why = {
        "settle": "the node answered {reply!r} to this settle, but the completions stream holds no entry for it",
        "sweep": "a stall sweep answered that it buried this job, but the completions stream holds no stalled "
                 "entry for it",
        "dead set": "it is in dead, but the completions stream holds no death (dead, stalled, child_failed) for it",
    }
    return [Finding("unrecorded", e.job, why[e.source].format(reply=e.ops[0].reply if e.ops else None), e.ops)
            for e in f.inferred]


#: what an invariant is: the run's facts in, its findings out (one signature: invariants compose)
Invariant = Callable[[Facts], list[Finding]]
#: the seven invariants, in the order a report lists their findings (``INVALID``)
INVARIANTS: dict[str, Invariant] = {
    "lost": lost,
    "settled_twice": settled_twice,
    "unexpected": unexpected,
    "stranded": stranded,
    "double_handouts": double_handouts,
    "fence_violations": fence_violations,
    "unrecorded": unrecorded,
}
# the checker's own invariants come first; the rest are judged beside it (lab.models.findings)
assert tuple(INVARIANTS) == INVALID[: len(INVARIANTS)]


def _resting(f: Facts, job: str) -> str:
    """Where an enqueued job rests at the end: ``unfinished`` (pending, active or scheduled), ``ended``
    (dead, or settled and gone), ``row`` (a row in no set), or ``gone`` (no set, no row, no ending)."""
    where = f.final.where(job)
    if set(where) - {"dead"}:
        return "unfinished"
    if where or job in f.settled and job not in f.final.rows:
        return "ended"
    return "row" if job in f.final.rows else "gone"


def tally(f: Facts) -> Report:
    """A report with the counts filled in: what was enqueued and settled, and what is expected under faults."""
    r = Report()
    calls, settled = f.calls, f.settled
    r.enqueued = len(f.acked)
    r.enqueue_unknown = len({o.job for o in calls if o.op == "enqueue" and o.indeterminate and o.job} - f.acked)
    r.settled = len(settled & f.tried) if f.tried else len(settled)
    r.completed = sum(1 for j in settled if any(e.outcome == COMPLETED for e in f.endings[j]))
    r.dead = sum(1 for j in settled if all(e.outcome in DEATHS for e in f.endings[j]))
    r.removed = sum(1 for j in settled if any(e.outcome == REMOVED for e in f.endings[j]))
    r.unfinished = [j for j in sorted(f.tried) if _resting(f, j) == "unfinished"]
    r.stale_refused = sum(1 for o in calls if o.op in ("complete", "retry") and o.ok and o.reply == "stale")
    r.handler_runs = Counter(o.job for o in f.history.notes("run") if o.job)
    r.recovered = sorted(j for j in settled if any(o.op in ("reap", "stalled") for o in f.releases[j]))
    r.indeterminate = Counter(o.op for o in calls if o.indeterminate)
    if f.unknown_releases:
        r.notes.append(f"{len(f.unknown_releases)} recovery call(s) lost their answer; a second claim of a job "
                       "near one of them is not counted as a double hand-out (unless that call could not have "
                       "put the job back: its lease had not lapsed, or it was never retried)")
    return r


def check(history: History, final: FinalState, *, recorded: bool = True,
          invariants: Mapping[str, Invariant] = INVARIANTS) -> Report:
    """Judge a run. ``recorded=True``: its consumers recorded every settle in the completions stream.

    ``invariants`` are composed as Jepsen composes checkers: each reads the same
    facts, and the report holds every finding, in their order. The checker's own
    by default; the case files add theirs (``lab.models.findings.INVARIANTS``).
    """
    facts = Facts.of(history, final, recorded)
    report = tally(facts)
    for invariant in invariants.values():
        report.findings += invariant(facts)
    return report


def _could_release(p: Op, claim: Op, retries: list[Op]) -> bool:
    """Could ``p``, a recovery call with no answer, have put back the job that ``claim`` leased?

    A reap or a stall sweep puts back only a lapsed lease, and the lease
    ``claim`` granted lapses ``lease_ms`` after the claim ran (no earlier than
    its send); a promote puts back only a scheduled job, and only a retry
    schedules a claimed job. A claim recorded without its ``lease_ms`` is
    judged as before: any such call may have put it back.
    """
    if p.op in ("reap", "stalled"):
        lease = claim.extra.get("lease_ms")
        return lease is None or p.latest + CLOCK_SLACK_MS >= claim.sent + float(lease)
    if p.op == "promote":
        return any(t.sent < p.latest and t.latest > claim.sent for t in retries)
    return True


def _handouts(job: str, cs: list[Op], puts: list[Op], unknown: list[Op], retries: list[Op],
              lives: list[Op], ops: list[Op]) -> list[Finding]:
    """Between two claims of a job, something must have put it back in pending; else two workers held it.

    The node orders a job's claims for us: each claim's token is one more than
    the last (the row's attempts), so within one life of the row, token order
    is claim order — whatever the workers' clocks or a freeze between a claim's
    answer and its record say. A life begins at an enqueue (an id used again
    after its row was deleted starts at token 1). Each put (a release, an
    enqueue, a reprocess) took effect between its send and the latest moment
    it can have run; one that can lie between two claims explains the second,
    and so does a recovery call with no answer that could have put this job
    back (``_could_release``). Two claims with one token in one life had
    nothing between them: the node forgot the first (a failover that lost it).
    """
    starts = sorted(o.sent for o in lives if o.op == "enqueue")

    def life(c: Op) -> int:
        return sum(1 for t in starts if t < (c.answered or c.sent))

    ordered = sorted(cs, key=lambda c: (life(c), c.token or 0, c.sent))
    out = []
    for x, y in zip(ordered, ordered[1:]):
        if life(x) != life(y):
            continue  # a new row: its enqueue put the job in pending
        # two processes' stamps of the node's clock disagree by a few ms on a loaded machine: a put stamped
        # just after the claim it made possible still lies between the two claims
        lo, hi = x.sent - CLOCK_SLACK_MS, (y.answered or y.sent) + CLOCK_SLACK_MS
        if x.token != y.token and any(p.sent < hi and p.latest > lo for p in puts):
            continue
        if x.token != y.token and any(
            p.sent < hi and p.latest > lo and _could_release(p, x, retries) for p in unknown
        ):
            continue
        out.append(Finding(
            "double_handouts", job,
            f"claimed by {x.worker} (token {x.token}) and again by {y.worker} (token {y.token}) with nothing "
            "between that put it back in pending: two workers held it at once",
            sorted({*ops, x, y}, key=lambda o: o.sent)))
    return out


def _fence(calls: list[Op], claims: dict[str, list[Op]], endings: dict[str, list[Ending]],
           by_job: dict[str, list[Op]]) -> list[Finding]:
    """A settle the node accepted must come from the newest claim of its job when it was sent."""
    streamed = {(e.job, e.token, e.outcome) for es in endings.values() for e in es if e.source == "stream"}
    out = []
    for o in calls:
        if o.op not in ("complete", "retry", "extend") or not o.job or o.token is None:
            continue
        accepted = o.ok and o.reply in ("ok", "scheduled", "dead")
        if not accepted and o.indeterminate and o.op != "extend":
            # the answer was lost: the stream says whether it took effect (completions and deaths only)
            accepted = (o.job, o.token, "completed" if o.op == "complete" else "dead") in streamed
        if not accepted:
            continue
        mine = [c for c in claims.get(o.job, []) if c.worker == o.worker and c.token == o.token
                and (c.answered or 0) <= o.sent]
        if not mine:
            out.append(Finding("fence_violations", o.job, f"{o.worker}'s {_what(o)} with token {o.token} "
                               "was accepted, but that worker never claimed the job with that token", [o]))
            continue
        x = mine[-1]
        newer = [c for c in claims.get(o.job, []) if c is not x and c.sent > (x.answered or x.sent)
                 and (c.answered or 0) < o.sent]
        if newer:
            y = newer[0]
            out.append(Finding(
                "fence_violations", o.job,
                f"{o.worker}'s {_what(o)} with token {o.token} was accepted after {y.worker} had claimed the job "
                f"again (token {y.token}): the fence should have answered stale",
                sorted({*by_job[o.job], o, x, y}, key=lambda op: op.sent)))
    return out


def _outcomes(es: list[Ending]) -> str:
    return ", ".join(f"{e.outcome}{f' (token {e.token})' if e.token is not None else ''}" for e in es)


def _what(o: Op) -> str:
    return "lease extension" if o.op == "extend" else "settle"
