"""Handlers for worker processes, and the side effects they make where the checker can count them.

A worker process (``python -m echomq_teach.lab.worker``) runs a handler named
``module:function``; the function takes the claimed job and a ``Context`` and
returns a result (the job completes) or ``consumer.Error`` / raises (the job is
retried), as a Consumer's handler does.

The side effects are what at-least-once is about: a job whose handler ran
twice made its effect twice, unless the handler makes it idempotently.
``Context.effect`` appends the job's id to ``emq:{q}:effects`` on every run
(a charge made again each time); ``Context.effect_once`` sets the job's field
in ``emq:{q}:effects:once`` only if absent (the same charge, keyed by the job:
a second run finds it made and does nothing). Both keys carry the queue's
hashtag, so they live beside the queue, on its shard, and ``jobs.drop`` clears them.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..connector import Connector
from ..consumer import Error
from ..jobs import Claimed
from ..keyspace import job_key, queue_key


def effects_key(queue: str) -> str:
    """The list every run of a not-idempotent handler appends its job's id to."""
    return queue_key(queue, "effects")


def once_key(queue: str) -> str:
    """The hash an idempotent handler writes its job's field in, once."""
    return queue_key(queue, "effects:once")


def provider_calls_key(queue: str) -> str:
    """The hash the payment provider counts its calls in, per job (``Context.charge``)."""
    return queue_key(queue, "provider:calls")


def provider_keys_key(queue: str) -> str:
    """The hash of the idempotency keys the payment provider has charged, each with its job's id."""
    return queue_key(queue, "provider:keys")


#: a payload ending in one of these marks an order the provider times out on, the first time it is asked:
#: ``!`` after it took the money, ``?`` before (the caller cannot tell which)
TIMEOUT_AFTER, TIMEOUT_BEFORE = "!", "?"


class ProviderTimeout(RuntimeError):
    """The payment provider did not answer in time: whether it took the money, its caller cannot tell."""


@dataclass
class Context:
    """What a handler in a worker process may use: its worker's connector, the queue, the work time."""

    conn: Connector
    queue: str
    worker: str
    work_ms: int = 0
    #: called halfway through ``work()``: the worker's "inside the handler" crash point
    midway: Any = field(default=None, repr=False)
    #: the worker's history (``history.Recorder``): a renewal the handler makes is recorded there
    rec: Any = field(default=None, repr=False)
    #: the job whose handler runs now (the worker sets it): the work done is recorded against its token
    job: Claimed | None = field(default=None, repr=False)

    def work(self) -> None:
        """Do the job's work: sleep ``work_ms``, passing the handler's crash point halfway.

        Recorded when done (a ``worked`` note with the job, its token and the ms it took), so that a judge
        can tell an order whose work was done from one a handler settled without doing it.
        """
        half = self.work_ms / 2000
        began = time.monotonic()
        time.sleep(half)
        if self.midway is not None:
            self.midway()
        time.sleep(half)
        if self.rec is not None and self.job is not None:
            self.rec.note("worked", job=self.job.id, token=self.job.attempts,
                          ms=round((time.monotonic() - began) * 1000, 1))

    def extend(self, job: Claimed, sha: str, lease_ms: int) -> bool:
        """Renew ``job``'s lease by the loaded script ``sha``; True when the node says it renewed.

        The script takes KEYS ``[active, row]`` and ARGV ``[id, token, lease_ms]`` and answers 1
        (renewed) or 0 (the caller no longer holds the job). The call is recorded as ``extend``
        with the caller's token, so the checker can hold a renewal to the fence as it holds a settle.
        """
        keys = (queue_key(self.queue, "active"), job_key(self.queue, job.id))

        def call() -> str:
            reply = self.conn.call("EVALSHA", sha, 2, *keys, job.id, job.attempts, lease_ms)
            return "ok" if reply == 1 else "stale" if reply == 0 else f"not 1 or 0: {reply!r}"

        answer = call() if self.rec is None else self.rec.call("extend", call, job=job.id, token=job.attempts)
        return answer == "ok"

    def effect(self, job: Claimed) -> int:
        """A side effect made on every run (RPUSH): answers how many times this queue's effects ran."""
        return int(self.conn.call("RPUSH", effects_key(self.queue), job.id))

    def effect_once(self, job: Claimed) -> bool:
        """The same side effect, idempotent (HSETNX keyed by the job): True only the first time."""
        return self.conn.call("HSETNX", once_key(self.queue), job.id, self.worker) == 1

    def charge(self, job: Claimed, key: str | None = None) -> bool:
        """Ask the payment provider to charge ``job``'s customer; True when this call took money.

        The provider is not the handler's: the first call for an order marked
        ``!`` takes the money and then raises ``ProviderTimeout``; for one
        marked ``?`` it raises before taking it. With an idempotency ``key``
        the provider charges a key once (a later call with it takes nothing and
        answers False, as real providers do); without one, every call charges.
        Each charge is one command on the node, so a kill never leaves half of one.
        """
        first = self.conn.call("HINCRBY", provider_calls_key(self.queue), job.id, 1) == 1
        timeout = "the payment provider timed out"
        if first and job.payload.endswith(TIMEOUT_BEFORE):
            raise ProviderTimeout(timeout)
        if key is None:
            self.conn.call("RPUSH", effects_key(self.queue), job.id)
            took = True
        else:
            took = self.conn.call("HSETNX", provider_keys_key(self.queue), str(key), job.id) == 1
        if first and job.payload.endswith(TIMEOUT_AFTER):
            raise ProviderTimeout(timeout)
        return took


