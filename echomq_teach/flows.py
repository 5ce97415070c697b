"""Flows: a parent job and a flat list of children (EchoMQ.Flows).

``add`` lands the whole flow in one atomic ``@enqueue_flow``: the children go
to pending, claimable at once; the parent is held out of every set (state
``awaiting_children``) with ``emq:{q}:job:<parent>:dependencies`` SET to N.
Each child's completion runs the fan-in inside ``@complete`` (DECR the
counter, record the result in ``:processed``, release the parent at zero).

The course page has the host write each child's ``parent_policy`` after the
land. The kit lands the policies inside ``@enqueue_flow`` instead, in the same
HSET as ``parent``: a child claimed and failed between the land and a host
write would otherwise be judged by the default policy.

The parent's ``:dependencies``, ``:processed`` and ``:unsuccessful`` live as
long as its row, so its handler reads ``children_values`` while it runs. When
the parent completes, ``@complete`` (or ``EMQ.COMPLETE``) gives the three keys
an expiry of ``FLOW_KEYS_TTL_S``: still readable for a while after, then gone.
Until they expire, the parent's id cannot land a new flow (``DuplicateJob``).

When a child dies (``retry`` at its max attempts), its ``parent_policy``
decides what happens to the parent (D-4 in docs/decisions.md):

==========  ===================================================================
policy      when the child dies
==========  ===================================================================
``fail``    the default: the parent goes to dead, its ``last_error`` naming the child
``ignore``  the failure is recorded in ``:unsuccessful`` and counts as done
``remove``  it counts as done, with no record
``wait``    nothing: the parent waits until the child is reprocessed and completes
==========  ===================================================================

Once a death has been counted against the parent (``fail``, ``ignore``,
``remove``), ``@retry`` detaches that child (its ``parent`` field goes), so
reprocessing it later runs it as a plain job and cannot count it twice.

Each land draws a number from the queue's counter ``emq:{q}:flows`` and
writes it as ``flow`` on the parent and every child. A child counts only
toward the flow it was landed with: after ``jobs.remove`` of a parent, a new
flow landed under the same id carries a later number, and a child of the old
flow that ends afterwards (completed, dead, or buried by the stall sweep)
counts toward neither; it settles as a plain job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from . import ids as _ids
from . import transitions
from .connector import Connector
from .errors import BadInput
from .jobs import check_id, check_payload, send
from .keyspace import check_queue, job_key

POLICIES = ("fail", "ignore", "remove", "wait")
DEFAULT_POLICY = "fail"

#: how long a completed parent's :dependencies, :processed and :unsuccessful stay readable
#: (seconds); the number is written into lua/complete.lua and native/emq_complete.c as well
FLOW_KEYS_TTL_S = 3600

Payload = str | bytes
#: a child (or the parent) is a payload, or an ``(id, payload)`` pair to choose the id
Spec = Payload | tuple[str, Payload]


class Flow(NamedTuple):
    """What ``add`` answers: the parent's id and the children's ids, in the order given."""

    parent_id: str
    child_ids: tuple[str, ...]


def _spec(what: str, spec: object) -> tuple[str, Payload]:
    """``(id, payload)`` for a payload (id minted here) or an ``(id, payload)`` pair."""
    if isinstance(spec, (str, bytes)):
        return _ids.mint(), spec
    if isinstance(spec, tuple) and len(spec) == 2:
        job_id, payload = spec
        try:
            check_id(job_id)
            check_payload(payload)
        except BadInput as exc:
            raise BadInput(f"{what}: {exc}") from None
        return job_id, payload
    raise BadInput(f"{what} must be a payload (str or bytes) or an (id, payload) tuple, got {type(spec).__name__}")


def _policies(policy: object, n: int) -> list[str]:
    """One policy per child: a single name for all, or a list with one name per child."""
    if isinstance(policy, str):
        names = [policy] * n
    elif isinstance(policy, Sequence) and not isinstance(policy, bytes):
        names = list(policy)
        if len(names) != n:
            raise BadInput(f"policy list has {len(names)} entries for {n} children: give one per child")
    else:
        raise BadInput(f"policy must be one of {POLICIES} or a list of them, got {type(policy).__name__}")
    for i, name in enumerate(names):
        if name not in POLICIES:
            raise BadInput(f"unknown policy {name!r} for child {i}: use one of {', '.join(POLICIES)}")
    return names


def add(
    conn: Connector,
    queue: str,
    parent: Spec,
    children: Sequence[Spec],
    policy: str | Sequence[str] = DEFAULT_POLICY,
) -> Flow:
    """EchoMQ.Flows.add/3 → ``@enqueue_flow``: land the parent and its children atomically.

    ``parent`` and each child are a payload (``str`` or ``bytes``; the id is
    minted) or an ``(id, payload)`` tuple. ``policy`` is one of ``POLICIES``
    for every child, or a list holding one per child. The parent is minted
    first, so once released it is the oldest id in pending.

    Each child's ``parent_policy`` (read only if that child dies) lands in the
    same script as the flow, so it is in force from the first instant a worker
    can claim the child. Every check runs before the first write: bad input
    raises ``BadInput``, an id that already exists raises ``DuplicateJob``,
    and nothing is written.
    """
    check_queue(queue)
    parent_id, parent_payload = _spec("parent", parent)
    if isinstance(children, (str, bytes)) or not isinstance(children, Sequence):
        raise BadInput(f"children must be a list of payloads or (id, payload) tuples, got {type(children).__name__}")
    if not children:
        raise BadInput("a flow needs at least one child: children is empty")
    kids = [_spec(f"child {i}", c) for i, c in enumerate(children)]
    seen: dict[str, int] = {}
    for i, (child_id, _) in enumerate(kids):
        if child_id == parent_id:
            raise BadInput(f"child {i} has the parent's own id {parent_id!r}: a job cannot wait on itself")
        if child_id in seen:
            raise BadInput(f"children {seen[child_id]} and {i} share the id {child_id!r}: each child needs its own")
        seen[child_id] = i
    policies = _policies(policy, len(kids))

    send(conn, transitions.enqueue_flow(queue, (parent_id, parent_payload), kids, policies))
    return Flow(parent_id, tuple(child_id for child_id, _ in kids))


def _parent_id(parent: str | Flow) -> str:
    return check_id(parent.parent_id if isinstance(parent, Flow) else parent)


def children_values(conn: Connector, queue: str, parent: str | Flow) -> dict[str, str]:
    """EchoMQ.Flows.children_values/3: HGETALL the parent's ``:processed`` (child id → result)."""
    check_queue(queue)
    return conn.call("HGETALL", job_key(queue, _parent_id(parent), "processed"))


def dependencies(conn: Connector, queue: str, parent: str | Flow) -> int:
    """EchoMQ.Flows.dependencies/3: GET the outstanding-child counter; 0 when the key is absent."""
    check_queue(queue)
    value = conn.call("GET", job_key(queue, _parent_id(parent), "dependencies"))
    return int(value) if value is not None else 0


def ignored_failures(conn: Connector, queue: str, parent: str | Flow) -> dict[str, str]:
    """EchoMQ.Flows.ignored_failures/3: HGETALL the parent's ``:unsuccessful`` (child id → error)."""
    check_queue(queue)
    return conn.call("HGETALL", job_key(queue, _parent_id(parent), "unsuccessful"))
