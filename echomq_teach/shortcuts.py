"""The shortcuts a Pool's consumers take around the page's beat (docs/decisions.md, "Pool shortcuts").

A standalone ``Consumer`` beats as the course page does: promote, the recovery
leg, claim/3 (its host-side pause read, then the claim), the handler, then the
settle (its host-side parent read, then complete or retry). In a ``Pool`` the
Metronome's tick runs promote and recovery for every consumer, and each
consumer may take the shortcuts below. Each one is named on every trace entry
it shapes, so the trace still shows what was sent:

``native-reads`` (wire 6 only)
    no host-side read that the native command makes for itself: ``EMQ.CLAIM``
    reads the pause flag inside, and ``EMQ.COMPLETE``/``EMQ.FAIL`` refuse a flow
    child (a row naming a ``parent``) before any write. A settle refused that
    way falls back to the script path (the parent read, then the script), and
    those entries are named ``native-reads: fallback``.
``pipeline``
    the settle and the next claim in one round trip: the node runs the claim
    right after the settle, as it would one round trip later. Where the host
    still reads (wire 4), the parent read and the next claim's pause read share
    the round trip before.
``hiredis``
    the hiredis C parser on the consumers' links (a connector made with
    ``parser="hiredis"``): the same replies, parsed in C.

And a size rather than a name: ``batch=k`` (a Pool's, with ``pipeline``) has
each consumer claim up to k jobs in one call, the kit's own ``@claim_many`` or
``EMQ.CLAIM.MANY`` (``jobs.claim_many``), which reads the pause flag inside and
answers each job's parent with it, so no host read is left on either wire; the
consumer runs the batch's handlers one after another and sends every settle
(each the page's own ``@complete``/``@retry`` or its native twin) and the next
batch claim in one round trip: ``pipeline i/n`` on each.

``tests/queue/test_shortcuts.py`` runs the same work with and without each one and
compares the end states.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import redis

from . import transitions
from .connector import NodeConnector, TraceEntry
from .errors import BadInput, EchoMQError
from .jobs import DEAD, OK, SCHEDULED, STALE, Claimed, check_id, check_token, complete, record_flag, reply_error, retry
from .keyspace import base

NATIVE_READS = "native-reads"
PIPELINE = "pipeline"
HIREDIS = "hiredis"
#: what a consumer may take; a pool adds the parser of its consumers' links
CONSUMER_SHORTCUTS = (NATIVE_READS, PIPELINE)
POOL_SHORTCUTS = (NATIVE_READS, PIPELINE, HIREDIS)
#: the native settles' refusal of a flow child (native/emq_complete.c, native/emq_fail.c): nothing was written
FLOW_REFUSALS = ("EMQSTATE complete flow not native", "EMQSTATE fail flow not native")

_PAUSE_INSIDE = "native-reads: pause read in EMQ.CLAIM"
_BATCH = "batch: pause and parent read in the claim"
_FLOW_INSIDE = "native-reads: flow check in the command"
_FALLBACK = "native-reads: fallback"


def check_shortcuts(value: object, allowed: tuple[str, ...]) -> frozenset[str]:
    """``True`` (all of ``allowed``), ``False``/``None`` (none), or names from ``allowed``; else BadInput."""
    if value is True:
        return frozenset(allowed)
    if value is False or value is None:
        return frozenset()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise BadInput(f"shortcuts must be True, False or a list of names from {list(allowed)}, got {value!r}")
    names = list(value)
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise BadInput(f"unknown shortcut {unknown[0]!r}: the shortcuts here are {list(allowed)}")
    return frozenset(names)


class Settled(NamedTuple):
    """What one settle (and the claim sent with it) came back with.

    ``outcome`` is ``None`` when the settle was refused (``error``); ``next`` is
    the job the pipelined claim took (``None``: nothing claimed, or not asked);
    ``claim_error`` is that claim's refusal, which the consumer raises where the
    plain path would have: at its next beat.
    """

    outcome: str | None
    error: Exception | None
    next: Claimed | None
    claim_error: Exception | None


class BatchSettled(NamedTuple):
    """What a batch's settles (and the batch claim sent with them) came back with.

    ``outcomes`` holds, job by job in the batch's order, the outcome or
    ``None`` where that settle was refused, and ``errors`` the refusal or
    ``None`` (one refused, the others settled all the same: each settle is
    its own call); ``next`` the jobs the pipelined batch claim took;
    ``claim_error`` its refusal, raised by the consumer at its next beat.
    """

    outcomes: list[str | None]
    errors: list[Exception | None]
    next: list[Claimed]
    claim_error: Exception | None

    @property
    def error(self) -> Exception | None:
        """The first settle refused, if any: what the consumer raises."""
        return next((e for e in self.errors if e is not None), None)


def _claimed(reply: object) -> Claimed | None:
    if not reply:
        return None  # nothing pending, a paused queue (EMQ.CLAIM), or a ghost head
    job_id, payload, att = reply  # type: ignore[misc]
    return Claimed(job_id, payload, int(att))


class Lane:
    """One consumer's claims and settles with its shortcuts, on one connector and one queue.

    Each call is its transition's (``transitions``), made ready by the
    connector (``NodeConnector.entry``: the native command on wire 6, or the
    script standing in its place); every command goes through
    ``NodeConnector.send_many`` (one socket, each entry traced and named).
    """

    def __init__(
        self,
        conn: NodeConnector,
        queue: str,
        shortcuts: frozenset[str],
        *,
        lease_ms: int,
        retry_delay_ms: int,
        max_attempts: int,
        record: bool,
    ) -> None:
        self.conn, self.queue = conn, queue
        self.pipeline = PIPELINE in shortcuts
        # the native commands read for themselves only on wire 6, and only the kit's: on wire 4, or where a
        # script stands in the place of claim, complete or retry (``script_set``), the host reads
        self.native_reads = (NATIVE_READS in shortcuts and conn.native
                             and not conn.script_set.replaces("claim", "complete", "retry"))
        record_flag(record)
        self.record = record
        self.base = base(queue)
        self.paused_key = self.base + "paused"
        self.lease_ms, self.retry_delay_ms, self.max_attempts = lease_ms, retry_delay_ms, max_attempts
        #: the parent of each job a batch claim handed out and no settle has taken yet ('' for none)
        self.parents: dict[str, str] = {}

    # -- the claim -------------------------------------------------------------------------------
    def claim_entry(self) -> TraceEntry:
        e = self.conn.entry(transitions.claim(self.queue, self.lease_ms))
        if self.native_reads:
            e.shortcuts = (_PAUSE_INSIDE,)
        return e

    def claim_many_entry(self, k: int) -> TraceEntry:
        """The batch claim of up to ``k`` jobs: ``EMQ.CLAIM.MANY`` on wire 6, else ``@claim_many``."""
        e = self.conn.entry(transitions.claim_many(self.queue, self.lease_ms, k))
        e.shortcuts = (_BATCH,)
        return e

    def _batch(self, reply: object) -> list[Claimed]:
        """A batch claim's reply as jobs; each one's parent kept for its settle ('' for none)."""
        out = []
        for job_id, payload, att, parent in reply:  # type: ignore[attr-defined]
            self.parents[job_id] = parent
            out.append(Claimed(job_id, payload, int(att)))
        return out

    def claim_many(self, k: int) -> list[Claimed]:
        """Up to ``k`` jobs in one call (``jobs.claim_many``): the pause and parent reads are the call's own."""
        reply = self.conn.send_many([self.claim_many_entry(k)])[0]
        if isinstance(reply, Exception):
            raise reply_error(reply) from reply
        return self._batch(reply)

    def settle_many(self, answers: list[tuple[Claimed, bool, str | bytes]], claim_next: int) -> BatchSettled:
        """Every settle of a batch, and (``claim_next`` > 0) the next batch claim, in one round trip.

        ``answers`` holds (job, ok, value) per job, as ``settle`` takes them; the
        jobs came from this lane's batch claim, which answered each one's parent,
        so no read precedes the settles. Each settle is the page's own call (or its
        native twin) and atomic alone: one refused does not stop the others.
        """
        entries = []
        for job, ok, value in answers:
            entries.append(self._settle_entry(job, ok, value, self.parents.pop(job.id, "")))
        if claim_next:
            entries.append(self.claim_many_entry(claim_next))
        replies = self.conn.send_many(entries)
        outcomes: list[str | None] = []
        errors: list[Exception | None] = []
        for (job, ok, value), reply in zip(answers, replies):
            outcome, error = self._outcome(reply, job, ok, value)
            outcomes.append(outcome)
            errors.append(error)
        nxt: list[Claimed] = []
        claim_error: Exception | None = None
        if claim_next:
            last = replies[-1]
            if isinstance(last, Exception):
                claim_error = reply_error(last)
            else:
                nxt = self._batch(last)
        return BatchSettled(outcomes, errors, nxt, claim_error)

    def claim(self) -> Claimed | None:
        """claim/3 on this lane: with ``native-reads`` the one command; else the pause read, then the claim."""
        if not self.native_reads:
            paused = self._read([self.conn.command("EXISTS", self.paused_key)])[0]
            if paused == 1:
                return None
        reply = self.conn.send_many([self.claim_entry()])[0]
        if isinstance(reply, Exception):
            raise reply_error(reply) from reply
        return _claimed(reply)

    # -- the settle ------------------------------------------------------------------------------
    def settle(self, job: Claimed, ok: bool, value: str | bytes, claim_next: bool) -> Settled:
        """complete (``ok``, ``value`` the result) or retry (``value`` the reason), then, if asked, the next claim.

        With ``pipeline`` the claim rides in the settle's round trip; without it,
        it follows on its own. A pause read that finds the queue paused sends no
        claim, as claim/3 would not.
        """
        check_id(job.id)
        check_token(job.attempts)
        row = self.base + "job:" + job.id
        parent, paused = "", False
        pipelined = claim_next and self.pipeline
        if not self.native_reads:
            reads = [self.conn.command("HGET", row, "parent")]
            if pipelined:
                # the next claim's pause read, moved before the settle: @complete and @retry never touch the flag
                reads.append(self.conn.command("EXISTS", self.paused_key))
            got = self._read(reads)
            parent = got[0] or ""
            paused = pipelined and got[1] == 1
        batch = [self._settle_entry(job, ok, value, parent)]
        if pipelined and not paused:
            batch.append(self.claim_entry())
        replies = self.conn.send_many(batch)
        outcome, error = self._outcome(replies[0], job, ok, value)
        nxt: Claimed | None = None
        claim_error: Exception | None = None
        if len(replies) > 1:
            if isinstance(replies[1], Exception):
                claim_error = reply_error(replies[1])
            else:
                nxt = _claimed(replies[1])
        elif claim_next and not pipelined and error is None:
            try:
                nxt = self.claim()
            except (redis.exceptions.ResponseError, EchoMQError) as exc:  # a refusal, mapped as claim/3 maps it
                claim_error = exc
        return Settled(outcome, error, nxt, claim_error)

    def _settle_entry(self, job: Claimed, ok: bool, value: str | bytes, parent: str) -> TraceEntry:
        # a flow child (``parent``) takes the script on either wire: its call names no native command
        if ok:
            call = transitions.complete(self.queue, job.id, job.attempts, value, parent, record=self.record)
        else:
            call = transitions.retry(self.queue, job.id, job.attempts, value, self.retry_delay_ms, self.max_attempts,
                                     parent, record=self.record)
        e = self.conn.entry(call)
        if self.native_reads and e.script is None:
            e.shortcuts = (_FLOW_INSIDE,)
        return e

    def _outcome(
        self, reply: object, job: Claimed, ok: bool, value: str | bytes
    ) -> tuple[str | None, Exception | None]:
        if isinstance(reply, redis.exceptions.ResponseError):
            if not (self.native_reads and str(reply).startswith(FLOW_REFUSALS)):
                return None, reply_error(reply)
            # a flow child: refused before any write, so the script path settles it as the plain beat would
            try:
                with self.conn.tagged(_FALLBACK):
                    if ok:
                        return complete(self.conn, self.queue, job.id, job.attempts, value, record=self.record), None
                    return retry(
                        self.conn, self.queue, job.id, job.attempts, str(value),
                        self.retry_delay_ms, self.max_attempts, record=self.record,
                    ), None
            except (redis.exceptions.ResponseError, EchoMQError) as exc:
                return None, exc
        if ok:
            return (OK if reply == 1 else STALE), None
        return (reply if reply in (SCHEDULED, DEAD) else STALE), None  # type: ignore[return-value]

    def _read(self, entries: list[TraceEntry]) -> list[object]:
        got = self.conn.send_many(entries)
        for r in got:
            if isinstance(r, Exception):
                raise reply_error(r) from r  # a key of the wrong type: raised as the plain read raises it
        return got
