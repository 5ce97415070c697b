"""Notebook 05 · flows: a refused land, a parent that needs only a quorum, why a parent never releases, predict
the counter."""

from __future__ import annotations

import time
from typing import Any

from ... import flows, ids, jobs, snapshots
from ...connector import Connector
from ...errors import BadInput, DuplicateJob
from ..judges.fan_in import judge_fan_in
from ..registry import Findings, exercise, judged, keyed_dict, prediction, setup_for

# -- 05.1 · what a refused land leaves -----------------------------------------------------------------------------
LANDS = ("two children share an id", "a child's id is already a job's", "a policy list one short")
LEFT = "jobs in the queue after the three"
ERRORS = ("BadInput", "DuplicateJob", "landed")


def _land_shape(answer: Any, args: tuple[Any, ...]) -> str | None:
    wrong = keyed_dict((*LANDS, LEFT))(answer, args)
    if wrong:
        return wrong
    bad = sorted({str(answer[k]) for k in LANDS if answer[k] not in ERRORS})
    if bad:
        return f"each land's answer is one of {ERRORS}; {bad} is not."
    if not isinstance(answer[LEFT], int) or isinstance(answer[LEFT], bool):
        return f"{LEFT!r} is a number of jobs (rows); got {answer[LEFT]!r}."
    return None


@prediction(
    "05.1",
    "What a refused land leaves",
    "Hint: flows.add checks its arguments on the host before it sends anything (BadInput), and @enqueue_flow "
    "checks every id before its first write (DuplicateJob): a refused land writes nothing at all.",
    solution="05_1_refused_lands.py",
    shape=_land_shape,
)
def _run_refused_lands(conn: Connector, queue: str, args: tuple[Any, ...]) -> dict[str, Any]:
    taken = jobs.enqueue(conn, queue, "already here")
    fresh = ids.mint()
    seen: dict[str, Any] = {}
    tries = (
        (LANDS[0], lambda: flows.add(conn, queue, "parent", [(fresh, "a"), (fresh, "b")])),
        (LANDS[1], lambda: flows.add(conn, queue, "parent", ["a", (taken, "b"), "c"])),
        (LANDS[2], lambda: flows.add(conn, queue, "parent", ["a", "b", "c"], policy=["fail", "ignore"])),
    )
    for name, land in tries:
        try:
            land()
            seen[name] = "landed"
        except (BadInput, DuplicateJob) as exc:
            seen[name] = type(exc).__name__
    seen[LEFT] = len(snapshots.snapshot(conn, queue).rows)
    return seen


# -- 05.3 · why does this parent never release? ----------------------------------------------------------------
_HOLDER: dict[str, str] = {}


@exercise(
    "05.3",
    "Why does this parent never release?",
    "Hint: read the counter (flows.dependencies) and then every child's row: which one is neither completed "
    "nor pending? Its parent_policy says what its death did to the parent, and what would undo it.",
    solution="05_3_never_releases.py",
    kind="diagnose",
)
def _verify_never_releases(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    (parent,) = args
    holder = _HOLDER.pop(queue)
    s = snapshots.snapshot(conn, queue)
    f.expect(result == holder, f"return the id of the child that held the parent; {result!r} is not it.")
    f.expect(s.where(parent) == ["pending"], f"the parent should be released to pending; it is in {s.where(parent)}.")
    f.expect(flows.dependencies(conn, queue, parent) == 0, "every child should count as done: :dependencies = 0.")
    f.expect(
        len(flows.children_values(conn, queue, parent)) == 3,
        "all three children should have completed with a result (:processed holds 3).",
    )


@setup_for("05.3")
def _setup_never_releases(conn: Connector, queue: str) -> tuple[Any, ...]:
    flow = flows.add(conn, queue, "parent", ["one", "two", "three"], policy="wait")
    for n in range(3):
        c = jobs.claim(conn, queue, 30_000)
        if n == 1:  # the second child spends its only attempt
            jobs.retry(conn, queue, c.id, c.attempts, "the disk was full", max_attempts=1)
            _HOLDER[queue] = c.id
        else:
            jobs.complete(conn, queue, c.id, c.attempts, f"{c.payload} done")
    return (flow.parent_id,)


# -- 05.4 · predict the counter ------------------------------------------------------------------------------------
STEPS = (
    "a completes",
    "a's completion is delivered again",
    "b's first worker completes late, after a reap and a new claim",
    "b's second worker completes",
    "c dies (policy ignore)",
)


@prediction(
    "05.4",
    "Predict the counter",
    "Hint: the DECR sits inside the branch that runs only when this completion took the child out of active, "
    "and only after the token fence passed. Under ignore, a death counts as done.",
    solution="05_4_predict_the_counter.py",
    shape=keyed_dict(("dependencies after each step", "the parent's state at the end")),
)
def _run_predict_the_counter(conn: Connector, queue: str, args: tuple[Any, ...]) -> dict[str, Any]:
    (parent,) = args
    counter: list[int] = []
    a = jobs.claim(conn, queue, 30_000)
    jobs.complete(conn, queue, a.id, a.attempts, "a")
    counter.append(flows.dependencies(conn, queue, parent))
    jobs.complete(conn, queue, a.id, a.attempts, "a again")
    counter.append(flows.dependencies(conn, queue, parent))
    b = jobs.claim(conn, queue, 20)
    time.sleep(0.03)
    jobs.reap(conn, queue)
    b2 = jobs.claim(conn, queue, 30_000)
    jobs.complete(conn, queue, b.id, b.attempts, "b, late")
    counter.append(flows.dependencies(conn, queue, parent))
    jobs.complete(conn, queue, b2.id, b2.attempts, "b")
    counter.append(flows.dependencies(conn, queue, parent))
    c = jobs.claim(conn, queue, 30_000)
    jobs.retry(conn, queue, c.id, c.attempts, "c broke", max_attempts=1)
    counter.append(flows.dependencies(conn, queue, parent))
    return {"dependencies after each step": counter,
            "the parent's state at the end": snapshots.snapshot(conn, queue).state(parent)}


@setup_for("05.4")
def _setup_predict_the_counter(conn: Connector, queue: str) -> tuple[Any, ...]:
    return (flows.add(conn, queue, "parent", ["a", "b", "c"], policy="ignore").parent_id,)


# -- 05.2 · build: the fan-in, judged by the checker under kills ---------------------------------------------------
@judged(
    "05.2",
    "A parent that needs only a quorum",
    "Hint: three layers, in this order. The fence: the row's attempts must equal the caller's token and its state "
    "be active, else answer 0 and write nothing. Then once-only: count the child only when ZREM took it out of "
    "active AND the parent's row still says awaiting_children (after the quorum it says pending, active, or is "
    "gone). Counting is DECR :dependencies and HSET its result in :processed; when :processed holds quorum "
    "results (HLEN), ZADD the parent to ARGV[3] .. 'pending' with score 0 and set its state to pending. Last, "
    "DEL the child's row and answer 1.",
    solution="05_2_fan_in.py",
)
def _judge_fan_in(answer: Any, f: Findings) -> None:
    judge_fan_in(answer, f)
