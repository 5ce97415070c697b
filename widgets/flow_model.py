"""The flow composer's logic: land a flow, settle its children one by one, read the counter.

Every action is real calls on the learner's connector; every caption is read
from the snapshot after it. The widget in ``composer.py`` only draws this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from echomq_teach import flows, jobs, snapshots
from echomq_teach.connector import Connector
from echomq_teach.flows import POLICIES, Flow
from echomq_teach.snapshots import Snapshot

from .model import Call, drop_queue, fresh_queue, reader_for, run_call

MAX_CHILDREN = 8

_POLICY_WORDS = {
    "fail": "the dead child failed the parent (policy fail)",
    "ignore": "the dead child counted as done, recorded in :unsuccessful (policy ignore)",
    "remove": "the dead child counted as done, with no record (policy remove)",
    "wait": "the dead child holds its count: the parent waits until it is reprocessed (policy wait)",
}


@dataclass
class FlowEvent:
    """One action on the flow: a label for the plot, the headline and caption, and the call."""

    label: str
    headline: str
    caption: str
    call: Call
    dependencies: int
    parent_state: str


@dataclass
class Tally:
    """Where the children stand, read from one snapshot."""

    done: list[str] = field(default_factory=list)  # completed: row deleted, result in :processed
    dead: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # pending, active or scheduled


class FlowRun:
    """One flow at a time on a fresh queue of its own; ``land`` starts a new one."""

    def __init__(
        self,
        conn: Connector,
        *,
        queue_prefix: str = "flow",
        reader: Connector | None = None,
        lease_ms: int = 30_000,
    ) -> None:
        self.conn = conn
        self.reader = reader or reader_for(conn)
        self.queue_prefix = queue_prefix
        self.lease_ms = lease_ms
        self.queue = fresh_queue(queue_prefix)
        self.flow: Flow | None = None
        self.policy = "fail"
        self.events: list[FlowEvent] = []

    # -- reading -----------------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.flow.child_ids) if self.flow else 0

    @property
    def parent_id(self) -> str | None:
        return self.flow.parent_id if self.flow else None

    def names(self) -> dict[str, str]:
        """Role tags for the set view: the parent and each child's number."""
        if not self.flow:
            return {}
        out = {self.flow.parent_id: "parent"}
        out.update({cid: f"child {i + 1}" for i, cid in enumerate(self.flow.child_ids)})
        return out

    def snapshot(self) -> Snapshot:
        return snapshots.snapshot(self.reader, self.queue)

    def tally(self, snap: Snapshot) -> Tally:
        t = Tally()
        if not self.flow:
            return t
        processed = snap.flow_hashes.get(f"{self.flow.parent_id}:processed", {})
        for cid in self.flow.child_ids:
            if cid in snap.sets["dead"]:
                t.dead.append(cid)
            elif cid in processed and cid not in snap.rows:
                t.done.append(cid)
            elif snap.where(cid):
                t.waiting.append(cid)
            else:
                t.done.append(cid)  # settled and gone (a detached child reprocessed and completed)
        return t

    def dependencies(self, snap: Snapshot) -> int:
        if not self.flow:
            return 0
        return snap.counters.get(f"{self.flow.parent_id}:dependencies", 0)

    def parent_state(self, snap: Snapshot) -> str:
        if not self.flow:
            return "none"
        row = snap.rows.get(self.flow.parent_id)
        return row.get("state", "?") if row else "done"

    def next_pending(self, snap: Snapshot) -> str | None:
        """The id the next claim pops: the oldest in pending."""
        return next(iter(sorted(snap.sets["pending"])), None)

    def can_complete(self, snap: Snapshot) -> bool:
        return bool(self.flow) and bool(snap.sets["pending"])

    def can_fail(self, snap: Snapshot) -> bool:
        head = self.next_pending(snap)
        return bool(self.flow) and head is not None and head != self.flow.parent_id  # type: ignore[union-attr]

    def can_reprocess(self, snap: Snapshot) -> bool:
        return bool(self.flow) and bool(self.tally(snap).dead)

    def caption(self, snap: Snapshot) -> str:
        """``0 of 3 children done → each @complete DECR'd the counter → :dependencies = 3, …``"""
        if not self.flow:
            return "no flow yet · choose N and land the flow"
        t, deps, state = self.tally(snap), self.dependencies(snap), self.parent_state(snap)
        head = f"{len(t.done)} of {self.n} children done"
        if t.dead:
            head += f", {len(t.dead)} dead"
        middle = "each @complete DECR'd the counter"
        if t.dead:
            middle += f"; {_POLICY_WORDS[self.policy]}"
        if state == "awaiting_children":
            where = "parent still awaiting_children"
        elif state == "pending":
            where = "the counter reached zero and released the parent to pending"
        elif state == "dead":
            where = "parent dead"
        elif state == "done":
            where = "the parent ran on its children's results and completed (its row is deleted)"
        else:
            where = f"parent {state}"
        return f"{head} → {middle} → :dependencies = {deps}, {where}."

    # -- acting --------------------------------------------------------------------------------------------
    def land(self, n: int, policy: str = "fail") -> FlowEvent:
        """A fresh queue, then flows.add with ``n`` children under ``policy``: one atomic @enqueue_flow."""
        if not 1 <= n <= MAX_CHILDREN:
            raise ValueError(f"children must be 1 to {MAX_CHILDREN}, got {n}")
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        old = self.queue
        self.queue = fresh_queue(self.queue_prefix)
        drop_queue(self.reader, old)
        self.events.clear()
        self.policy = policy
        children = [f"child {i + 1} of {n}" for i in range(n)]

        def act() -> Flow:
            self.flow = flows.add(self.conn, self.queue, "parent", children, policy=policy)
            return self.flow

        call = run_call(self.conn, self.reader, self.queue, act)
        if call.error is not None:
            raise call.error
        deps, state = self.dependencies(call.after), self.parent_state(call.after)
        headline = f"add/3 → {call.executor}: SET :dependencies = {deps}, parent held {state}"
        if n and policy:
            headline += f" · each child's parent_policy = {policy}"
        return self._event("land", headline, call)

    def _claim_then(self, settle: Callable[[jobs.Claimed], Any]) -> tuple[Call, str | None]:
        """One real call: claim/3 the head of pending, then ``settle`` it; answers the call and the id claimed."""
        holder: dict[str, str] = {}

        def act() -> Any:
            got = jobs.claim(self.conn, self.queue, self.lease_ms)
            if got is None:
                return None
            holder["id"] = got.id
            return settle(got)

        call = run_call(self.conn, self.reader, self.queue, act)
        if call.error is not None:
            raise call.error
        return call, holder.get("id")

    def _nothing_pending(self, call: Call) -> FlowEvent:
        return self._event("·", "claim/3 answered :empty — nothing pending", call)

    def complete_next(self, result: str | None = None) -> FlowEvent:
        """claim/3 the head of pending, then complete/5 it: a child's fan-in, or the released parent."""
        self._need_flow()
        values: dict[str, str] = {}

        def settle(got: jobs.Claimed) -> str:
            if got.id == self.parent_id:
                # the parent handler runs on its children's results: a pure read
                values.update(flows.children_values(self.conn, self.queue, got.id))
                value = f"{len(values)} child results"
            else:
                value = result if result is not None else f"result of {got.payload}"
            return jobs.complete(self.conn, self.queue, got.id, got.attempts, value)

        call, jid = self._claim_then(settle)
        if jid is None:
            return self._nothing_pending(call)
        if jid == self.parent_id:
            headline = f"the parent: claim/3, children_values/3 ({len(values)} results), complete/5 → {call.executor}"
            return self._event("parent", headline, call)
        k = self.flow.child_ids.index(jid) + 1  # type: ignore[union-attr]
        deps = self.dependencies(call.after)
        headline = f"child {k}: claim/3, complete/5 → {call.executor}: DECR :dependencies → {deps}"
        return self._event(f"c{k}", headline, call)

    def fail_next(self, reason: str = "boom") -> FlowEvent:
        """claim/3 the next child, then retry/7 at its last attempt: it dies, and its parent_policy acts."""
        self._need_flow()
        # max_attempts 1: this claim is always at least the first of its life, so the retry buries it
        # at once, in a reprocessed child's second life too
        call, jid = self._claim_then(lambda got: jobs.retry(self.conn, self.queue, got.id, got.attempts, reason, 1, 1))
        if jid is None:
            return self._nothing_pending(call)
        k = self.flow.child_ids.index(jid) + 1  # type: ignore[union-attr]
        deps, state = self.dependencies(call.after), self.parent_state(call.after)
        headline = (
            f"child {k} dies: claim/3, retry/7 at max attempts → {call.executor} reads parent_policy "
            f"{self.policy} → :dependencies = {deps}, parent {state}"
        )
        return self._event(f"✗c{k}", headline, call)

    def reprocess_dead(self) -> FlowEvent:
        """jobs.reprocess the first dead child: back to pending for a new life (its token runs on)."""
        self._need_flow()
        dead = self.tally(self.snapshot()).dead
        if not dead:
            raise ValueError("no dead child to reprocess")
        cid = dead[0]
        call = run_call(self.conn, self.reader, self.queue, lambda: jobs.reprocess(self.conn, self.queue, cid))
        if call.error is not None:
            raise call.error
        k = self.flow.child_ids.index(cid) + 1  # type: ignore[union-attr]
        parent = call.after.rows.get(cid, {}).get("parent")
        tail = "it still carries its parent" if parent else "it was detached at its death: a plain job now"
        return self._event(f"↺c{k}", f"child {k}: reprocess/3 → {call.executor}: back to pending · {tail}", call)

    def close(self) -> None:
        drop_queue(self.reader, self.queue)
        if self.reader is not self.conn:
            self.reader.close()

    # -- helpers ---------------------------------------------------------------------------------------------
    def _need_flow(self) -> None:
        if not self.flow:
            raise RuntimeError("land a flow first")

    def _event(self, label: str, headline: str, call: Call) -> FlowEvent:
        ev = FlowEvent(
            label,
            headline,
            self.caption(call.after),
            call,
            self.dependencies(call.after),
            self.parent_state(call.after),
        )
        self.events.append(ev)
        return ev
