"""Notebook 05 · flows: which lands are refused, a parent that needs only a quorum, why a parent never
releases, predict the counter."""

from __future__ import annotations

import secrets
import time
from typing import Any

from ... import flows, jobs, snapshots
from ...connector import Connector
from ...errors import BadInput, DuplicateJob
from .. import forms
from ..judges.stages import stage_exercise
from ..registry import Findings, exercise, prediction, setup_for
from . import staging

# -- 05.1 · which lands are refused ---------------------------------------------------------------------------------
# a case no cell runs: ids a queue held once, or holds in no set, and a land refused in two places at once
LANDS = ("a dead job's id, with a policy list one short", "a child's id is a completed job's",
         "a child's id is a waiting parent's")
LEFT = "jobs in the queue after the three"
ERRORS = ("BadInput", "DuplicateJob", "landed")


@prediction(
    "05.1",
    "Which lands are refused",
    "Hint: two places can refuse a land: flows.add, on the host, before anything is sent, and @enqueue_flow "
    "(printed above) on the node, which asks one thing of each id. Which of the two sees a land first, and what "
    "does the script ask of an id: is it in a set, or has it a row? Which of the queue's jobs still have one?",
    solution="05_1_refused_lands.py",
    form=forms.record({**{land: forms.words(*ERRORS) for land in LANDS}, LEFT: forms.Count()}),
    explain="flows.add checks its arguments on the host before it sends anything, so a policy list one short is "
    "BadInput whatever its ids are: the node never sees them. @enqueue_flow then asks whether each id has a row "
    "(EXISTS): a dead job keeps its row and a parent waiting for its children has one (in no set), so a land "
    "reusing either is DuplicateJob and writes nothing; a completed job's row went with its completion, so its id "
    "lands again. The queue ends with the dead job, the waiting flow's three rows and the landed flow's three.",
)
def _run_refused_lands(conn: Connector, queue: str) -> dict[str, Any]:
    done = jobs.enqueue(conn, queue, "done")
    claimed = jobs.claim(conn, queue, 30_000)
    assert claimed is not None and claimed.id == done
    jobs.complete(conn, queue, done, claimed.attempts, "done")
    dead = jobs.enqueue(conn, queue, "fails")
    claimed = jobs.claim(conn, queue, 30_000)
    assert claimed is not None and claimed.id == dead
    jobs.retry(conn, queue, dead, claimed.attempts, "it failed", max_attempts=1)
    waiting = flows.add(conn, queue, "waits", ["x", "y"]).parent_id
    seen: dict[str, Any] = {}
    tries = (
        (LANDS[0], lambda: flows.add(conn, queue, "parent", [(dead, "a"), "b", "c"], policy=["fail", "ignore"])),
        (LANDS[1], lambda: flows.add(conn, queue, "parent", [(done, "a"), "b"])),
        (LANDS[2], lambda: flows.add(conn, queue, "parent", [(waiting, "a"), "b"])),
    )
    for name, land in tries:
        try:
            land()
            seen[name] = "landed"
        except (BadInput, DuplicateJob) as exc:
            seen[name] = type(exc).__name__
    seen[LEFT] = len(snapshots.snapshot(conn, queue).rows)
    jobs.drop(conn, queue)  # the check's queue goes with its run
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
    "a's worker completes it after its 30 ms lease lapsed, no sweep since",
    "b's worker dies; once its lease lapsed a reap runs; then that worker wakes and completes b",
    "b is claimed again and fails at its cap of 2 attempts (b's policy: wait)",
    "c is claimed and fails at its cap of 1 (c's policy: remove)",
    "d is claimed and fails at its cap of 1 (d's policy: ignore)",
    "b is reprocessed, claimed and completed",
)
COUNTER = "dependencies after each step"
PARENT_END = "the parent's state at the end"
UNSUCCESSFUL = "entries in the parent's :unsuccessful at the end"
POLICIES_54 = ["fail", "wait", "remove", "ignore"]


@prediction(
    "05.4",
    "Predict the counter",
    "Hint: for each step, ask two questions in @complete's order: does the token fence pass (the row's attempts "
    "and its state, never the clock)? Did this call take the child out of active? For a death, read the "
    "policies table: which policies count a death as done, and which one records it?",
    solution="05_4_predict_the_counter.py",
    form=forms.record({COUNTER: forms.Each(forms.Count(), len(STEPS), tuple(f"step {n}" for n in range(1, 7))),
                       PARENT_END: forms.words("awaiting_children", "pending", "active", "dead"),
                       UNSUCCESSFUL: forms.Count()}),
    explain="the fence reads no clock: a's lapsed lease, never swept, still passes, and a's completion takes it "
    "out of active: 4 → 3. The reap made b's row pending, so its old worker is stale and counts nothing. b's "
    "death under wait counts nothing either; c's under remove and d's under ignore count as done (3 → 2 → 1), "
    "and only ignore records the failure in :unsuccessful. The reprocessed b completes: 0, the parent is "
    "released to pending.",
)
def _run_predict_the_counter(conn: Connector, queue: str) -> dict[str, Any]:
    flow = flows.add(conn, queue, "parent", ["a", "b", "c", "d"], policy=POLICIES_54)
    parent, (a, b, c, d) = flow.parent_id, flow.child_ids
    counter: list[int] = []

    def step() -> None:
        counter.append(flows.dependencies(conn, queue, parent))

    first = jobs.claim(conn, queue, 30)
    time.sleep(0.05)
    jobs.complete(conn, queue, a, first.attempts if first else 1, "a, late")
    step()
    dies = jobs.claim(conn, queue, 20)
    time.sleep(0.03)
    jobs.reap(conn, queue)
    jobs.complete(conn, queue, b, dies.attempts if dies else 1, "b, from a worker that woke")
    step()
    for child, cap in ((b, 2), (c, 1), (d, 1)):
        got = jobs.claim(conn, queue, 30_000)
        assert got is not None and got.id == child, (got, child)
        jobs.retry(conn, queue, child, got.attempts, f"{child} broke", max_attempts=cap)
        step()
    jobs.reprocess(conn, queue, b)
    again = jobs.claim(conn, queue, 30_000)
    assert again is not None and again.id == b
    jobs.complete(conn, queue, b, again.attempts, "b")
    step()
    seen = {COUNTER: counter, PARENT_END: snapshots.snapshot(conn, queue).state(parent),
            UNSUCCESSFUL: len(flows.ignored_failures(conn, queue, parent))}
    jobs.drop(conn, queue)  # the check's queue goes with its run
    return seen


# -- 05.2 · your queue, stage 5: the quorum fan-in, judged by the checker under kills ----------------------------------
stage_exercise(
    "05.2",
    "Hint: before a child counts, two questions, one per layer notebook 05 shows: does this caller still hold "
    "the child, and did this very call take it out of active? Then ask whether the parent still waits at all: "
    "after its quorum it may be released, running, or gone, and a late child's completion writes nothing of it.",
)
