"""Plain-Python pieces every widget shares: trace capture, readers, waits, wording.

Nothing here imports ipywidgets, so the logic tests without a front end.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis

from echomq_teach import jobs, snapshots
from echomq_teach.connector import Connector, TraceEntry
from echomq_teach.keyspace import queue_key
from echomq_teach.nodes.node import Node
from echomq_teach.snapshots import Change, Snapshot

WAIT_LIMIT_S = 10.0  # a wait for the server clock never hangs a kernel


def as_connector(conn_or_node: Connector | Node) -> Connector:
    """A connector from either a connector or a node (``node.connector()``)."""
    if isinstance(conn_or_node, Node):
        return conn_or_node.connector()
    return conn_or_node


def reader_for(conn: Connector) -> Connector:
    """A second connector on the same node for the widgets' own reads.

    Snapshots then stay out of the learner's ``conn.trace``, which shows only
    what the lesson sent. A connector built without an address reads through itself.
    """
    if conn.address:
        return conn.fork()
    return conn


def fresh_queue(prefix: str) -> str:
    """A queue name nobody has used: a reset never sees an old run's keys."""
    return f"{prefix}-{secrets.token_hex(3)}"


# -- the trace: what one call sent ------------------------------------------------------------
class TraceMark:
    """Remembers the trace's last entry, so the entries a call added can be read back."""

    def __init__(self, conn: Connector) -> None:
        self.conn = conn
        self.last = conn.trace[-1] if conn.trace else None

    def since(self) -> list[TraceEntry]:
        entries = list(self.conn.trace)
        if self.last is None:
            return entries
        # identity, not equality: two identical commands are still two entries
        for i in range(len(entries) - 1, -1, -1):
            if entries[i] is self.last:
                return entries[i + 1 :]
        return entries  # the mark rolled off a full trace: everything left is new


@dataclass
class Call:
    """One real call: its reply, the commands it sent, and the queue before and after."""

    reply: Any
    entries: list[TraceEntry]
    before: Snapshot
    after: Snapshot
    changes: list[Change] = field(default_factory=list)
    error: Exception | None = None

    @property
    def wrote_nothing(self) -> bool:
        return self.before.state_only() == self.after.state_only()

    @property
    def executor(self) -> str:
        """``@claim2`` for a script, ``EMQ.CLAIM`` for a native command, from the last transition sent."""
        for e in reversed(self.entries):
            if e.script:
                return e.script
            if str(e.args[0]).upper().startswith("EMQ."):
                return str(e.args[0]).upper()
        return ""


def run_call(
    conn: Connector, reader: Connector, queue: str, fn: Callable[[], Any], before: Snapshot | None = None
) -> Call:
    """Run ``fn`` (one real call on ``conn``) between two snapshots read through ``reader``."""
    before = before if before is not None else snapshots.snapshot(reader, queue)
    mark = TraceMark(conn)
    reply: Any = None
    error: Exception | None = None
    try:
        reply = fn()
    except Exception as exc:  # noqa: BLE001 - shown to the learner, and kept on the Call
        error = exc
    after = snapshots.snapshot(reader, queue)
    return Call(reply, mark.since(), before, after, snapshots.diff(before, after), error)


# -- waiting on the server clock (never on the host's) -------------------------------------------
def server_ms(reader: Connector) -> int:
    sec, usec = reader.client.time()
    return int(sec) * 1000 + int(usec) // 1000


def wait_until_past(reader: Connector, key: str, member: str, strict: bool) -> int:
    """Sleep until the server clock passes the member's score; answers the server now.

    ``strict`` waits for now > score (reap's test), else now >= score (promote's).
    """
    score = reader.client.zscore(key, member)
    if score is None:
        return server_ms(reader)
    target = int(score) + (1 if strict else 0)
    deadline = time.monotonic() + WAIT_LIMIT_S
    while True:
        now = server_ms(reader)
        if now >= target:
            return now
        if time.monotonic() > deadline:
            raise TimeoutError(f"the server clock did not reach {target} within {WAIT_LIMIT_S:.0f} s")
        time.sleep(min(0.05, (target - now) / 1000 + 0.001))


def wait_due(reader: Connector, queue: str, job_id: str) -> int:
    """Until promote would find the job due (run-at ≤ now)."""
    return wait_until_past(reader, queue_key(queue, "schedule"), job_id, strict=False)


def wait_lapsed(reader: Connector, queue: str, job_id: str) -> int:
    """Until reap would find the lease lapsed (deadline < now)."""
    return wait_until_past(reader, queue_key(queue, "active"), job_id, strict=True)


# -- cleanup of a widget's own queues --------------------------------------------------------------
def drop_queue(reader: Connector, queue: str) -> None:
    """Delete every key a widget's run left in its own queue (never a learner's queue).

    Best effort: it also runs when a widget is garbage-collected, perhaps after
    its node has stopped, and a cleanup must never raise there.
    """
    try:
        snap = snapshots.snapshot(reader, queue)
        for job_id in snap.ids() | {k.split(":")[0] for k in snap.counters}:
            jobs.remove(reader, queue, job_id)
        reader.client.delete(queue_key(queue, "metrics:completed"), queue_key(queue, "stream:completions"))
    except (redis.exceptions.RedisError, OSError):
        pass


# -- wording -----------------------------------------------------------------------------------------
def ms(n: int, sign: bool = True) -> str:
    """``+29 998 ms``: a signed count with a space between thousands, as the page prints it."""
    text = f"{abs(n):,}".replace(",", " ")
    if sign:
        text = ("+" if n >= 0 else "−") + text
    return f"{text} ms"


def when(snap: Snapshot, set_name: str, job_id: str) -> str:
    """What a set's score means for one id, relative to server now."""
    if set_name == "pending":
        return f"score {snap.sets['pending'][job_id]}"
    rel = snap.relative(set_name, job_id)
    if set_name == "active":
        return f"deadline in {ms(rel)}" if rel >= 0 else f"deadline {ms(rel)} · lapsed"
    if set_name == "schedule":
        return f"run-at in {ms(rel)}" if rel > 0 else f"run-at {ms(rel)} · due"
    return f"died {ms(-rel, sign=False)} ago"


def row_words(snap: Snapshot, job_id: str, extra: tuple[str, ...] = ()) -> str:
    """``row state pending, attempts 0`` (plus chosen fields), or that the row is gone."""
    row = snap.rows.get(job_id)
    if row is None:
        return "its row is deleted"
    parts = [f"row state {row.get('state')}", f"attempts {row.get('attempts', '0')}"]
    parts += [f"{f} {row[f]}" for f in extra if f in row]
    return ", ".join(parts)


def movement(before: Snapshot, after: Snapshot, job_id: str) -> str:
    """Where the call moved the id, in the page's words, with its score read against server now."""
    was, now = before.where(job_id), after.where(job_id)
    here = f"{now[0]}, {when(after, now[0], job_id)}" if now else ""
    if not was and now:
        return f"{job_id} is held in {now[0]}" if now[0] == "pending" else f"{job_id} is held in {here}"
    if was and now and was == now:
        return f"{job_id} stays in {here}"
    if was and now:
        return f"{job_id} moved {was[0]} → {here}"
    if was:
        return f"{job_id} left {was[0]}"
    return f"{job_id} is in no set"
