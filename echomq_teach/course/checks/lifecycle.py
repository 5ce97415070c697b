"""Notebook 01 · the lifecycle: fill, walk, predict the order, name the transition."""

from __future__ import annotations

import time
from typing import Any

from ... import flows, ids, jobs, snapshots, stalled
from ...connector import Connector
from ..registry import Findings, exercise, prediction, setup_for

# 01.4: the transitions a learner may name, as the table in notebook 01 names them
TRANSITIONS = ("enqueue", "claim", "retry", "retry at the cap", "reap", "promote", "stall sweep", "flow land")
# what the setup did, by queue: kept here, never handed to the learner's function
_TRUTH: dict[str, dict[str, str]] = {}


@exercise(
    "01.1",
    "Fill the queue",
    "Hint: one jobs.enqueue(conn, queue, payload) per payload, in the order you want them claimed.",
    solution="01_1_fill_the_queue.py",
    kind="build",
)
def _v011(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    s = snapshots.snapshot(conn, queue)
    if not f.expect(len(s.pending) == 3, f"pending should hold 3 ids; it holds {len(s.pending)}."):
        return
    payloads = [s.rows.get(i, {}).get("payload") for i in s.pending]
    f.expect(payloads == ["a", "b", "c"], f"in id order the payloads should be a, b, c; they are {payloads}.")
    states = {s.rows[i].get("state") for i in s.pending if i in s.rows}
    f.expect(states == {"pending"}, f"every row's state should be pending; saw {sorted(states)}.")


@exercise(
    "01.2",
    "Walk the happy path",
    "Hint: a claim answers the token (its attempts); the completion must hand that same number back.",
    solution="01_2_happy_path.py",
    kind="build",
)
def _v012(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    (job_id,) = args
    s = snapshots.snapshot(conn, queue)
    f.expect(not s.where(job_id), f"{job_id} should have left every set; it is in {s.where(job_id)}.")
    f.expect(job_id not in s.rows, f"a completed row is deleted, but {job_id}'s row is still there.")
    f.expect(s.completed == 1, f"metrics:completed count should be 1; it is {s.completed}.")


@setup_for("01.2")
def _s012(conn: Connector, queue: str) -> tuple[Any, ...]:
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
def _r013(conn: Connector, queue: str, args: tuple[Any, ...]) -> list[str]:
    (labels,) = args
    # the run: claim everything, smallest id by bytes first
    order = []
    while (c := jobs.claim(conn, queue, 30_000)) is not None:
        order.append(next(label for label, i in labels.items() if i == c.id))
    return order


@setup_for("01.3")
def _s013(conn: Connector, queue: str) -> tuple[Any, ...]:
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


# -- 01.4 · which transition put it there? -------------------------------------------------------------
@exercise(
    "01.4",
    "Which transition put it there?",
    "Hint: read each row, not only its set: attempts (0 means never claimed), last_error (a retry wrote it), "
    "stalled (the counted sweep wrote it), parent (a flow child), and the state awaiting_children.",
    solution="01_4_which_transition.py",
    kind="diagnose",
)
def _v014(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
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


@setup_for("01.4")
def _s014(conn: Connector, queue: str) -> tuple[Any, ...]:
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
