"""Notebook 01 · the lifecycle: put c last, whose token, predict the order, name the transition."""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable
from typing import Any

from ... import ids, jobs, snapshots
from ...connector import Connector
from .. import forms
from ..registry import Findings, exercise, prediction, setup_for
from . import diagnosis

# what the setup did, by queue: kept here, never handed to the learner's function
_TRUTH: dict[str, dict[str, str]] = {}


# -- 01.2 · repair: the claim order a producer asked for --------------------------------------------------
@exercise(
    "01.2",
    "Put c last",
    "Hint: with every score 0, what decides which member pending hands out first? Put the three ids side by "
    "side, and ask what about c would have to change for it to come last, and whether a job already in the queue "
    "can change it.",
    solution="01_2_put_c_last.py",
    kind="repair",
)
def _verify_put_c_last(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    s = snapshots.snapshot(conn, queue)
    if not f.expect(s.completed == 0, f"the queue counts {s.completed} completion"
                    f"{'s' if s.completed != 1 else ''} (metrics:completed): no handler ran a job here, so none "
                    "is done; a completion sent to get a job out of the way says it was."):
        return
    ghosts = [i for i in s.pending if i not in s.rows]
    if not f.expect(not ghosts, f"pending holds {ghosts} with no row: a ZREM or ZADD by hand leaves a ghost "
                    "(a claim pops it and answers empty)."):
        return
    strays = sorted(set(s.rows) - set(s.pending))
    for i in strays:
        where = s.where(i)
        f.expect(False, f"the row of {i} is in no set: a row left behind that no claim reaches." if not where else
                 f"{i} ({s.rows[i].get('payload')!r}) is in active, held by no worker: when its lease lapses a reap "
                 "puts it back, and the claims hand that payload out a second time." if where == ["active"] else
                 f"{i} is in {where}: the three jobs should wait in pending for the claims.")
    if strays:
        return
    scored = {i: v for i, v in s.sets["pending"].items() if v != 0}
    if not f.expect(not scored, f"every pending score is 0 (the order is the ids' bytes); {scored} is not: "
                    "a reap or a promote puts a job back at 0, and the order you made would not hold."):
        return
    payloads = [s.rows[i].get("payload") for i in s.pending]  # pending's order: the claims' order
    f.expect(payloads == ["a", "b", "c"],
             f"the claims would hand out the payloads {payloads}: they should hand out a, b, c, each once.")
    f.expect(all(s.rows[i].get("state") == "pending" for i in s.pending), "every row should say pending.")


@setup_for("01.2")
def _setup_put_c_last(conn: Connector, queue: str) -> tuple[Any, ...]:
    # a producer meant a, b, c; c came with a caller's id that sorts before every minted one
    for payload in ("a", "b"):
        jobs.enqueue(conn, queue, payload)
    jobs.enqueue(conn, queue, "c", job_id="A-c-urgent")
    return ()


# -- 01.4 · predict: whose token? -------------------------------------------------------------------------------
TOKENS = "the tokens the three claims answer, in order"
Z_WITH_X = "z, completed with the token x's claim answered"
X_OWN = "x, then completed with its own claim's token"
COUNT = "completed count at the end"
SETTLE = forms.words(jobs.OK, jobs.STALE)


@prediction(
    "01.4",
    "Whose token?",
    "Hint: a claim's token is what HINCRBY answered: which key did it raise, one per queue or one per job? "
    "And @complete compares a token with which row's attempts?",
    solution="01_4_whose_token.py",
    form=forms.record({TOKENS: forms.Each(forms.Count(1), 3), Z_WITH_X: SETTLE, X_OWN: SETTLE,
                       COUNT: forms.Count()}),
    explain="a token is the job's own row's attempts: each job counts its own claims, so three first claims "
    "answer 1 each. @complete compares the token with the attempts of the row it completes, and z's is 1, the "
    "very number x's claim answered: it passes, though nobody handed that token to z's worker. x's own "
    "completion passes too, and the queue counted two completions.",
)
def _run_whose_token(conn: Connector, queue: str) -> dict[str, Any]:
    x, y, z = (jobs.enqueue(conn, queue, f"job {name}") for name in "xyz")
    claims = [jobs.claim(conn, queue, 30_000) for _ in range(3)]
    assert [c.id if c else None for c in claims] == [x, y, z]
    seen: dict[str, Any] = {TOKENS: [c.attempts for c in claims if c]}
    x_token = claims[0].attempts if claims[0] else 0
    seen[Z_WITH_X] = jobs.complete(conn, queue, z, x_token)
    seen[X_OWN] = jobs.complete(conn, queue, x, x_token)
    seen[COUNT] = snapshots.snapshot(conn, queue).completed
    jobs.drop(conn, queue)  # the check's queue goes with its run
    return seen


# -- 01.3 · predict the order ---------------------------------------------------------------------------
ORDER_LABELS = (
    "this process, first",
    "this process, second",
    "custom id A-rush",
    "custom id zz-late",
    "another producer, clock 5 s behind, enqueued last",
    "reaped back to pending, minted before all",
)


@prediction(
    "01.3",
    "Predict the claim order",
    "Hint: ZPOPMIN with every score 0 compares the members byte by byte. Write each id down and compare "
    "them as strings: what does a minted id start with, which characters sort before it and after it, and what "
    "does an id minted 5 seconds earlier look like?",
    solution="01_3_predict_the_order.py",
    form=forms.order(ORDER_LABELS),
    explain="ZPOPMIN with every score 0 takes the smallest member, compared byte by byte: 'A-rush' before every "
    "'JOB…' id ('A' < 'J'); then the other producer's id, whose clock part is 5 s earlier although it was "
    "enqueued last; then the reaped job, back with its old early id; then this process's two mints in order; "
    "'zz-late' last (lowercase sorts after every capital).",
)
def _run_predict_the_order(conn: Connector, queue: str) -> list[str]:
    # built only now, once the prediction is kept: no id existed while the learner answered
    reaped = jobs.enqueue(conn, queue, "minted before all the others")
    jobs.claim(conn, queue, 20)  # its worker crashes: the lease lapses
    first = jobs.enqueue(conn, queue, "this process, first")
    second = jobs.enqueue(conn, queue, "this process, second")
    rush = jobs.enqueue(conn, queue, "a caller's own id", job_id="A-rush")
    late = jobs.enqueue(conn, queue, "a caller's own id", job_id="zz-late")
    behind = jobs.enqueue(conn, queue, "another producer", job_id=ids.id_at(time.time_ns() // 1_000_000 - 5_000))
    time.sleep(0.03)
    assert jobs.reap(conn, queue) == [reaped]
    label = dict(zip((first, second, rush, late, behind, reaped), ORDER_LABELS))
    order = []
    while (c := jobs.claim(conn, queue, 30_000)) is not None:  # the run: smallest id by bytes first
        order.append(label[c.id])
    jobs.drop(conn, queue)
    return order


# -- 01.1 · which transition put it there? -------------------------------------------------------------
#: what in a job's place and row each transition leaves, as (holds, why a job without it was not put there so)
SIGNS: dict[str, tuple[tuple[Callable[[list[str], dict[str, str]], bool], str], ...]] = {
    "enqueue": ((lambda where, row: where == ["pending"], "an enqueue puts a job in pending"),
                (lambda where, row: row.get("attempts") == "0", "an enqueue leaves attempts at 0, and a claim "
                                                                "raised this one's")),
    "claim": ((lambda where, row: where == ["active"], "a claim puts a job in active"),),
    "retry": ((lambda where, row: where == ["schedule"], "a retry below the cap parks a job in schedule"),),
    "retry at the cap": ((lambda where, row: where == ["dead"], "a retry at the cap buries a job in dead"),),
    "reap": ((lambda where, row: where == ["pending"], "a reap puts a job back in pending"),
             (lambda where, row: row.get("attempts") != "0", "a reap takes back a claimed job, and this one's "
                                                             "attempts says no claim ever took it"),
             (lambda where, row: "last_error" not in row, "its row holds a last_error: a retry ran on it after a "
                                                          "claim, and a reap writes none")),
    "promote": ((lambda where, row: where == ["pending"], "a promote moves a job to pending"),
                (lambda where, row: "last_error" in row, "a promote brings back a job a retry parked, and a retry "
                                                         "writes last_error; this row has none")),
}
TRANSITIONS = tuple(SIGNS)


def why_not(transition: str, where: list[str], row: dict[str, str]) -> str | None:
    """Why a job in ``where`` with ``row`` was not put there by ``transition``; None when all its signs hold."""
    for holds, why in SIGNS[transition]:
        if not holds(where, row):
            return f"it is in {'/'.join(where) or 'no set'}, and {why}"
    return None


@exercise(
    "01.1",
    "Which transition put it there?",
    "Hint: the set alone cannot tell the three jobs in pending apart; their rows can. For each transition, ask "
    "which of the row's fields it writes, and which it leaves as it found them.",
    solution="01_1_which_transition.py",
    kind="diagnose",
)
def _verify_which_transition(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    (job_ids,) = args
    truth = _TRUTH.pop(queue)
    if not diagnosis.untouched(conn, queue, f):
        return
    if not f.expect(
        isinstance(result, dict) and set(result) == set(job_ids),
        f"return a dict from each of the {len(job_ids)} ids to a transition; got {type(result).__name__}.",
    ):
        return
    unknown = sorted({v for v in result.values() if v not in TRANSITIONS}, key=str)
    if not f.expect(not unknown, f"name transitions from {list(TRANSITIONS)}; {unknown} are not among them."):
        return
    s = snapshots.snapshot(conn, queue)
    wrong = [i for i in job_ids if result[i] != truth[i]]
    if wrong:  # the first one explained, by what its place and its row show; the others counted
        i = wrong[0]
        more = f"; {len(wrong) - 1} more of the {len(job_ids)} are not right either" if len(wrong) > 1 else ""
        f.expect(False, f"{i}: not {result[i]}: {why_not(result[i], s.where(i), s.rows[i])}{more}.")


@setup_for("01.1")
def _setup_which_transition(conn: Connector, queue: str) -> tuple[Any, ...]:
    # six ids minted up front and dealt to the six stories at random: an id's place among the others says nothing
    dealt = [ids.mint() for _ in TRANSITIONS]
    random.Random(secrets.randbits(64)).shuffle(dealt)
    truth = dict(zip(dealt, TRANSITIONS))
    claimed = sorted(i for i, t in truth.items() if t != "enqueue")
    for job_id in claimed:
        jobs.enqueue(conn, queue, "a job", job_id=job_id)
    for job_id in claimed:
        c = jobs.claim(conn, queue, 20 if truth[job_id] == "reap" else 30_000)  # pending hands out the lowest id
        assert c is not None and c.id == job_id
        if truth[job_id] == "promote":
            jobs.retry(conn, queue, job_id, c.attempts, "flaky", delay_ms=1, max_attempts=3)
        elif truth[job_id] == "retry":
            jobs.retry(conn, queue, job_id, c.attempts, "flaky", delay_ms=600_000, max_attempts=3)
        elif truth[job_id] == "retry at the cap":
            jobs.retry(conn, queue, job_id, c.attempts, "hopeless", max_attempts=1)
    time.sleep(0.03)  # the short lease lapses, the short retry comes due
    by = {t: i for i, t in truth.items()}
    assert jobs.reap(conn, queue) == [by["reap"]] and jobs.promote(conn, queue) == [by["promote"]]
    jobs.enqueue(conn, queue, "a job", job_id=by["enqueue"])
    s = snapshots.snapshot(conn, queue)
    for job_id, transition in truth.items():  # the signs tell each one from the five others
        assert why_not(transition, s.where(job_id), s.rows[job_id]) is None, (job_id, transition)
    _TRUTH[queue] = truth
    diagnosis.keep(conn, queue)
    return (sorted(truth),)
