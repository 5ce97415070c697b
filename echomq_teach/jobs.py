"""The lifecycle: one atomic script per transition over four sorted sets (EchoMQ.Jobs).

Where the course's Elixir answers tuples, these functions answer Python values:

=================================  =============================================
Elixir                              Python
=================================  =============================================
``{:ok, id}`` (enqueue/5)           the id, a ``str``
``:empty`` (claim/3)                ``None``
``{:ok, {id, payload, att}}``       ``Claimed(id, payload, attempts)``
``:ok`` (complete/5)                ``"ok"`` (``jobs.OK``)
``{:error, :stale}``                ``"stale"`` (``jobs.STALE``)
``{:ok, :scheduled}`` (retry/7)     ``"scheduled"`` (``jobs.SCHEDULED``)
``{:ok, :dead}`` (retry/7)          ``"dead"`` (``jobs.DEAD``)
``{:ok, ids}`` (promote/3, reap/2)  a ``list`` of ids
bad input                           ``BadInput`` raised before any call
=================================  =============================================

A ``wire=6`` connector sends the native ``EMQ.*`` command where a twin exists
(claim, complete and retry of a job that is not a flow child); everything else,
and every call on a ``wire=4`` connector, runs the script by EVALSHA.
"""

from __future__ import annotations

from typing import NamedTuple

from . import ids as _ids
from .connector import Connector
from .errors import BadInput, DuplicateJob, UnknownJob, WrongState
from .keyspace import base, check_queue, job_key, queue_key

OK = "ok"
STALE = "stale"
SCHEDULED = "scheduled"
DEAD = "dead"

DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_RETRY_DELAY_MS = 1_000
PROMOTE_LIMIT = 100


class Claimed(NamedTuple):
    """What a claim hands the worker: the id, the payload and the new attempts (the token)."""

    id: str
    payload: str
    attempts: int


# -- argument checks: each raises before anything is sent -------------------------------
def positive_int(name: str, value: object) -> int:
    """``value`` as a positive int, or BadInput naming the argument."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise BadInput(f"{name} must be a positive integer, got {value!r}")
    return value


def non_negative_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadInput(f"{name} must be a non-negative integer, got {value!r}")
    return value


def check_payload(payload: object) -> str | bytes:
    if not isinstance(payload, (str, bytes)):
        raise BadInput(f"payload must be str or bytes, got {type(payload).__name__}")
    return payload


def check_id(job_id: object) -> str:
    """A job id is one key segment: a non-empty str with no braces, colons or whitespace."""
    if not isinstance(job_id, str) or not job_id:
        raise BadInput(f"job id must be a non-empty str, got {job_id!r}")
    if any(c in "{}:" or c.isspace() for c in job_id) or len(job_id.encode()) > 200:
        raise BadInput(f"job id {job_id!r} must be at most 200 bytes with no braces, colons or whitespace")
    return job_id


def check_token(token: object) -> int:
    return positive_int("token (the attempts a claim returned)", token)


def reply_error(exc: Exception) -> Exception:
    """Map a script's refusal to the kit's exception."""
    text = str(exc)
    if text.startswith("EMQDUP"):
        return DuplicateJob(text)
    if text.startswith("EMQSTATE"):
        return WrongState(text)
    return exc


def row(conn: Connector, queue: str, job_id: str) -> dict[str, str]:
    """The job's row (HGETALL); an empty dict when it has none."""
    return conn.call("HGETALL", job_key(queue, check_id(job_id)))


def require_row(conn: Connector, queue: str, job_id: str) -> dict[str, str]:
    r = row(conn, queue, job_id)
    if not r:
        raise UnknownJob(f"no job {job_id!r} in queue {queue!r}")
    return r


# -- the transitions -------------------------------------------------------------------------
def enqueue(conn: Connector, queue: str, payload: str | bytes, job_id: str | None = None) -> str:
    """EchoMQ.Jobs.enqueue/5 → ``@enqueue``: write the row and the pending entry; answers the id."""
    check_queue(queue)
    check_payload(payload)
    job_id = _ids.mint() if job_id is None else check_id(job_id)
    try:
        conn.eval("enqueue", [queue_key(queue, "pending"), job_key(queue, job_id)], [job_id, payload])
    except Exception as exc:  # noqa: BLE001 - re-raised as the kit's error
        raise reply_error(exc) from exc
    return job_id


