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

The verdict is ``valid`` when the first seven lists are empty. Every check is
sound under unknown outcomes: a call whose answer was lost is assumed to have
run or not, whichever explains the history; it never produces a finding on
its own. What it may hide is said in ``Report.notes``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..connector import Connector
from ..jobs import COMPLETED, DEATHS, REMOVED, STALLED
from ..keyspace import SETS, queue_key
from .history import History, Op

#: stream entries read per XRANGE call
_STREAM_PAGE = 1000
#: how far two processes' stamps of the node's clock may disagree (one machine: well under 1 ms)
CLOCK_SLACK_MS = 5.0
#: the findings that make a run invalid, in the order a report lists them
INVALID = ("lost", "settled_twice", "unexpected", "stranded", "double_handouts", "fence_violations", "unrecorded")


@dataclass
class Settle:
    """One settle the node wrote: from the completions stream (``source="stream"``) or known otherwise."""

    job: str
    outcome: str  # one of jobs.OUTCOMES: "completed", "dead", "stalled", "child_failed", "removed"
    token: int | None
    at: float | None  # the node's ms: a stream id's first half is the settling script's clock
    source: str  # "stream", "history" (an acknowledged settle), "dead set" (a sweep's burial)


@dataclass
class FinalState:
    """What the node holds for one queue when the run is over."""

    sets: dict[str, set[str]]
    rows: dict[str, dict[str, str]]
    stream: list[Settle]
    flow_counters: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, conn: Connector, queue: str) -> FinalState:
        """The four sets, every row and the whole completions stream (read in pages, untraced)."""
        from .. import snapshots

        snap = snapshots.snapshot(conn, queue)
        stream: list[Settle] = []
        key = queue_key(queue, "stream:completions")
        start = "-"
        while True:
            page = conn.client.xrange(key, min=start, max="+", count=_STREAM_PAGE)
            for sid, f in page:
                stream.append(Settle(f.get("id", ""), f.get("outcome", ""), _int(f.get("attempts")),
                                     float(sid.split("-")[0]), "stream"))
            if len(page) < _STREAM_PAGE:
                break
            start = "(" + page[-1][0]
        return cls({s: set(snap.sets[s]) for s in SETS}, snap.rows, stream,
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
        lines += [f"    {o.describe(t0)}" for o in self.ops[:8]]
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


def check(history: History, final: FinalState, *, recorded: bool = True) -> Report:
    """Judge a run. ``recorded=True``: its consumers recorded every settle in the completions stream."""
    r = Report()
    calls = history.calls()
    by_job: dict[str, list[Op]] = defaultdict(list)
    for o in history.ops:
        if o.job:
            by_job[o.job].append(o)
        for j in o.released() + o.buried():
            by_job[j].append(o)

    # -- what was enqueued ------------------------------------------------------------
    acked = {o.job for o in calls if o.op == "enqueue" and o.ok and o.job}
    tried = {o.job for o in calls if o.op == "enqueue" and o.job}
    r.enqueued = len(acked)
    r.enqueue_unknown = len({o.job for o in calls if o.op == "enqueue" and o.indeterminate and o.job} - acked)

    # -- what was settled ------------------------------------------------------------------
    settles: dict[str, list[Settle]] = defaultdict(list)
    for s in final.stream:
        settles[s.job].append(s)
    # an acknowledged settle the stream does not hold: known from its answer
    for o in calls:
        if o.op in ("complete", "retry") and o.ok and o.reply in ("ok", "dead") and o.job:
            outcome = "completed" if o.reply == "ok" else "dead"
            if not any(s.token == o.token and s.outcome == outcome for s in settles[o.job]):
                if recorded:
                    r.findings.append(Finding("unrecorded", o.job, f"the node answered {o.reply!r} to this settle, "
                                              "but the completions stream holds no entry for it", [o]))
                settles[o.job].append(Settle(o.job, outcome, o.token, o.answered, "history"))
    # a burial the sweep answered: a recording sweep wrote one "stalled" entry per burial
    for job, n in Counter(j for o in calls for j in o.buried()).items():
        for _ in range(n - sum(1 for s in settles[job] if s.outcome == STALLED)):
            if recorded:
                r.findings.append(Finding("unrecorded", job, "a stall sweep answered that it buried this job, but "
                                          "the completions stream holds no stalled entry for it",
                                          [o for o in calls if job in o.buried()]))
            settles[job].append(Settle(job, STALLED, None, None, "history"))
    # the dead set: every job in it ended there (a parent failed by its child too), and a recording queue
    # wrote that death; an unrecorded run's sweeps and parent deaths are known only from here
    for job in final.sets["dead"]:
        if not any(s.outcome in DEATHS for s in settles[job]):
            if recorded:
                r.findings.append(Finding("unrecorded", job, "it is in dead, but the completions stream holds no "
                                          "death (dead, stalled, child_failed) for it", by_job[job]))
            settles[job].append(Settle(job, "dead", None, None, "dead set"))
    # each reprocess starts a new life, and so does an enqueue of an id whose row went (after the first)
    enqueues = Counter(o.job for o in calls if o.op == "enqueue" and o.job and (o.ok or o.indeterminate))
    lives = Counter(o.job for o in calls if o.op == "reprocess" and o.ok and o.job)
    lives.update({j: n - 1 for j, n in enqueues.items() if n > 1})

    for job, ss in settles.items():
        if job not in tried and not _claimed(by_job[job]):
            r.findings.append(Finding("unexpected", job, f"settled ({_outcomes(ss)}) but never enqueued", by_job[job]))
            continue
        allowed = 1 + lives[job]
        if len(ss) > allowed:
            r.findings.append(Finding("settled_twice", job, f"settled {len(ss)} times in {allowed} "
                                      f"life{'s' if allowed > 1 else ''}: {_outcomes(ss)}", by_job[job]))
    for job in {o.job for o in calls if o.op == "claim" and o.ok and o.job} - tried:
        if job not in settles:
            r.findings.append(Finding("unexpected", job, "claimed but never enqueued", by_job[job]))

    final_settled = {j for j, ss in settles.items() if ss}
    r.settled = len(final_settled & tried) if tried else len(final_settled)
    r.completed = sum(1 for j in final_settled if any(s.outcome == COMPLETED for s in settles[j]))
    r.dead = sum(1 for j in final_settled if all(s.outcome in DEATHS for s in settles[j]))
    r.removed = sum(1 for j in final_settled if any(s.outcome == REMOVED for s in settles[j]))

    # -- lost, stranded, unfinished -------------------------------------------------------------
    for job in sorted(tried):
        where = final.where(job)
        if set(where) - {"dead"}:
            r.unfinished.append(job)  # still pending, active or scheduled: the run stopped before it
        elif where or job in final_settled and job not in final.rows:
            continue  # dead (a settle), or settled and gone
        elif job in final.rows:
            row = final.rows[job]
            if row.get("state") != "awaiting_children" or job not in final.flow_counters:
                r.findings.append(Finding("stranded", job, f"its row (state {row.get('state')!r}) is in no set: "
                                          "no claim can ever reach it", by_job[job]))
        elif job in acked:
            r.findings.append(Finding("lost", job, "enqueued (the node said so), never settled, in no set and "
                                      "without a row", by_job[job]))

    # -- the fence, and hand-outs ----------------------------------------------------------------
    claims: dict[str, list[Op]] = defaultdict(list)
    for o in calls:
        if o.op == "claim" and o.ok and o.job:
            claims[o.job].append(o)
    releases: dict[str, list[Op]] = defaultdict(list)
    for o in calls:
        for j in o.released():
            releases[j].append(o)
    # a recovery call with no answer may have put back any job; an enqueue or a reprocess, its own
    unknown_releases = [o for o in calls if o.op in ("reap", "stalled", "promote") and o.indeterminate]
    puts: dict[str, list[Op]] = defaultdict(list)
    for o in calls:
        if o.op in ("enqueue", "reprocess") and o.job and (o.ok or o.indeterminate):
            puts[o.job].append(o)
    retries: dict[str, list[Op]] = defaultdict(list)
    for o in calls:
        if o.op == "retry" and o.job and (o.ok or o.indeterminate):
            retries[o.job].append(o)
    for job, cs in claims.items():
        _handouts(r, job, cs, releases[job] + puts[job], unknown_releases, retries[job], puts[job], by_job[job])
    _fence(r, calls, claims, settles, by_job)
    if unknown_releases:
        r.notes.append(f"{len(unknown_releases)} recovery call(s) lost their answer; a second claim of a job "
                       "near one of them is not counted as a double hand-out (unless that call could not have "
                       "put the job back: its lease had not lapsed, or it was never retried)")

    # -- what is expected under faults, counted ------------------------------------------------------
    r.stale_refused = sum(1 for o in calls if o.op in ("complete", "retry") and o.ok and o.reply == "stale")
    r.handler_runs = Counter(o.job for o in history.notes("run") if o.job)
    r.recovered = sorted(j for j in final_settled if any(o.op in ("reap", "stalled") for o in releases[j]))
    r.indeterminate = Counter(o.op for o in calls if o.indeterminate)
    return r


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


def _handouts(r: Report, job: str, cs: list[Op], puts: list[Op], unknown: list[Op], retries: list[Op],
              lives: list[Op], ops: list[Op]) -> None:
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
    for x, y in zip(ordered, ordered[1:]):
        if life(x) != life(y):
            continue  # a new row: its enqueue put the job in pending
        lo, hi = x.sent, y.answered or y.sent
        if x.token != y.token and any(p.sent < hi and p.latest > lo for p in puts):
            continue
        if x.token != y.token and any(
            p.sent < hi and p.latest > lo and _could_release(p, x, retries) for p in unknown
        ):
            continue
        r.findings.append(Finding(
            "double_handouts", job,
            f"claimed by {x.worker} (token {x.token}) and again by {y.worker} (token {y.token}) with nothing "
            "between that put it back in pending: two workers held it at once",
            sorted({*ops, x, y}, key=lambda o: o.sent)))


def _fence(r: Report, calls: list[Op], claims: dict[str, list[Op]], settles: dict[str, list[Settle]],
           by_job: dict[str, list[Op]]) -> None:
    """A settle the node accepted must come from the newest claim of its job when it was sent."""
    streamed = {(s.job, s.token, s.outcome) for ss in settles.values() for s in ss if s.source == "stream"}
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
            r.findings.append(Finding("fence_violations", o.job, f"{o.worker}'s {_what(o)} with token {o.token} "
                                      "was accepted, but that worker never claimed the job with that token", [o]))
            continue
        x = mine[-1]
        newer = [c for c in claims.get(o.job, []) if c is not x and c.sent > (x.answered or x.sent)
                 and (c.answered or 0) < o.sent]
        if newer:
            y = newer[0]
            r.findings.append(Finding(
                "fence_violations", o.job,
                f"{o.worker}'s {_what(o)} with token {o.token} was accepted after {y.worker} had claimed the job "
                f"again (token {y.token}): the fence should have answered stale",
                sorted({*by_job[o.job], o, x, y}, key=lambda op: op.sent)))


def _what(o: Op) -> str:
    return "lease extension" if o.op == "extend" else "settle"


def _claimed(ops: list[Op]) -> bool:
    return any(o.op == "claim" and o.ok for o in ops)


def _outcomes(ss: list[Settle]) -> str:
    return ", ".join(f"{s.outcome}{f' (token {s.token})' if s.token is not None else ''}" for s in ss)


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None
