"""Notebook 01 · the lifecycle: put c last, three completions, predict the order, name the transition."""

from __future__ import annotations

import time
from typing import Any

from ... import flows, ids, jobs, snapshots, stalled
from ...connector import Connector
from ..registry import Findings, exercise, prediction, setup_for

# 01.1: the transitions a learner may name, as the table in notebook 01 names them
TRANSITIONS = ("enqueue", "claim", "retry", "retry at the cap", "reap", "promote", "stall sweep", "flow land")
# what the setup did, by queue: kept here, never handed to the learner's function
_TRUTH: dict[str, dict[str, str]] = {}


# -- 01.2 · repair: the claim order a producer asked for --------------------------------------------------
@exercise(
    "01.2",
    "Put c last",
    "Hint: pending hands out its members in byte order, and 'A' sorts before 'JOB'. The custom id cannot be "
    "renamed: remove that job (jobs.remove takes its row with it) and enqueue its payload again with a "
    "minted id, which sorts after every id minted before it.",
    solution="01_2_put_c_last.py",
    kind="repair",
)
def _verify_put_c_last(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    s = snapshots.snapshot(conn, queue)
    ghosts = [i for i in s.pending if i not in s.rows]
    if not f.expect(not ghosts, f"pending holds {ghosts} with no row: a ZREM or ZADD by hand leaves a ghost "
                    "(a claim pops it and answers empty)."):
        return
    strays = sorted(set(s.rows) - set(s.pending))
    if not f.expect(not strays, f"the rows of {strays} are in no set: a row left behind that no claim reaches."):
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
@exercise(
    "01.1",
    "Which transition put it there?",
    "Hint: read each row, not only its set: attempts (0 means never claimed), last_error (a retry wrote it), "
    "stalled (the counted sweep wrote it), parent (a flow child), and the state awaiting_children.",
    solution="01_1_which_transition.py",
    kind="diagnose",
)
def _verify_which_transition(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    (job_ids,) = args
    truth = _TRUTH.pop(queue)
    if not f.expect(
        isinstance(result, dict) and set(result) == set(job_ids),
        f"return a dict from each of the {len(job_ids)} ids to a transition; got {type(result).__name__}.",
    ):
        return
    unknown = sorted({v for v in result.values() if v not in TRANSITIONS}, key=str)
    if not f.expect(not unknown, f"name transitions from {list(TRANSITIONS)}; {unknown} are not among them."):
        return
    wrong = [i for i in job_ids if result[i] != truth[i]]
    f.expect(
        not wrong,
        f"{len(wrong)} of {len(job_ids)} are not right: " + ", ".join(f"{i} (you said {result[i]})" for i in wrong),
    )


@setup_for("01.1")
def _setup_which_transition(conn: Connector, queue: str) -> tuple[Any, ...]:
    # minted up front and used highest first: a job sent back to pending has a higher id than the next
    # one enqueued, so each claim below pops the job just enqueued
    pool = sorted((ids.mint() for _ in range(9)), reverse=True)
    truth: dict[str, str] = {}

    def claimed(lease_ms: int = 30_000) -> jobs.Claimed:
        job_id = pool.pop(0)
        jobs.enqueue(conn, queue, "a job", job_id=job_id)
        c = jobs.claim(conn, queue, lease_ms)
        assert c is not None and c.id == job_id
        return c

    c = claimed(20)
    time.sleep(0.03)
    assert stalled.check(conn, queue, max_stalled=3).requeued == [c.id]
    truth[c.id] = "stall sweep"
    c = claimed(20)
    time.sleep(0.03)
    assert jobs.reap(conn, queue) == [c.id]
    truth[c.id] = "reap"
    c = claimed()
    jobs.retry(conn, queue, c.id, c.attempts, "flaky", delay_ms=1, max_attempts=3)
    time.sleep(0.01)
    assert jobs.promote(conn, queue) == [c.id]
    truth[c.id] = "promote"
    c = claimed()
    jobs.retry(conn, queue, c.id, c.attempts, "flaky", delay_ms=600_000, max_attempts=3)
    truth[c.id] = "retry"
    c = claimed()
    jobs.retry(conn, queue, c.id, c.attempts, "hopeless", max_attempts=1)
    truth[c.id] = "retry at the cap"
    c = claimed()
    truth[c.id] = "claim"
    parent, child = pool.pop(0), pool.pop(0)
    flows.add(conn, queue, (parent, "a parent"), [(child, "a child")])
    truth[parent] = truth[child] = "flow land"
    enqueued = pool.pop(0)
    jobs.enqueue(conn, queue, "a job", job_id=enqueued)
    truth[enqueued] = "enqueue"
    _TRUTH[queue] = truth
    return (sorted(truth),)
