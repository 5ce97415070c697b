"""Notebook 01 · the lifecycle: put c last, three completions, predict the order, name the transition."""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable
from typing import Any

from ... import ids, jobs, snapshots
from ...connector import Connector
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


# -- 01.4 · predict: three completions -------------------------------------------------------------------------
COMPLETIONS = ("a token nobody was given", "the token the claim answered", "the same completion again")


def _completions_shape(answer: Any, args: tuple[Any, ...]) -> str | None:
    keys = (*COMPLETIONS, "completed count")
    if not isinstance(answer, dict) or set(answer) != set(keys):
        return f"return a dict with exactly the keys {sorted(keys)}; got {answer!r}."
    bad = sorted({str(answer[k]) for k in COMPLETIONS if answer[k] not in (jobs.OK, jobs.STALE)})
    if bad:
        return f'each completion\'s answer is "ok" or "stale" (jobs.OK, jobs.STALE); {bad} is not.'
    if not isinstance(answer["completed count"], int) or isinstance(answer["completed count"], bool):
        return f"the completed count is an int; got {answer['completed count']!r}."
    return None


@prediction(
    "01.4",
    "Three completions",
    "Hint: @complete compares the token with the row's attempts, and a completion deletes the row. What is "
    "left for a second completion to compare with?",
    solution="01_4_three_completions.py",
    shape=_completions_shape,
    explain="@complete passes only when the token equals the row's attempts (the claim's answer) and the row is "
    "active; anything else answers stale and writes nothing. The right completion deletes the row, so the same "
    "completion sent again finds no row and is stale too: the job is counted once.",
)
def _run_three_completions(conn: Connector, queue: str, args: tuple[Any, ...]) -> dict[str, Any]:
    (job_id,) = args
    c = jobs.claim(conn, queue, 30_000)
    assert c is not None and c.id == job_id
    seen: dict[str, Any] = {COMPLETIONS[0]: jobs.complete(conn, queue, job_id, c.attempts + 1)}
    seen[COMPLETIONS[1]] = jobs.complete(conn, queue, job_id, c.attempts)
    seen[COMPLETIONS[2]] = jobs.complete(conn, queue, job_id, c.attempts)
    seen["completed count"] = snapshots.snapshot(conn, queue).completed
    return seen


@setup_for("01.4")
def _setup_three_completions(conn: Connector, queue: str) -> tuple[Any, ...]:
    return (jobs.enqueue(conn, queue, "the job to finish"),)


# -- 01.3 · predict the order ---------------------------------------------------------------------------
def _order_shape(answer: Any, args: tuple[Any, ...]) -> str | None:
    (labels,) = args
    if isinstance(answer, list) and sorted(answer) == sorted(labels):
        return None
    return f"return a list of the {len(labels)} labels, each once, in the order the claims will hand them out."


@prediction(
    "01.3",
    "Predict the claim order",
    "Hint: ZPOPMIN with every score 0 compares the members byte by byte. Write each id down and compare "
    "them as strings: 'A' < 'J' < 'z', and a reap or a promote puts an id back with its old bytes.",
    solution="01_3_predict_the_order.py",
    shape=_order_shape,
    given=lambda args: args,  # the labels: what each job is, never its id
)
def _run_predict_the_order(conn: Connector, queue: str, args: tuple[Any, ...]) -> list[str]:
    (labels,) = args
    # the run: claim everything, smallest id by bytes first
    order = []
    while (c := jobs.claim(conn, queue, 30_000)) is not None:
        order.append(next(label for label, i in labels.items() if i == c.id))
    return order


@setup_for("01.3")
def _setup_predict_the_order(conn: Connector, queue: str) -> tuple[Any, ...]:
    reaped = jobs.enqueue(conn, queue, "minted before all the others")
    jobs.claim(conn, queue, 20)  # its worker crashes: the lease lapses
    first = jobs.enqueue(conn, queue, "this process, first")
    second = jobs.enqueue(conn, queue, "this process, second")
    rush = jobs.enqueue(conn, queue, "a caller's own id", job_id="A-rush")
    late = jobs.enqueue(conn, queue, "a caller's own id", job_id="zz-late")
    behind = jobs.enqueue(conn, queue, "another producer", job_id=ids.id_at(time.time_ns() // 1_000_000 - 5_000))
    time.sleep(0.03)
    assert jobs.reap(conn, queue) == [reaped]
    labels = {
        "this process, first": first,
        "this process, second": second,
        "custom id A-rush": rush,
        "custom id zz-late": late,
        "another producer, clock 5 s behind, enqueued last": behind,
        "reaped back to pending, minted before all": reaped,
    }
    return (labels,)


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