def effects(conn: Connector, queue: str) -> Counter[str]:
    """How many times each job's not-idempotent effect was made (the list ``effect`` appends to)."""
    return Counter(conn.client.lrange(effects_key(queue), 0, -1))


def effects_once(conn: Connector, queue: str) -> dict[str, str]:
    """Each job whose idempotent effect was made, with the worker that made it."""
    return dict(conn.client.hgetall(once_key(queue)))


def charges(conn: Connector, queue: str) -> Counter[str]:
    """How many times the payment provider charged each job's customer (``Context.charge``, keyed or not)."""
    made = effects(conn, queue)
    made.update(conn.client.hvals(provider_keys_key(queue)))
    return made


def provider_calls(conn: Connector, queue: str) -> dict[str, int]:
    """How many times each job asked the payment provider to charge."""
    return {j: int(n) for j, n in conn.client.hgetall(provider_calls_key(queue)).items()}


# -- ready handlers ------------------------------------------------------------------------------
def work(job: Claimed, ctx: Context) -> str:
    """Work for ``work_ms``, then complete with the payload."""
    ctx.work()
    return f"done {job.payload}"


def charge(job: Claimed, ctx: Context) -> str:
    """Charge (a not-idempotent effect) after half the work: a second run charges again."""
    ctx.work()
    ctx.effect(job)
    return f"charged {job.id}"


def charge_once(job: Claimed, ctx: Context) -> str:
    """The same charge, made idempotent: keyed by the job, so a second run finds it made."""
    ctx.work()
    ctx.effect_once(job)
    return f"charged {job.id}"


def flaky(job: Claimed, ctx: Context) -> str | Error:
    """Fail the first try of every job whose payload ends in ``!``: it is retried, then completes."""
    ctx.work()
    if job.payload.endswith("!") and job.attempts == 1:
        return Error("the first try of a job marked '!' fails")
    return f"done {job.payload}"


def charge_first(job: Claimed, ctx: Context) -> str:
    """Charge first, then work: a crash inside the work comes after the charge."""
    ctx.effect(job)
    ctx.work()
    return f"charged {job.id}"


def careless_charge(job: Claimed, ctx: Context) -> str:
    """A team's first handler: it works, then asks the provider to charge, with no idempotency key."""
    ctx.work()
    ctx.charge(job)
    return f"charged {job.id}"
def renewing(job: Claimed, ctx: Context, sha: str, lease_ms: int, every_ms: int) -> str | Error:
    """Work ``work_ms`` in slices of ``every_ms``, renewing the lease (``ctx.extend``) after each slice.

    A handler that outlives its lease keeps it this way; a refused renewal means another
    worker may hold the job now, so it stops working at once and answers an error.
    """
    for _ in range(max(1, ctx.work_ms // every_ms)):
        time.sleep(every_ms / 1000)
        if not ctx.extend(job, sha, lease_ms):
            return Error("the lease was lost: a renewal was refused")
    return f"done {job.payload}"


def stalls(job: Claimed, ctx: Context) -> str:
    """Work, then complete with the stalls the job's row has counted so far: ``"stalled N"``.

    The completions stream then keeps each job's count: a lease the stall
    sweep put back uncounted (the lease_epoch rule) shows ``stalled 0``.
    """
    ctx.work()
    n = ctx.conn.call("HGET", job_key(ctx.queue, job.id), "stalled")
    return f"stalled {int(n or 0)}"
