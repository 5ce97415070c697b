"""The lifecycle paths as data: each Step is one real call and a caption derived from real snapshots.

``Lifecycle`` is the stepper's logic with no display: step, back (a reset and a
replay on a fresh queue) and reset. The widget in ``stepper.py`` only draws it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from echomq_teach import jobs, snapshots
from echomq_teach.connector import Connector
from echomq_teach.snapshots import Snapshot

from .model import Call, drop_queue, fresh_queue, movement, ms, reader_for, row_words, run_call, wait_due, wait_lapsed

PATHS = ("happy", "failure", "recovery")


@dataclass
class Settings:
    """The numbers a path runs with. Short leases and delays keep the waits brief in class."""

    lease_ms: int = 30_000
    short_lease_ms: int = 300  # the recovery path's lease, meant to lapse
    retry_delay_ms: int = 300  # the failure path's retry delay; promote waits until it is due
    max_attempts: int = 2  # the failure path dies on its second attempt, as on the page
    payload: str = "hello"
    reason: str = "boom"
    result: str = "done"


@dataclass
class PathRun:
    """One run of a path on one fresh queue: what the steps so far have learned."""

    conn: Connector
    reader: Connector
    queue: str
    settings: Settings
    job_id: str | None = None
    tokens: list[int] = field(default_factory=list)

    @property
    def token(self) -> int:
        return self.tokens[-1]


@dataclass(frozen=True)
class Step:
    """One step of a path.

    ``act`` makes the one real call on the learner's connector; ``prepare`` may
    wait on the server clock first (it sends nothing on that connector);
    ``explain`` words the result as (caption, what the script did).
    """

    name: str
    handle: str  # the course's Elixir handle, e.g. "claim/3"; "" when the step sends nothing
    act: Callable[[PathRun], Any]
    explain: Callable[[PathRun, Call], tuple[str, str]]
    prepare: Callable[[PathRun], None] | None = None


@dataclass
class Outcome:
    """What one step did, ready to draw: the headline, caption and detail lines, and the call."""

    index: int
    step: Step
    call: Call
    headline: str
    caption: str
    detail: str

    @property
    def text(self) -> str:
        return "\n".join([self.headline, self.caption, self.detail])


# -- the acts: one real call each -------------------------------------------------------------------
def _enqueue(r: PathRun) -> str:
    r.job_id = jobs.enqueue(r.conn, r.queue, r.settings.payload)
    return r.job_id


def _claim_with(lease: Callable[[Settings], int]) -> Callable[[PathRun], Any]:
    def act(r: PathRun) -> jobs.Claimed | None:
        got = jobs.claim(r.conn, r.queue, lease(r.settings))
        if got is not None:
            r.tokens.append(got.attempts)
        return got

    return act


def _complete(r: PathRun) -> str:
    return jobs.complete(r.conn, r.queue, _id(r), r.token, r.settings.result)


def _retry(r: PathRun) -> str:
    s = r.settings
    return jobs.retry(r.conn, r.queue, _id(r), r.token, s.reason, s.retry_delay_ms, s.max_attempts)


def _promote(r: PathRun) -> list[str]:
    return jobs.promote(r.conn, r.queue)


def _nothing(r: PathRun) -> None:
    return None  # the worker crashed: nobody calls anything


def _reap(r: PathRun) -> list[str]:
    return jobs.reap(r.conn, r.queue)


def _late_complete(r: PathRun) -> str:
    # the crashed worker wakes up and completes with the token it was handed first
    return jobs.complete(r.conn, r.queue, _id(r), r.tokens[0], r.settings.result)


def _id(r: PathRun) -> str:
    if r.job_id is None:
        raise RuntimeError("no job yet: the path starts with enqueue")
    return r.job_id


# -- the explanations: read from the real snapshots and trace ----------------------------------------
def _failed(call: Call) -> tuple[str, str] | None:
    if call.error is not None:
        return f"the call was refused: {call.error}", "nothing after the refusal ran."
    return None


def _explain_enqueue(r: PathRun, c: Call) -> tuple[str, str]:
    if f := _failed(c):
        return f
    jid = _id(r)
    score = c.after.sets["pending"].get(jid, 0)
    return (
        f"{movement(c.before, c.after, jid)} · {row_words(c.after, jid)}",
        f"HSET the row (state pending, attempts 0, payload), ZADD pending {score} — "
        f"the id sits in pending at score {score}.",
    )


def _pause_read(c: Call) -> str:
    for e in c.entries:
        if str(e.args[0]).upper() == "EXISTS":
            return f"EXISTS → {e.reply_text}"
    return "no pause read"


def _explain_claim(r: PathRun, c: Call) -> tuple[str, str]:
    if f := _failed(c):
        return f
    if c.reply is None:
        return "claim answered :empty — nothing was claimable", f"claim/3 read the pause flag first ({_pause_read(c)})."
    jid, att = c.reply.id, c.reply.attempts
    lease = c.after.sets["active"].get(jid, 0) - c.after.now_ms
    token_note = f" — the token moved, so token {r.tokens[0]} is fenced out" if att > 1 and len(r.tokens) > 1 else ""
    caption = f"{movement(c.before, c.after, jid)} · {row_words(c.after, jid)} (the token){token_note}"
    ex = c.executor
    if ex.startswith("EMQ."):
        body = (
            f"then {ex}: the pause read again inside the command, the head peeked, popped and checked, "
            f"HINCRBY attempts → {att}, lease_epoch = the server's run_id, "
            "ZADD active at the cached command time + the lease"
        )
    else:
        body = (
            f"then {ex}: ZPOPMIN pending, HINCRBY attempts → {att} (the fencing token), ZADD active at TIME + the lease"
        )
    return caption, (
        f"claim/3 read the pause flag host-side in its own round trip ({_pause_read(c)}), {body} — "
        f"the active score is the lease deadline, {ms(lease)} from server now."
    )


def _explain_complete(r: PathRun, c: Call) -> tuple[str, str]:
    if f := _failed(c):
        return f
    jid = _id(r)
    if c.reply == jobs.STALE:
        return _explain_stale(r, c)
    return (
        f"{movement(c.before, c.after, jid)} · {row_words(c.after, jid)} · metrics:completed count {c.after.completed}",
        f"complete/5 → {c.executor}: the token fence passed (attempts {r.token}, state active), "
        "ZREM active, DEL the row, HINCRBY metrics:completed — a completed row is deleted.",
    )


def _explain_retry(r: PathRun, c: Call) -> tuple[str, str]:
    if f := _failed(c):
        return f
    jid, s = _id(r), r.settings
    row = c.after.rows.get(jid, {})
    caption = f"{movement(c.before, c.after, jid)} · {row_words(c.after, jid, ('last_error',))}"
    if c.reply == jobs.SCHEDULED:
        detail = (
            f'the handler answered {{:error, "{s.reason}"}}: retry/7 → {c.executor} fenced the token, '
            f"attempts {row.get('attempts')} < max_attempts {s.max_attempts}, so ZADD schedule at now + "
            f"{ms(s.retry_delay_ms, sign=False)} — a visibility fence, not a second queue."
        )
    elif c.reply == jobs.DEAD:
        detail = (
            f"the handler failed again: attempts {row.get('attempts')} = max_attempts {s.max_attempts}, "
            f'so {c.executor} buried it: ZADD dead at the time of death, last_error "{s.reason}".'
        )
    else:
        return _explain_stale(r, c)
    return caption, detail


def _explain_promote(r: PathRun, c: Call) -> tuple[str, str]:
    if f := _failed(c):
        return f
    jid = _id(r)
    return (
        f"{movement(c.before, c.after, jid)} · {row_words(c.after, jid)}",
        f"promote/3 → {c.executor} read the server clock: the run-at had passed, so it moved "
        f"{len(c.reply)} due id(s) back to pending at 0. Nothing moves on its own — a client called it.",
    )


def _explain_lapse(r: PathRun, c: Call) -> tuple[str, str]:
    jid = _id(r)
    return (
        f"{movement(c.before, c.after, jid)} · {row_words(c.after, jid)} — nothing moved on its own",
        "nothing was sent: the worker crashed, so nobody completes or retries. The server clock passed "
        "the active score, and the id stays in active until a client calls reap/2.",
    )


def _explain_reap(r: PathRun, c: Call) -> tuple[str, str]:
    if f := _failed(c):
        return f
    jid = _id(r)
    return (
        f"{movement(c.before, c.after, jid)} · {row_words(c.after, jid)} (unchanged)",
        f"reap/2 → {c.executor} read the server clock and returned {len(c.reply)} lapsed lease(s) to "
        "pending at 0; attempts stay as they are, so the next claim moves the token.",
    )


def _explain_stale(r: PathRun, c: Call) -> tuple[str, str]:
    if f := _failed(c):
        return f
    jid = _id(r)
    old = r.tokens[0]
    row = c.after.rows.get(jid, {})
    wrote = "nothing written" if c.wrote_nothing else "something was written (unexpected)"
    return (
        f"complete/5 with the old token {old} answered {c.reply} · {wrote} · {row_words(c.after, jid)}",
        f"the late completion hits the fence: the row's attempts is {row.get('attempts')}, not {old}, "
        f"so {c.executor} answers 0 → {{:error, :stale}} before any write.",
    )


# -- the paths ----------------------------------------------------------------------------------------
ENQUEUE = Step("enqueue", "enqueue/5", _enqueue, _explain_enqueue)
CLAIM = Step("claim", "claim/3", _claim_with(lambda s: s.lease_ms), _explain_claim)
COMPLETE = Step("complete", "complete/5", _complete, _explain_complete)
RETRY = Step("retry", "retry/7", _retry, _explain_retry)
PROMOTE = Step("promote", "promote/3", _promote, _explain_promote, prepare=lambda r: _wait(wait_due, r))
SECOND_CLAIM = Step("second claim", "claim/3", _claim_with(lambda s: s.lease_ms), _explain_claim)
FINAL_RETRY = Step("final retry", "retry/7", _retry, _explain_retry)
SHORT_CLAIM = Step("claim", "claim/3", _claim_with(lambda s: s.short_lease_ms), _explain_claim)
LAPSE = Step("lapse", "", _nothing, _explain_lapse, prepare=lambda r: _wait(wait_lapsed, r))
REAP = Step("reap", "reap/2", _reap, _explain_reap)
RECLAIM = Step("reclaim", "claim/3", _claim_with(lambda s: s.lease_ms), _explain_claim)
LATE_COMPLETE = Step("late complete", "complete/5", _late_complete, _explain_stale)


def _wait(fn: Callable[[Connector, str, str], int], r: PathRun) -> None:
    fn(r.reader, r.queue, _id(r))


def path_steps(path: str) -> list[Step]:
    """The steps of ``"happy"``, ``"failure"`` or ``"recovery"``, as the page walks them."""
    if path == "happy":
        return [ENQUEUE, CLAIM, COMPLETE]
    if path == "failure":
        return [ENQUEUE, CLAIM, RETRY, PROMOTE, SECOND_CLAIM, FINAL_RETRY]
    if path == "recovery":
        return [ENQUEUE, SHORT_CLAIM, LAPSE, REAP, RECLAIM, LATE_COMPLETE]
    raise ValueError(f"path must be one of {', '.join(PATHS)}, got {path!r}")


def headline(step: Step, call: Call) -> str:
    """``claim — claim/3 → @claim2``: the handle, and the executor that really ran (from the trace)."""
    if not step.handle:
        return f"{step.name} — the lease runs out on the server clock · no call"
    return f"{step.name} — {step.handle} → {call.executor or '(not sent)'}"


class Lifecycle:
    """One path of the lifecycle, stepped by real calls on a fresh queue of its own.

    ``index`` is how many steps have run; ``history`` holds their outcomes.
    ``back()`` resets to a new queue and replays steps ``0..index-2``, so no
    state from the abandoned run can leak into the replay.
    """

    def __init__(
        self,
        conn: Connector,
        path: str = "happy",
        *,
        queue_prefix: str = "trace",
        settings: Settings | None = None,
        reader: Connector | None = None,
    ) -> None:
        self.conn = conn
        self.reader = reader or reader_for(conn)
        self.path = path
        self.steps = path_steps(path)
        self.settings = settings or Settings()
        self.queue_prefix = queue_prefix
        self.queues: list[str] = []  # every queue this model made, for cleanup
        self.history: list[Outcome] = []
        self.run = self._new_run()

    # -- state -----------------------------------------------------------------------------------------
    @property
    def queue(self) -> str:
        return self.run.queue

    @property
    def index(self) -> int:
        return len(self.history)

    @property
    def done(self) -> bool:
        return self.index >= len(self.steps)

    @property
    def next_step(self) -> Step | None:
        return None if self.done else self.steps[self.index]

    @property
    def last(self) -> Outcome | None:
        return self.history[-1] if self.history else None

    @property
    def job_id(self) -> str | None:
        return self.run.job_id

    def snapshot(self) -> Snapshot:
        return snapshots.snapshot(self.reader, self.queue)

    # -- moves -----------------------------------------------------------------------------------------
    def step(self) -> Outcome:
        """Run the next step: one real call (after any wait on the server clock)."""
        st = self.next_step
        if st is None:
            raise IndexError(f"the {self.path} path has only {len(self.steps)} steps")
        if st.prepare is not None:
            st.prepare(self.run)
        call = run_call(self.conn, self.reader, self.queue, lambda: st.act(self.run))
        caption, detail = st.explain(self.run, call)
        out = Outcome(self.index, st, call, headline(st, call), caption, detail)
        self.history.append(out)
        return out

    def reset(self) -> None:
        """Start again on a new, empty queue (the old run's keys are deleted)."""
        old = self.run.queue
        self.history.clear()
        self.run = self._new_run()
        drop_queue(self.reader, old)

    def back(self) -> Outcome | None:
        """One step back: reset, then replay every step but the last on the fresh queue."""
        target = max(self.index - 1, 0)
        self.reset()
        for _ in range(target):
            self.step()
        return self.last

    def run_all(self) -> list[Outcome]:
        while not self.done:
            self.step()
        return list(self.history)

    def close(self) -> None:
        drop_queue(self.reader, self.queue)
        if self.reader is not self.conn:
            self.reader.close()

    def _new_run(self) -> PathRun:
        q = fresh_queue(self.queue_prefix)
        self.queues.append(q)
        return PathRun(self.conn, self.reader, q, self.settings)