def paused(conn: Connector, queue: str) -> bool:
    """EchoMQ.Jobs.paused?/2: one round trip reading the flag."""
    return conn.call("EXISTS", queue_key(queue, "paused")) == 1


def claim(conn: Connector, queue: str, lease_ms: int) -> Claimed | None:
    """EchoMQ.Jobs.claim/3 → ``@claim2`` (or ``EMQ.CLAIM`` on wire 6); ``None`` is ``:empty``.

    The pause flag is read host-side first, in its own round trip: a paused
    queue answers ``None`` and the script is never sent.
    """
    check_queue(queue)
    positive_int("lease_ms", lease_ms)
    if paused(conn, queue):
        return None
    keys = [queue_key(queue, "pending"), queue_key(queue, "active"), queue_key(queue, "")]
    argv = [str(lease_ms)]
    if conn.native:
        reply = conn.call("EMQ.CLAIM", len(keys), *keys, *argv)
    else:
        reply = conn.eval("claim2", keys, argv)
    if not reply:
        return None  # nothing pending, or the head was a ghost
    job_id, payload, att = reply
    return Claimed(job_id, payload, int(att))


def _parent_of(conn: Connector, queue: str, job_id: str) -> tuple[str, bool]:
    """The parent to declare ("" for none), and whether the row is a flow child at all.

    A child of a removed parent declares none, yet stays a flow child: the
    native commands refuse a row carrying ``parent``, so it settles by script.
    """
    # read host-side, so the script can declare the parent's keys
    parent = conn.call("HGET", job_key(queue, job_id), "parent") or ""
    if parent and not conn.call("EXISTS", job_key(queue, parent)):
        # an operator removed the parent: settle as a plain job, or the fan-in's release
        # would write a ghost row into pending
        return "", True
    return parent, bool(parent)


def complete(
    conn: Connector, queue: str, job_id: str, token: int, result: str | bytes = "", *, record: bool = False
) -> str:
    """EchoMQ.Jobs.complete/5 → ``@complete`` (or ``EMQ.COMPLETE``): ``"ok"`` or ``"stale"``.

    A flow child declares its parent's keys, and the fan-in inside the script
    counts it once. ``record=True`` adds the settle to ``stream:completions``
    in the same atomic step.
    """
    check_queue(queue)
    check_id(job_id)
    check_token(token)
    check_payload(result)
    b = base(queue)
    parent, flow_child = _parent_of(conn, queue, job_id)
    keys = [queue_key(queue, "active"), job_key(queue, job_id)]
    if parent:
        keys += [job_key(queue, parent, "dependencies"), job_key(queue, parent, "processed"), job_key(queue, parent)]
    argv = [job_id, str(token), b, parent, result, "1" if record else "0"]
    if conn.native and not flow_child:
        reply = conn.call("EMQ.COMPLETE", len(keys), *keys, *argv)
    else:
        reply = conn.eval("complete", keys, argv)
    return OK if reply == 1 else STALE


def retry(
    conn: Connector,
    queue: str,
    job_id: str,
    token: int,
    reason: str,
    delay_ms: int = DEFAULT_RETRY_DELAY_MS,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    *,
    record: bool = False,
) -> str:
    """EchoMQ.Jobs.retry/7 → ``@retry`` (or ``EMQ.FAIL``): ``"scheduled"``, ``"dead"`` or ``"stale"``.

    Below ``max_attempts`` the job waits on the schedule set until now + delay;
    at the cap it lands in dead with its ``last_error``.
    """
    check_queue(queue)
    check_id(job_id)
    check_token(token)
    positive_int("delay_ms", delay_ms)
    positive_int("max_attempts", max_attempts)
    if not isinstance(reason, str):
        raise BadInput(f"reason must be a str, got {type(reason).__name__}")
    b = base(queue)
    parent, flow_child = _parent_of(conn, queue, job_id)
    keys = [queue_key(queue, "active"), queue_key(queue, "schedule"), queue_key(queue, "dead"), job_key(queue, job_id)]
    if parent:
        keys += [job_key(queue, parent, "dependencies"), job_key(queue, parent, "unsuccessful"), job_key(queue, parent)]
    argv = [job_id, str(token), str(delay_ms), str(max_attempts), reason, b, parent, "1" if record else "0"]
    if conn.native and not flow_child:
        reply = conn.call("EMQ.FAIL", len(keys), *keys, *argv)
    else:
        reply = conn.eval("retry", keys, argv)
    return reply if reply in (SCHEDULED, DEAD) else STALE


