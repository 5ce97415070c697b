"""Notebook 05 · flows: land four, release a parent, why one never releases, predict the counter, the fan-in."""

from __future__ import annotations

import time
from typing import Any

from ... import flows, jobs, snapshots
from ...connector import Connector
from ..judge import judge_fan_in
from ..registry import Findings, exercise, judged, keyed_dict, prediction, setup_for


@exercise(
    "05.1",
    "Land a flow of four",
    "Hint: flows.add takes the parent's payload and a list of the children's payloads; it answers a Flow.",
    solution="05_1_land_four.py",
    kind="build",
)
def _v051(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    s = snapshots.snapshot(conn, queue)
    held = [i for i, r in s.rows.items() if r.get("state") == "awaiting_children"]
    if not f.expect(len(held) == 1, f"one parent should be held (awaiting_children); found {len(held)}."):
        return
    parent = held[0]
    f.expect(s.rows[parent].get("payload") == "assemble", "the parent's payload should be 'assemble'.")
    f.expect(s.where(parent) == [], f"the parent is held out of every set; it is in {s.where(parent)}.")
    f.expect(len(s.pending) == 4, f"four children should be pending; {len(s.pending)} are.")
    f.expect(flows.dependencies(conn, queue, parent) == 4, "the parent's :dependencies should be 4.")
    f.expect(getattr(result, "parent_id", None) == parent, "return what flows.add answered.")


@exercise(
    "05.2",
    "Release the parent",
    "Hint: the children come out of pending before the parent, which is in no set until the last one "
    "completes; each completion must carry a result for :processed to hold it.",
    solution="05_2_release_the_parent.py",
    kind="build",
)
def _v052(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    (parent,) = args
    s = snapshots.snapshot(conn, queue)
    f.expect(flows.dependencies(conn, queue, parent) == 0, "every child should be done: :dependencies = 0.")
    f.expect(s.state(parent) == "active", f"claim the released parent; its state is {s.state(parent)}.")
    values = flows.children_values(conn, queue, parent)
    f.expect(len(values) == 3, f"all three children should be in :processed; {len(values)} are.")
    f.expect(result == values, "return flows.children_values(conn, queue, parent_id).")


@setup_for("05.2")
def _s052(conn: Connector, queue: str) -> tuple[Any, ...]:
    return (flows.add(conn, queue, "parent", ["one", "two", "three"]).parent_id,)


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
def _v053(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
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
def _s053(conn: Connector, queue: str) -> tuple[Any, ...]:
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
def _r054(conn: Connector, queue: str, args: tuple[Any, ...]) -> dict[str, Any]:
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
def _s054(conn: Connector, queue: str) -> tuple[Any, ...]:
    return (flows.add(conn, queue, "parent", ["a", "b", "c"], policy="ignore").parent_id,)


# -- 05.5 · build: the fan-in, judged by the checker under kills ---------------------------------------------------
@judged(
    "05.5",
    "Write the fan-in, and survive the kills",
    "Hint: two layers, in this order. The fence: the row's attempts must equal the caller's token and its state "
    "be active, else answer 0 and write nothing. Then once-only: count the child (DECR :dependencies, HSET its "
    "result in :processed) only when ZREM took it out of active; at zero, ZADD the parent to ARGV[3] .. "
    "'pending' with score 0 and set its state to pending. Last, DEL the child's row and answer 1.",
    solution="05_5_fan_in.py",
)
def _j055(answer: Any, f: Findings) -> None:
    judge_fan_in(answer, f)
