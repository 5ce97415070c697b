"""Notebook 01's tour: one job down every way into each state, each on a queue of its own.

The notebook prints where each job landed and checks it against the course's
table; the walk itself (some sixty lines of real calls, every move taught in a
later notebook) lives here, so the cell a learner reads is the table, not the
plumbing. ``walk(conn)`` answers ``{way: (row state, [sets the id is in])}``
in the table's order. Each queue is emptied before its way is taken, so a
classroom node that kept an earlier run's queues gives the same answer.

Notebook 01 sends the learner here to read the calls: it lives beside the calls it
makes, in the core, and not in ``course/``, where the exercises' checks are.
"""

from __future__ import annotations

import time

from . import flows, jobs, snapshots, stalled
from .connector import Connector

#: the leases and the waits of the two "lapsed lease" ways: a wait clearly past the lease
SHORT_LEASE_MS = 20
PAST_IT_S = 0.03

Landing = tuple[str | None, list[str]]


class _Walk:
    def __init__(self, conn: Connector) -> None:
        self.conn = conn
        self.landed: dict[str, Landing] = {}

    def way_in(self, way: str) -> str:
        """A queue of its own for one way in, emptied first."""
        q = f"way-{len(self.landed)}"
        jobs.drop(self.conn, q)
        self.landed[way] = (None, [])
        return q

    def lands(self, way: str, q: str, job_id: str) -> None:
        s = snapshots.snapshot(self.conn, q)
        self.landed[way] = (s.state(job_id), s.where(job_id))

    def claimed(self, q: str, lease_ms: int = 30_000) -> jobs.Claimed:
        jobs.enqueue(self.conn, q, "a job")
        c = jobs.claim(self.conn, q, lease_ms)
        if c is None:
            raise RuntimeError(f"{q}: the job just enqueued was not handed out")
        return c


def walk(conn: Connector) -> dict[str, Landing]:
    """Take one job down each way in; answers where each landed (row state, sets), in the table's order."""
    w = _Walk(conn)
    q = w.way_in("enqueue")
    w.lands("enqueue", q, jobs.enqueue(conn, q, "a job"))
    q = w.way_in("claim")
    w.lands("claim", q, w.claimed(q).id)

    q = w.way_in("retry below the cap")
    c = w.claimed(q)
    jobs.retry(conn, q, c.id, c.attempts, "once", delay_ms=60_000, max_attempts=2)
    w.lands("retry below the cap", q, c.id)
    q = w.way_in("promote")
    c = w.claimed(q)
    jobs.retry(conn, q, c.id, c.attempts, "once", delay_ms=1, max_attempts=2)
    time.sleep(0.01)  # past the 1 ms run-at
    jobs.promote(conn, q)
    w.lands("promote", q, c.id)
    q = w.way_in("retry at the cap")
    c = w.claimed(q)
    jobs.retry(conn, q, c.id, c.attempts, "hopeless", max_attempts=1)
    w.lands("retry at the cap", q, c.id)
    jobs.reprocess(conn, q, c.id)
    w.lands("reprocess", q, c.id)

    q = w.way_in("reap")
    c = w.claimed(q, SHORT_LEASE_MS)
    time.sleep(PAST_IT_S)
    jobs.reap(conn, q)
    w.lands("reap", q, c.id)
    q = w.way_in("stall sweep, below its cap")
    c = w.claimed(q, SHORT_LEASE_MS)
    time.sleep(PAST_IT_S)
    stalled.check(conn, q, max_stalled=1)
    w.lands("stall sweep, below its cap", q, c.id)
    again = jobs.claim(conn, q, SHORT_LEASE_MS)  # the same job stalls a second time: over a cap of 1
    if again is None or again.id != c.id:
        raise RuntimeError(f"{q}: the swept job was not handed out again")
    time.sleep(PAST_IT_S)
    stalled.check(conn, q, max_stalled=1)
    w.lands("stall sweep, over its cap", q, c.id)

    q = w.way_in("flow land: the parent")
    flow = flows.add(conn, q, "parent", ["child"])
    w.lands("flow land: the parent", q, flow.parent_id)
    w.lands("flow land: a child", q, flow.child_ids[0])
    c = jobs.claim(conn, q, 30_000)
    jobs.complete(conn, q, c.id, c.attempts, "done")
    w.lands("fan-in release: the last child completes", q, flow.parent_id)
    for policy in ("ignore", "remove", "fail"):
        way = f"a child dies under {policy}: the parent"
        q = w.way_in(way)
        flow = flows.add(conn, q, "parent", ["child"], policy=policy)
        c = jobs.claim(conn, q, 30_000)
        jobs.retry(conn, q, c.id, c.attempts, "broken", max_attempts=1)
        w.lands(way, q, flow.parent_id)
    return w.landed


def table(landed: dict[str, Landing]) -> str:
    """One line per way: the way, the row's state, the set it sits in."""
    return "\n".join(f"{way:<42} → state {state or 'none':<18} set {'/'.join(where) or 'none'}"
                     for way, (state, where) in landed.items())