def promote(conn: Connector, queue: str, limit: int = PROMOTE_LIMIT) -> list[str]:
    """EchoMQ.Jobs.promote/3 → ``@promote``: due schedule members back to pending."""
    check_queue(queue)
    positive_int("limit", limit)
    keys = [queue_key(queue, "schedule"), queue_key(queue, "pending"), queue_key(queue, "")]
    return list(conn.eval("promote", keys, [str(limit)]))


def reap(conn: Connector, queue: str) -> list[str]:
    """EchoMQ.Jobs.reap/2 → ``@reap``: up to 100 lapsed leases back to pending (no native twin)."""
    check_queue(queue)
    keys = [queue_key(queue, "active"), queue_key(queue, "pending"), queue_key(queue, "")]
    return list(conn.eval("reap", keys, []))


# -- lifecycle controls ----------------------------------------------------------------------
def pause(conn: Connector, queue: str) -> bool:
    """EchoMQ.Jobs.pause/2 → ``@pause``: True when this call paused the queue."""
    return conn.eval("pause", [queue_key(queue, "paused")], []) == 1


def resume(conn: Connector, queue: str) -> bool:
    """EchoMQ.Jobs.resume/2 → ``@resume``: True when this call resumed the queue."""
    return conn.eval("resume", [queue_key(queue, "paused")], []) == 1


def reprocess(conn: Connector, queue: str, job_id: str) -> str:
    """EchoMQ.Jobs.reprocess/3 → ``@reprocess``: a dead job back to pending, attempts reset."""
    require_row(conn, queue, job_id)
    keys = [queue_key(queue, "dead"), queue_key(queue, "pending"), job_key(queue, job_id)]
    try:
        conn.eval("reprocess", keys, [job_id])
    except Exception as exc:  # noqa: BLE001
        raise reply_error(exc) from exc
    return OK


def remove(conn: Connector, queue: str, job_id: str) -> bool:
    """EchoMQ.Jobs.remove/3 → ``@remove``: delete one job wherever it is; True if anything went."""
    check_queue(queue)
    check_id(job_id)
    keys = [queue_key(queue, s) for s in ("pending", "active", "schedule", "dead")]
    keys += [job_key(queue, job_id)] + [
        job_key(queue, job_id, s) for s in ("dependencies", "processed", "unsuccessful")
    ]
    try:
        return conn.eval("remove", keys, [job_id]) == 1
    except Exception as exc:  # noqa: BLE001 - re-raised as the kit's error
        raise reply_error(exc) from exc


def trim_dead(conn: Connector, queue: str, keep: int) -> list[str]:
    """EchoMQ.Jobs.trim_dead/3 → ``@trim_dead``: delete all but the newest ``keep`` dead jobs."""
    check_queue(queue)
    non_negative_int("keep", keep)
    return list(conn.eval("trim_dead", [queue_key(queue, "dead"), queue_key(queue, "")], [str(keep)]))


def drop(conn: Connector, queue: str) -> int:
    """``@drop``: delete every key of the queue, answering how many went (EchoMQ.Jobs.drop/2).

    Not a transition: an operator's clean slate, e.g. at the top of a notebook
    re-run on a classroom node that keeps what an earlier run left.
    """
    check_queue(queue)
    return int(conn.eval("drop", [queue_key(queue, "")], []))
