"""Notebook 05 · flows: a refused land, a parent that needs only a quorum, why a parent never releases, predict
the counter."""

from __future__ import annotations

import secrets
import time
from typing import Any

from ... import flows, ids, jobs, snapshots
from ...connector import Connector
from ...errors import BadInput, DuplicateJob
from ..judges.fan_in import judge_fan_in
from ..registry import Findings, exercise, judged, keyed_dict, prediction, setup_for
from . import staging

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
#: what 05.3's setup did, by queue: the stuck parents and the child holding each, the flow that is only busy, and
#: what must stay as it is (a job dead on its own, a child dead under fail with its parent)
_HELD: dict[str, dict[str, Any]] = {}


@exercise(
    "05.3",
    "Why do these parents never release?",
    "Hint: a waiting parent counts its children down in :dependencies (flows.dependencies). For each parent still "
    "waiting, find the child that has not completed, and ask what would have brought it back on its own had the "
    "queue's usual callers been running. Not every job in dead or in active holds a parent back.",
    solution="05_3_never_releases.py",
    kind="diagnose",
)
def _verify_never_releases(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    held = _HELD.pop(queue)
    stuck: dict[str, str] = held["stuck"]
    busy_parent, busy_child = held["busy"]
    s = snapshots.snapshot(conn, queue)
    if f.expect(isinstance(result, dict), f"return a dict from each stuck parent to the child that held it; got "
                f"{result!r}."):
        for parent, holder in sorted(stuck.items()):
            if parent not in result:
                f.expect(False, f"{parent} is missing from your answer: nothing was completing its last child.")
            elif result[parent] != holder:
                f.expect(False, f"{parent}: {result[parent]!r} is not the child that held it back.")
        for parent in sorted(set(result) - set(stuck)):
            f.expect(False, f"{parent} was not stuck: " + ("its last child is still running." if parent == busy_parent
                                                          else "it waits for nothing."))
    for parent in sorted(stuck):
        if parent not in s.rows:
            f.expect(False, f"{parent} was completed: a released parent waits in pending for its own worker, whose "
                     "handler reads its children's results.")
            continue
        deps = flows.dependencies(conn, queue, parent)
        if deps == 0 and s.where(parent) != ["pending"]:
            f.expect(False, f"{parent} was released, then taken out of pending (it is in "
                     f"{s.where(parent) or 'no set'}): a released parent waits there for its own worker.")
        elif f.expect(s.where(parent) == ["pending"], f"{parent} is not released (:dependencies = {deps}): one of "
                      "its children has not completed."):
            done = len(flows.children_values(conn, queue, parent))
            f.expect(done == 2, f"{parent} was released with {done} of its 2 children's results in :processed: "
                     "each child completes, with its result, through @complete.")
    row = s.rows.get(busy_child, {})
    f.expect(s.where(busy_child) == ["active"] and row.get("attempts") == "1" and busy_child not in s.dead,
             f"{busy_child}'s worker is still on it, its lease running: nothing may take it from that worker; it is "
             f"in {s.where(busy_child) or 'no set'} with attempts {row.get('attempts')}.")
    f.expect(s.where(busy_parent) == [] and s.state(busy_parent) == "awaiting_children",
             f"{busy_parent} should still wait for its running child; it is {s.state(busy_parent)!r}.")
    for job, why in held["leave"].items():
        f.expect(s.where(job) == ["dead"] and s.rows.get(job, {}).get("attempts") == "1",
                 f"{job} is in {s.where(job) or 'no set'}" + (" with attempts " + s.rows[job]["attempts"]
                                                              if job in s.rows else ", its row gone")
                 + f"; it was dead, {why}, and should have stayed so.")
    failed = held["failed parent"]
    f.expect(s.where(failed) == ["dead"], f"{failed} should still be dead (a child of its died under fail); it is in "
             f"{s.where(failed) or 'no set'}.")


def _held_back(conn: Connector, queue: str, story: str, rng: Any) -> tuple[str, str]:
    """One flow of two children whose first completed and whose second is held up by ``story``."""
    policy = "wait" if story == "died" else rng.choice(("fail", "wait", "ignore"))
    parent = f"order-{secrets.token_hex(4)}"  # a caller's id: it sorts after every minted one
    flow = flows.add(conn, queue, (parent, "an order"), ["a part", "a part"], policy=policy)
    first, second = flow.child_ids
    a = staging.claim_this(conn, queue, first, 30_000)
    jobs.complete(conn, queue, first, a.attempts, "first done")
    b = staging.claim_this(conn, queue, second, 20 if story == "lapsed" else 60_000)
    if story == "died":
        jobs.retry(conn, queue, second, b.attempts, "the disk was full", max_attempts=1)
    elif story == "retried":
        jobs.retry(conn, queue, second, b.attempts, "a timeout", delay_ms=1, max_attempts=3)
    return parent, second


@setup_for("05.3")
def _setup_never_releases(conn: Connector, queue: str) -> tuple[Any, ...]:
    rng = staging.chance()
    # three or four stuck flows, each story at least once; one flow only busy; and two jobs that are dead for good
    # reasons of their own: a plain job, and a child that died under fail, its parent with it
    stories = staging.shuffled(["died", "lapsed", "retried", *rng.sample(["died", "lapsed", "retried"], 1)], rng)
    stuck = dict(_held_back(conn, queue, story, rng) for story in stories)
    busy = _held_back(conn, queue, "running", rng)
    plain = jobs.enqueue(conn, queue, "a report")
    c = staging.claim_this(conn, queue, plain, 30_000)
    jobs.retry(conn, queue, plain, c.attempts, "the template is gone", max_attempts=1)
    failed_parent = f"order-{secrets.token_hex(4)}"
    flow = flows.add(conn, queue, (failed_parent, "an order"), ["a part"], policy="fail")
    c = staging.claim_this(conn, queue, flow.child_ids[0], 30_000)
    jobs.retry(conn, queue, c.id, c.attempts, "the part is out of stock", max_attempts=1)
    time.sleep(0.03)  # the short lease lapses, the retry comes due: no sweep and no promote runs
    _HELD[queue] = {"stuck": stuck, "busy": busy, "failed parent": failed_parent,
                    "leave": {plain: "a job of its own that failed, no parent's child",
                              flow.child_ids[0]: f"a child under fail, its parent {failed_parent} dead with it"}}
    return (sorted([*stuck, busy[0], failed_parent]),)


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
