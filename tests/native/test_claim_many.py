"""The kit's batch claim on both executors: bad calls refused alike with nothing written, and its replication.

``@claim_many`` and ``EMQ.CLAIM.MANY`` make every check before their first
write: a head deep in the batch whose row cannot be claimed refuses the whole
call, and the heads before it stay pending. Each case runs raw on a busy queue
of each node and compares ``DEBUG DIGEST`` before and after.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import redis
from native_support import aof_commands, digest, transactions

from echomq_teach import jobs
from echomq_teach.connector import Connector
from echomq_teach.keyspace import base, job_key, queue_key
from echomq_teach.nodes.local import LocalNode

LEASE = 30_000
WRONGTYPE = r"^WRONGTYPE Operation against a key holding the wrong kind of value$"


@dataclass
class Case:
    #: (lease_ms, k) and the keys, spoiled as the case wants
    argv: Callable[[str], list[Any]]
    keys: Callable[[str], list[str]]
    #: the refusal, the same on both executors, or (script's, native's)
    error: str | tuple[str, str]
    setup: Callable[[Connector, str], None] | None = None


def keys3(q: str) -> list[str]:
    return [queue_key(q, "pending"), queue_key(q, "active"), base(q)]


def _spoil_row(job_id: str, how: str) -> Callable[[Connector, str], None]:
    def setup(c: Connector, q: str) -> None:
        row = job_key(q, job_id)
        if how == "string":
            c.client.delete(row)
            c.client.set(row, "{}")
        else:
            c.client.hset(row, "attempts", how)

    return setup


def _retype(suffix: str) -> Callable[[Connector, str], None]:
    def setup(c: Connector, q: str) -> None:
        c.client.delete(queue_key(q, suffix))
        c.client.rpush(queue_key(q, suffix), "x")

    return setup


ok_argv: Callable[[str], list[Any]] = lambda q: [LEASE, 5]  # noqa: E731
CASES: dict[str, Case] = {
    "k-zero": Case(lambda q: [LEASE, 0], keys3, r"^EMQARG k must be a positive integer$"),
    "k-word": Case(lambda q: [LEASE, "five"], keys3, r"^EMQARG k must be a positive integer$"),
    "k-leading-zero": Case(lambda q: [LEASE, "05"], keys3, r"^EMQARG k must be a positive integer$"),
    "k-above-1000": Case(lambda q: [LEASE, 1001], keys3, r"^EMQARG k must be at most 1000$"),
    "k-above-2^52": Case(lambda q: [LEASE, 2**52 + 1], keys3, r"^EMQARG k is too large$"),
    "lease-zero": Case(lambda q: [0, 5], keys3, r"^EMQARG lease_ms must be a positive integer$"),
    "lease-above-2^52": Case(lambda q: [2**52 + 1, 5], keys3, r"^EMQARG lease_ms is too large$"),
    "argv-short": Case(lambda q: [LEASE], keys3,
                       (r"^EMQARG @claim_many takes 2 arguments, got 1$",
                        r"^wrong number of arguments for 'EMQ\.CLAIM\.MANY' command$")),
    "two-keys": Case(ok_argv, lambda q: keys3(q)[:2],
                     (r"^EMQARG @claim_many takes 3 keys, got 2$", r"^EMQARG numkeys must be 3 for EMQ\.CLAIM\.MANY$")),
    "base-without-hashtag": Case(ok_argv, lambda q: ["emq:q:pending", "emq:q:active", "emq:q:"],
                                 r"^EMQKEYS base must look like emq:\{q\}:, got emq:q:$"),
    "base-with-space": Case(ok_argv, lambda q: ["emq:{a b}:pending", "emq:{a b}:active", "emq:{a b}:"],
                            r"^EMQKEYS base must look like emq:\{q\}:, got emq:\{a b\}:$"),
    "pending-of-another-queue": Case(ok_argv, lambda q: ["emq:{other}:pending", *keys3(q)[1:]],
                                     r"^EMQKEYS pending must be emq:\{.+\}:pending, got emq:\{other\}:pending$"),
    "keys-swapped": Case(ok_argv, lambda q: [keys3(q)[1], keys3(q)[0], base(q)],
                         r"^EMQKEYS pending must be emq:\{.+\}:pending, got emq:\{.+\}:active$"),
    "pending-a-list": Case(ok_argv, keys3, WRONGTYPE, _retype("pending")),
    "active-a-list": Case(ok_argv, keys3, r"^WRONGTYPE emq:\{.+\}:active holds a list, not a zset$", _retype("active")),
    # a head deep in the batch refuses the whole call: the two heads before it stay pending
    "third-row-a-string": Case(ok_argv, keys3, WRONGTYPE, _spoil_row("P2", "string")),
    "third-attempts-a-word": Case(ok_argv, keys3,
                                  r"^EMQSTATE emq:\{.+\}:job:P2 attempts is not an integer that can grow$",
                                  _spoil_row("P2", "many")),
    "third-attempts-leading-zero": Case(ok_argv, keys3,
                                        r"^EMQSTATE emq:\{.+\}:job:P2 attempts is not an integer that can grow$",
                                        _spoil_row("P2", "007")),
    "third-attempts-at-the-top": Case(ok_argv, keys3,
                                      r"^EMQSTATE emq:\{.+\}:job:P2 attempts is not an integer that can grow$",
                                      _spoil_row("P2", str(2**63 - 1))),
}


def busy(c: Connector, q: str) -> None:
    """A claimed job (A), a scheduled one (S), a dead one (D), five pending (P0 … P4) and a ghost at the head."""
    for job_id in ("A", "D", "S"):
        jobs.enqueue(c, q, f"payload {job_id}", job_id=job_id)
    a, d, s = (jobs.claim(c, q, LEASE) for _ in range(3))
    assert (a.id, d.id, s.id) == ("A", "D", "S")
    assert jobs.retry(c, q, "D", d.attempts, "fatal", 1000, 1) == jobs.DEAD
    assert jobs.retry(c, q, "S", s.attempts, "later", 60_000, 3) == jobs.SCHEDULED
    for i in range(5):
        jobs.enqueue(c, q, f"payload P{i}", job_id=f"P{i}")
    c.client.zadd(queue_key(q, "pending"), {"O": 0})  # sorts before P0: a ghost at the head


def call(c: Connector, keys: list[str], argv: list[Any]) -> Any:
    if c.native:
        return c.call("EMQ.CLAIM.MANY", len(keys), *keys, *argv)
    return c.eval("claim_many", keys, argv)


@pytest.mark.parametrize("name", list(CASES))
def test_a_refused_batch_claim_writes_nothing_on_either_executor(conn, native_conn, queue, name):
    case = CASES[name]
    errors = []
    for c in (conn, native_conn):
        busy(c, queue)
        if case.setup:
            case.setup(c, queue)
        before = digest(c.client)
        with pytest.raises(redis.exceptions.ResponseError) as err:
            call(c, case.keys(queue), case.argv(queue))
        want = case.error if isinstance(case.error, str) else case.error[c.native]
        assert re.match(want, str(err.value)), (c.wire, str(err.value))
        assert digest(c.client) == before, f"wire {c.wire} wrote on refusal"
        errors.append(str(err.value))
    if isinstance(case.error, str):
        assert errors[0] == errors[1]  # one text, whichever executor refused


def test_the_well_formed_call_on_the_busy_queue_claims_behind_the_ghost(conn, native_conn, queue):
    replies = []
    for c in (conn, native_conn):
        busy(c, queue)
        replies.append(call(c, keys3(queue), [LEASE, 5]))
    # five heads popped: the ghost minted nothing, four jobs each with its own token
    assert replies[0] == replies[1] == [[f"P{i}", f"payload P{i}", 1, ""] for i in range(4)]


def test_a_batch_claim_replicates_as_plain_commands_one_transaction_per_call():
    """What a replica and the AOF get from one EMQ.CLAIM.MANY: per job the pop, the row, the lease; one MULTI/EXEC."""
    node = LocalNode(native=True, durable=True)
    try:
        c = node.connector()
        q = "replmany"
        for job_id in ("A", "B"):
            jobs.enqueue(c, q, job_id.lower(), job_id=job_id)
        c.client.zadd(queue_key(q, "pending"), {"AB": 0})  # a ghost between them
        start = len(aof_commands(node.dir))
        got = jobs.claim_many(c, q, LEASE, 3)
        assert [(j.id, j.attempts) for j in got] == [("A", 1), ("B", 1)]
        active = queue_key(q, "active")
        deadline = int(c.client.zscore(active, "A"))
        assert int(c.client.zscore(active, "B")) == deadline  # one deadline for the batch
        written = aof_commands(node.dir)[start:]
        assert not [w for w in written if w[0].upper().startswith("EMQ.")]
        pending = queue_key(q, "pending")

        def claimed(job_id: str) -> list[list[str]]:
            return [
                ["ZREM", pending, job_id],
                ["HSET", job_key(q, job_id), "attempts", "1", "state", "active", "lease_epoch", node.run_id],
                ["ZADD", active, str(deadline), job_id],
            ]

        # the ghost is popped and nothing else: no row, no lease
        assert transactions(written) == [[*claimed("A"), ["ZREM", pending, "AB"], *claimed("B")]]
        c.close()
    finally:
        node.stop()
