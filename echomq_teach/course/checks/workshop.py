"""Notebook 06 · the workshop: one flow child traced through the failure fork, a crash and the fan-in (predict)."""

from __future__ import annotations

import time
from typing import Any

from ... import flows, jobs, snapshots
from ...connector import Connector
from .. import forms
from ..registry import prediction

#: what happens to the flow's children, one step at a time
STEPS = (
    "a's handler fails: a retry, due in 50 ms, 3 attempts allowed",
    "a promote, once the retry is due",
    "a is claimed with a 20 ms lease, its worker dies, and a reap runs once the lease has lapsed",
    "a is claimed and completed",
    "b is claimed and fails at a cap of 1 attempt",
)
ANSWER_KEYS = ("where a is after each step", ":dependencies after each step", "a's token when it completed",
               "the parent at the end")


@prediction(
    "06.1",
    "Trace a flow child",
    "Hint: walk it with the stepper's three paths in mind: which set does each transition leave the child in, "
    "what does each claim do to attempts, and what does a reap give back? For the counter: which two ways can a "
    "child end, and which of them does the policy ignore count?",
    solution="06_1_trace_a_flow_child.py",
    form=forms.record({
        ANSWER_KEYS[0]: forms.Each(forms.words("pending", "active", "schedule", "dead", "nowhere"), 5,
                                   tuple(f"step {n}" for n in range(1, 6))),
        ANSWER_KEYS[1]: forms.Each(forms.Count(), 5, tuple(f"step {n}" for n in range(1, 6))),
        ANSWER_KEYS[2]: forms.Count(1),
        ANSWER_KEYS[3]: forms.words("awaiting_children", "pending", "active", "dead"),
    }),
    explain="a retry parks the child in schedule and promote brings it back to pending; a claim raises its token "
    "every time, a lapsed lease included, and the reap gives nothing back, so a's completing claim is its third. "
    "The counter moves only when a child completes, or dies under a policy that counts a death as done (ignore); "
    "the last count to zero releases the parent to pending.",
)
def _run_trace_a_flow_child(conn: Connector, queue: str) -> dict[str, Any]:
    flow = flows.add(conn, queue, "the parent", ["a", "b"], policy="ignore")
    parent, (a, b) = flow.parent_id, flow.child_ids
    where: list[str] = []
    deps: list[int] = []

    def after() -> None:
        where.append("/".join(snapshots.snapshot(conn, queue).where(a)) or "nowhere")
        deps.append(flows.dependencies(conn, queue, parent))

    c = jobs.claim(conn, queue, 30_000)
    assert c is not None and c.id == a
    jobs.retry(conn, queue, a, c.attempts, "a timeout", delay_ms=50, max_attempts=3)
    after()
    time.sleep(0.07)
    jobs.promote(conn, queue)
    after()
    jobs.claim(conn, queue, 20)  # its worker dies holding it
    time.sleep(0.03)
    jobs.reap(conn, queue)
    after()
    c = jobs.claim(conn, queue, 30_000)
    assert c is not None and c.id == a
    token = c.attempts
    jobs.complete(conn, queue, a, c.attempts, "a done")
    after()
    c = jobs.claim(conn, queue, 30_000)
    assert c is not None and c.id == b
    jobs.retry(conn, queue, b, c.attempts, "broken", max_attempts=1)
    after()
    end = snapshots.snapshot(conn, queue).state(parent)
    jobs.drop(conn, queue)  # the check's queue goes with its run
    return {"where a is after each step": where, ":dependencies after each step": deps,
            "a's token when it completed": token, "the parent at the end": end}
