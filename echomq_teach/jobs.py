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
a refusal by the node               ``WrongState``, ``WireError``, ``BadInput``,
                                    ``DuplicateJob`` (by its ``EMQ…`` prefix)
=================================  =============================================

Each call's keys and arguments are built by its transition's builder
(``transitions``). A ``wire=6`` connector sends the native ``EMQ.*`` command
where a twin exists (claim, complete and retry of a job whose row names no
parent, the stall sweep); everything else, and every call on a ``wire=4``
connector, runs the script by EVALSHA (another script in a transition's place,
where the connector's ``ScriptSet`` says so). A refusal reads the same on both
executors: the node's ``EMQ…`` error mapped to the kit's exception, whichever
executor refused.

The fencing token is the row's ``attempts`` after a claim (D-5 in docs/decisions.md): it never
repeats while the row lives, across retries, reaps, stall sweeps and
reprocess. The fence cannot reach past the row: once a row is deleted
(completed, removed, trimmed), nothing on the node remembers its tokens, and
an id used again starts a new life whose first token is 1 again.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import redis

from . import ids as _ids
from . import transitions
from .connector import Connector
from .errors import BadInput, DuplicateJob, UnknownJob, WireError, WrongState
from .keyspace import check_queue, forbidden_in_key, job_key, queue_key
from .transitions import Call

OK = "ok"
STALE = "stale"
SCHEDULED = "scheduled"
DEAD = "dead"

# -- how a job's life ended: the ``outcome`` of its one entry on ``emq:{q}:stream:completions`` ---------
# One vocabulary for the scripts, the native commands, the checker and the floor (D-8 in docs/decisions.md).
# A recording call writes the entry in the same atomic step as the ending; ``@drop``, which deletes
# the stream itself, writes none.
COMPLETED = "completed"  # @complete / EMQ.COMPLETE: the handler's result, under ``result``
# DEAD: @retry / EMQ.FAIL at the cap, the handler's reason under ``error``
STALLED = "stalled"  # buried by the counted stall sweep (@stalled_check / EMQ.STALLED.CHECK), ``error`` "stalled"
CHILD_FAILED = "child_failed"  # a flow parent failed by a child's death (policy ``fail``), ``error`` naming the child
REMOVED = "removed"  # an operator's remove of a job that had not ended, ``error`` "removed while <state>"
OUTCOMES = (COMPLETED, DEAD, STALLED, CHILD_FAILED, REMOVED)
#: the outcomes that leave the row in the dead set (a reprocess may give it a new life)
DEATHS = (DEAD, STALLED, CHILD_FAILED)

DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_RETRY_DELAY_MS = 1_000
PROMOTE_LIMIT = 100
#: the most jobs one batch claim hands out (``claim_many``): a call's work stays bounded
MAX_BATCH = 1_000
#: the largest number any argument may be, on both executors: with it every deadline
#: (server now + a lease or delay) stays below 2^53, where a sorted-set score, a double,
#: stops holding integers exactly; the scripts and the native commands refuse above it too
MAX_NUMBER = 2**52


class Claimed(NamedTuple):
    """What a claim hands the worker: the id, the payload and the new attempts (the token)."""

    id: str
    payload: str
    attempts: int


# -- argument checks: each raises before anything is sent -------------------------------
def positive_int(name: str, value: object) -> int:
    """``value`` as an int from 1 to ``MAX_NUMBER``, or BadInput naming the argument."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_NUMBER:
        raise BadInput(f"{name} must be a positive integer at most 2^52 ({MAX_NUMBER}), got {value!r}")
    return value


def non_negative_int(name: str, value: object) -> int:
    """``value`` as an int from 0 to ``MAX_NUMBER``, or BadInput naming the argument."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_NUMBER:
        raise BadInput(f"{name} must be a non-negative integer at most 2^52 ({MAX_NUMBER}), got {value!r}")
    return value


def check_payload(payload: object) -> str | bytes:
    if not isinstance(payload, (str, bytes)):
        raise BadInput(f"payload must be str or bytes, got {type(payload).__name__}")
    return payload


def check_id(job_id: object) -> str:
    """A job id is one key segment: a non-empty str with no braces, colons, spaces or control characters."""
    if not isinstance(job_id, str) or not job_id:
        raise BadInput(f"job id must be a non-empty str, got {job_id!r}")
    if forbidden_in_key(job_id) or len(job_id.encode()) > 200:
        raise BadInput(
            f"job id {job_id!r} must be at most 200 bytes with no braces, colons, spaces or control characters"
        )
    return job_id


def check_token(token: object) -> int:
    return positive_int("token (the attempts a claim returned)", token)


def record_flag(record: object) -> list[str]:
    """The kit's record flag as a call's optional last argument: ``["1"]`` to record the ending, else none.

    Without it a call has the page's own shape (``@complete``'s five ARGV), and
    the scripts and ``EMQ.*`` commands read its absence as "not recorded".
    """
    if not isinstance(record, bool):
        raise BadInput(f"record must be True or False, got {record!r}")
    return ["1"] if record else []


_REFUSALS: dict[str, type[Exception]] = {
    "EMQDUP": DuplicateJob,
    "EMQSTATE": WrongState,
    "EMQWIRE": WireError,
    "EMQARG": BadInput,
    "EMQKEYS": BadInput,
}


def reply_error(exc: Exception) -> Exception:
    """Map a script's or a native command's refusal to the kit's exception, by its ``EMQ…`` prefix.

    Any other error (a server's own ``WRONGTYPE`` …) is answered as it came.
    """
    text = str(exc)
    kind = _REFUSALS.get(text.split(" ", 1)[0])
    return kind(text) if kind else exc


def send(conn: Connector, call: Call) -> Any:
    """One transition's call (``Connector.run``: its native command on wire 6, else its script); refusals mapped."""
    try:
        return conn.run(call)
    except redis.exceptions.ResponseError as exc:
        raise reply_error(exc) from exc


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
    """EchoMQ.Jobs.enqueue/5 → ``@enqueue``: write the row and the pending entry; answers the id.

    An id that has a row is refused (``DuplicateJob``). An id whose row was
    deleted (completed, removed, trimmed) is free again, and its new row starts
    a new life at attempts 0: its first claim's token is 1 again, so a late
    worker still holding a token from the old life could settle the new one.
    The fence (D-5 in docs/decisions.md) holds only while a row lives; ids minted by the kit do not
    repeat within one process, and across processes only by a very unlikely coincidence (the ledger's
    ``minted-ids-are-fresh``), so the limit concerns ids a caller chooses.
    """
    job_id, call = _enqueue_call(queue, payload, job_id)
    send(conn, call)
    return job_id


def _enqueue_call(queue: str, payload: object, job_id: str | None) -> tuple[str, Call]:
    """One ``@enqueue``'s id and call, every argument checked."""
    check_queue(queue)
    check_payload(payload)
    job_id = _ids.mint() if job_id is None else check_id(job_id)
    return job_id, transitions.enqueue(queue, job_id, payload)


def enqueue_many(conn: Connector, queue: str, payloads: list[str | bytes],
                 job_ids: list[str] | None = None) -> list[str | Exception]:
    """Many ``@enqueue`` calls in one pipeline (a batch): one round trip, each job its own atomic step.

    Every argument is checked before anything is sent. Answers, per job, its
    id, or the kit's exception when the node refused that one (a duplicate
    id): the others are enqueued all the same — a batch is not a transaction.
    """
    if not isinstance(payloads, list):
        raise BadInput(f"payloads must be a list, got {type(payloads).__name__}")
    if job_ids is not None and (not isinstance(job_ids, list) or len(job_ids) != len(payloads)):
        raise BadInput("job_ids must be a list as long as payloads")
    calls = [_enqueue_call(queue, p, None if job_ids is None else job_ids[i]) for i, p in enumerate(payloads)]
    if len({c[0] for c in calls}) != len(calls):
        raise BadInput("job_ids names one id twice")
    answers = conn.run_many([call for _, call in calls])
    return [reply_error(a) if isinstance(a, Exception) else c[0] for c, a in zip(calls, answers)]


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
    # EMQ.CLAIM on a wire 6 connector, else @claim2 by EVALSHA; a refusal raises the kit's error
    reply = send(conn, transitions.claim(queue, lease_ms))
    if not reply:
        return None  # nothing pending, or the head was a ghost
    job_id, payload, att = reply
    return Claimed(job_id, payload, int(att))


def claim_many(conn: Connector, queue: str, lease_ms: int, k: int) -> list[Claimed]:
    """The kit's batch claim → ``@claim_many`` (or ``EMQ.CLAIM.MANY`` on wire 6): up to ``k`` jobs, one call.

    Not on the course page (EchoMQ.Jobs has claim/3 only): k ``@claim2`` calls
    made as one atomic step. Each job gets its own token (its row's attempts,
    raised by one) and its own lease in the active set; a ghost head is popped
    and hands out nothing, as in ``@claim2``. The pause flag is read inside the
    call, on both executors: a paused queue answers ``[]``, and so does an
    empty one. ``k`` runs from 1 to ``MAX_BATCH``. What a batch costs: a worker
    that dies holding one strands up to ``k`` leases until recovery runs.
    """
    check_queue(queue)
    positive_int("lease_ms", lease_ms)
    check_batch(k)
    reply = send(conn, transitions.claim_many(queue, lease_ms, k))
    return [Claimed(job_id, payload, int(att)) for job_id, payload, att, _parent in reply]


def check_batch(k: object) -> int:
    """A batch size from 1 to ``MAX_BATCH``, or BadInput naming it."""
    if isinstance(k, bool) or not isinstance(k, int) or not 0 < k <= MAX_BATCH:
        raise BadInput(f"k (the batch size) must be an integer from 1 to {MAX_BATCH}, got {k!r}")
    return k


def _parent_of(conn: Connector, queue: str, job_id: str) -> str:
    """The row's ``parent`` field, read host-side so the script can declare the parent's keys.

    A row that names a parent always takes the script, on either wire: flows
    run only as scripts, and ``EMQ.COMPLETE``/``EMQ.FAIL`` refuse such a row.
    Whether the parent row still exists is the script's own check, made
    atomically with the settle (an operator may remove the parent at any time):
    a child of a removed parent settles as a plain job.
    """
    return conn.call("HGET", job_key(queue, job_id), "parent") or ""


def complete(
    conn: Connector, queue: str, job_id: str, token: int, result: str | bytes = "", *, record: bool = False
) -> str:
    """EchoMQ.Jobs.complete/5 → ``@complete`` (or ``EMQ.COMPLETE``): ``"ok"`` or ``"stale"``.

    A flow child declares its parent's keys, and the fan-in inside the script
    counts it once. ``record=True`` adds the settle to ``stream:completions``
    in the same atomic step (a sixth ARGV, ``1``); without it the call has the
    page's own shape: five ARGV, id, token, base, parent, result.
    """
    check_queue(queue)
    check_id(job_id)
    check_token(token)
    check_payload(result)
    record_flag(record)
    parent = _parent_of(conn, queue, job_id)
    reply = send(conn, transitions.complete(queue, job_id, token, result, parent, record=record))
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
    at the cap it lands in dead with its ``last_error``. The cap counts the
    claims of this life: ``attempts`` minus ``prior_attempts`` (set by
    ``reprocess``; absent, 0), so a reprocessed job gets its full count again.
    ``record=True`` adds a death to ``stream:completions`` in the same atomic
    step, and, when the dying job is a flow child whose policy fails its
    parent, the parent's ``child_failed`` entry after it.
    """
    check_queue(queue)
    check_id(job_id)
    check_token(token)
    positive_int("delay_ms", delay_ms)
    positive_int("max_attempts", max_attempts)
    record_flag(record)
    if not isinstance(reason, str):
        raise BadInput(f"reason must be a str, got {type(reason).__name__}")
    parent = _parent_of(conn, queue, job_id)
    reply = send(conn, transitions.retry(queue, job_id, token, reason, delay_ms, max_attempts, parent, record=record))
    return reply if reply in (SCHEDULED, DEAD) else STALE


def promote(conn: Connector, queue: str, limit: int = PROMOTE_LIMIT) -> list[str]:
    """EchoMQ.Jobs.promote/3 → ``@promote``: due schedule members back to pending."""
    check_queue(queue)
    positive_int("limit", limit)
    return list(send(conn, transitions.promote(queue, limit)))


def reap(conn: Connector, queue: str) -> list[str]:
    """EchoMQ.Jobs.reap/2 → ``@reap``: up to 100 lapsed leases back to pending (no native twin)."""
    check_queue(queue)
    return list(send(conn, transitions.reap(queue)))


# -- lifecycle controls ----------------------------------------------------------------------
def pause(conn: Connector, queue: str) -> bool:
    """EchoMQ.Jobs.pause/2 → ``@pause``: True when this call paused the queue."""
    return send(conn, transitions.pause(queue)) == 1


def resume(conn: Connector, queue: str) -> bool:
    """EchoMQ.Jobs.resume/2 → ``@resume``: True when this call resumed the queue."""
    return send(conn, transitions.resume(queue)) == 1


def reprocess(conn: Connector, queue: str, job_id: str) -> str:
    """EchoMQ.Jobs.reprocess/3 → ``@reprocess``: a dead job back to pending, for a new life.

    ``attempts`` is not reset: it is the fencing token's counter, and the next
    claim's token must be one no earlier claim had (D-5 in docs/decisions.md), so a worker from an
    earlier life that wakes up late is answered ``stale``. The row records
    ``prior_attempts`` (the attempts at this reprocess) instead, and ``retry``
    counts only the claims after it against ``max_attempts``: the job gets its
    full number of attempts again. The stall count and ``lease_epoch`` go;
    ``last_error`` stays as the record of why it died. The fence cannot cover
    an id whose row was deleted and enqueued again: see ``enqueue``.
    """
    check_queue(queue)
    require_row(conn, queue, job_id)
    send(conn, transitions.reprocess(queue, job_id))
    return OK


def remove(conn: Connector, queue: str, job_id: str, *, record: bool = False) -> bool:
    """EchoMQ.Jobs.remove/3 → ``@remove``: delete one job wherever it is; True if anything went.

    Removing a job that had not ended (pending, active, scheduled, or a flow
    parent awaiting its children) ends its life: ``record=True``, for a queue
    whose consumers record, adds its one ``removed`` entry to
    ``stream:completions`` in the same atomic step. A dead job had ended
    already (its entry, if any, was written when it died): it leaves no second.
    """
    check_queue(queue)
    check_id(job_id)
    record_flag(record)
    return send(conn, transitions.remove(queue, job_id, record=record)) == 1


def trim_dead(conn: Connector, queue: str, keep: int) -> list[str]:
    """EchoMQ.Jobs.trim_dead/3 → ``@trim_dead``: delete all but the newest ``keep`` dead jobs."""
    check_queue(queue)
    non_negative_int("keep", keep)
    return list(send(conn, transitions.trim_dead(queue, keep)))


def drop(conn: Connector, queue: str) -> int:
    """``@drop``: delete every key of the queue, answering how many went (EchoMQ.Jobs.drop/2).

    Not a transition: an operator's clean slate, e.g. at the top of a notebook
    re-run on a classroom node that keeps what an earlier run left. It deletes
    the completions stream itself, so it records nothing: the one way a job
    leaves a queue with no entry, by design (D-8 in docs/decisions.md).
    """
    check_queue(queue)
    return int(send(conn, transitions.drop(queue)))
