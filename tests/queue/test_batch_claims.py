"""The kit's batch claim (``jobs.claim_many``) and a Pool that claims in batches.

A batch claim is k ``@claim2`` calls made as one atomic step: each job its own
token and its own lease, a ghost popped and minting nothing, the pause flag
read inside. A Pool with ``batch=k`` must leave every queue as the one-job
path leaves it.
"""

from __future__ import annotations

import time

import pytest
import redis
from conftest import server_ms, state
from pool_support import end_state, handler, land_work

from echomq_teach import Connector, flows, jobs, keyspace, snapshots
from echomq_teach.consumer import Consumer, Error, Pool
from echomq_teach.errors import BadInput, WrongState

LEASE = 30_000


def enqueue(conn: Connector, q: str, n: int, prefix: str = "J") -> list[str]:
    return [jobs.enqueue(conn, q, f"payload {i}", job_id=f"{prefix}{i:03d}") for i in range(n)]


# -- the batch claim -------------------------------------------------------------------------------------
def test_each_job_of_a_batch_gets_its_own_token_and_its_own_lease(either: Connector, queue: str) -> None:
    ids = enqueue(either, queue, 5)
    # a claim and a retry before the batch: J000's next token is 2, the others' 1
    first = jobs.claim(either, queue, LEASE)
    assert jobs.retry(either, queue, first.id, first.attempts, "again", 1, 3) == jobs.SCHEDULED
    time.sleep(0.01)
    assert jobs.promote(either, queue) == [first.id]
    before = server_ms(either)
    got = jobs.claim_many(either, queue, LEASE, 4)
    after = server_ms(either)
    assert [j.id for j in got] == ids[:4]  # pending order: the oldest ids first
    assert [j.attempts for j in got] == [2, 1, 1, 1]
    assert [j.payload for j in got] == [f"payload {i}" for i in range(4)]
    snap = snapshots.snapshot(either, queue)
    assert snap.pending == [ids[4]] and sorted(snap.active) == ids[:4]
    for j in got:
        assert snap.rows[j.id]["state"] == "active" and snap.rows[j.id]["attempts"] == str(j.attempts)
        assert before + LEASE <= snap.sets["active"][j.id] <= after + LEASE  # each its own member of active
    # each lease is fenced by its own token: one completes, one is stale with a wrong token
    assert jobs.complete(either, queue, got[1].id, got[1].attempts, "done") == jobs.OK
    assert jobs.complete(either, queue, got[0].id, 1, "done") == jobs.STALE


def test_a_batch_stops_where_pending_ends_and_an_empty_queue_answers_nothing(either: Connector, queue: str) -> None:
    ids = enqueue(either, queue, 3)
    assert [j.id for j in jobs.claim_many(either, queue, LEASE, 10)] == ids
    assert jobs.claim_many(either, queue, LEASE, 10) == []
    assert jobs.claim_many(either, queue + "-never", LEASE, 1) == []


def test_a_ghost_in_the_batch_is_popped_and_mints_nothing(either: Connector, queue: str) -> None:
    ids = enqueue(either, queue, 3)
    either.client.zadd(keyspace.queue_key(queue, "pending"), {"I000": 0})  # sorts before J000: the head
    got = jobs.claim_many(either, queue, LEASE, 2)
    # the batch popped two heads: the ghost and J000; the ghost made no row and no lease
    assert [j.id for j in got] == [ids[0]]
    snap = snapshots.snapshot(either, queue)
    assert snap.pending == ids[1:] and snap.active == [ids[0]] and "I000" not in snap.rows


def test_a_paused_queue_hands_out_no_batch_and_nothing_moves(either: Connector, queue: str) -> None:
    enqueue(either, queue, 3)
    jobs.pause(either, queue)
    before = state(either, queue)
    either.clear_trace()
    assert jobs.claim_many(either, queue, LEASE, 3) == []
    # no host-side pause read on either wire: the one call reads the flag itself
    assert len(either.trace) == 1
    assert state(either, queue) == before


def test_a_batch_leaves_the_queue_as_k_one_job_claims_do(either: Connector, queue: str) -> None:
    for q in (queue + "-one", queue + "-many"):
        enqueue(either, q, 6)
        either.client.zadd(keyspace.queue_key(q, "pending"), {"J002x": 0})  # a ghost among them
    singles = [jobs.claim(either, queue + "-one", LEASE) for _ in range(5)]
    batch = jobs.claim_many(either, queue + "-many", LEASE, 5)
    assert [j for j in singles if j is not None] == batch
    a, b = (snapshots.snapshot(either, q) for q in (queue + "-one", queue + "-many"))
    no_epoch = [{i: {k: v for k, v in r.items() if k != "lease_epoch"} for i, r in s.rows.items()} for s in (a, b)]
    assert a.pending == b.pending and sorted(a.active) == sorted(b.active) and no_epoch[0] == no_epoch[1]


def test_the_batch_answers_each_jobs_parent_and_a_flow_child_settles_by_the_script(either: Connector,
                                                                                   queue: str) -> None:
    flows.add(either, queue, ("P", "parent"), [("C1", "one"), ("C2", "two")])
    pool = Pool(either, queue, lambda j: "done", size=1, batch=8, metronome_ms=5, idle_sleep_ms=2)
    try:
        report = pool.run(timeout=30, until_idle=True)
        trace = list(pool.consumers[0].conn.trace)
    finally:
        pool.close()
    assert report.errors == [] and report.outcomes == {jobs.OK: 3}
    # the children took @complete with their parent's keys at once: no host read and no native refusal
    settles = [e for e in trace if (e.script or e.args[0]) in ("@complete", "EMQ.COMPLETE")]
    assert [e.script or e.args[0] for e in settles] == ["@complete", "@complete", "@complete" if not either.native
                                                          else "EMQ.COMPLETE"]
    assert not any(e.error for e in trace) and not any(e.args[0] in ("HGET", "EXISTS") for e in trace)
    assert snapshots.snapshot(either, queue).completed == 3


# -- bad input: refused before anything is sent ----------------------------------------------------------------
@pytest.mark.parametrize("k", [0, -1, 1001, True, 2.0, "3", None])
def test_a_bad_batch_size_is_refused_before_any_call(either: Connector, queue: str, k: object) -> None:
    enqueue(either, queue, 2)
    before = state(either, queue)
    either.clear_trace()
    with pytest.raises(BadInput, match=r"k \(the batch size\) must be an integer from 1 to 1000"):
        jobs.claim_many(either, queue, LEASE, k)  # type: ignore[arg-type]
    with pytest.raises(BadInput, match="lease_ms"):
        jobs.claim_many(either, queue, 0, 2)
    with pytest.raises(BadInput, match="queue"):
        jobs.claim_many(either, "no spaces", LEASE, 2)
    assert list(either.trace) == [] and state(either, queue) == before


def test_a_batch_needs_the_pipeline_and_a_bad_size_opens_no_link(either: Connector, queue: str) -> None:
    with pytest.raises(BadInput, match="pipeline"):
        Consumer(either, queue, lambda j: "x", promote=False, recovery=None, batch=4)
    with pytest.raises(BadInput, match="pipeline"):
        Pool(either, queue, lambda j: "x", size=2, shortcuts=False, batch=4)
    with pytest.raises(BadInput, match="batch size"):
        Pool(either, queue, lambda j: "x", size=2, batch=0)
    pool = Pool(either, queue, lambda j: "x", size=2, batch=16)
    try:
        assert pool.batch == 16 and all(c.batch == 16 for c in pool.consumers)
    finally:
        pool.close()
    assert Pool(either, queue, lambda j: "x", size=1).batch == 1


# -- a Pool that claims in batches -------------------------------------------------------------------------------
def drained(conn: Connector, q: str, size: int, batch: int, shortcuts: object = True) -> dict[str, object]:
    land_work(conn, q)
    conn.client.zadd(keyspace.queue_key(q, "pending"), {"JOBghost": 0})  # a ghost among them
    pool = Pool(conn, q, handler, size=size, batch=batch, shortcuts=shortcuts, metronome_ms=5, retry_delay_ms=1,
                max_attempts=2, record=True, idle_sleep_ms=2)
    try:
        report = pool.run(timeout=60, until_idle=True)
    finally:
        pool.close()
    assert report.errors == [] and report.stopped_by == "idle", report
    return {**end_state(conn, q), "settled": report.settled}


@pytest.mark.parametrize(("size", "batch"), [(1, 4), (3, 7)])
def test_a_batch_pool_leaves_the_end_state_of_the_plain_path(either: Connector, queue: str, size: int,
                                                            batch: int) -> None:
    plain = drained(either, queue + "-plain", 2, 1, shortcuts=False)
    fast = drained(either, queue + f"-batch{batch}", size, batch)
    assert fast == plain
    assert plain["sets"]["dead"] == ["JOBbad0", "JOBbad1", "JOBbad2", "JOBc2a", "JOBc3a", "JOBp3"]
    assert plain["completed"] == 12 + 3 + 1 + 3 + 2 + 1


def test_the_trace_shows_one_round_trip_per_batch(either: Connector, queue: str) -> None:
    enqueue(either, queue, 7)
    pool = Pool(either, queue, lambda j: "done", size=1, batch=3, metronome_ms=5, idle_sleep_ms=2)
    try:
        report = pool.run(max_jobs=7, timeout=30)
        trace = list(pool.consumers[0].conn.trace)
    finally:
        pool.close()
    assert report.settled == 7 and report.outcomes == {jobs.OK: 7}
    claim = "EMQ.CLAIM.MANY" if either.native else "@claim_many"
    settle = "EMQ.COMPLETE" if either.native else "@complete"
    words = [e.script or e.args[0] for e in trace]
    # a batch of 3, then [3 settles + the next claim of 3], [3 settles + a claim of the 1 left], [1 settle]
    assert words == [claim] + [settle] * 3 + [claim] + [settle] * 3 + [claim] + [settle]
    assert [e.args[-1] for e in trace if (e.script or e.args[0]) == claim] == ["3", "3", "1"]
    tags = [e.shortcuts for e in trace[1:5]]
    assert [t[-2] for t in tags] == ["pipeline 1/4", "pipeline 2/4", "pipeline 3/4", "pipeline 4/4"]
    assert trace[4].shortcuts[0] == "batch: pause and parent read in the claim"


def test_a_run_that_stops_settles_the_batch_in_hand(either: Connector, queue: str) -> None:
    enqueue(either, queue, 40)

    def slow(job: jobs.Claimed) -> str:
        time.sleep(0.01)
        return "done"

    c = Consumer(either, queue, slow, promote=False, recovery=None, shortcuts=["pipeline"], batch=5)
    report = c.run(timeout=0.15)
    assert report.stopped_by == "timeout"
    snap = snapshots.snapshot(either, queue)
    # the batch that rode in the last settles was worked and settled too: nothing is left in active
    assert snap.active == [] and snap.completed == report.settled == 40 - len(snap.pending)
    assert report.settled % 5 == 0


def test_a_paused_queue_gives_a_batch_pool_nothing(either: Connector, queue: str) -> None:
    enqueue(either, queue, 3)
    jobs.pause(either, queue)
    before = state(either, queue)
    pool = Pool(either, queue, lambda j: "done", size=2, batch=4, idle_sleep_ms=5)
    try:
        report = pool.run(timeout=0.2)
    finally:
        pool.close()
    assert report.settled == 0 and state(either, queue) == before


def test_a_refused_settle_in_a_batch_is_raised_and_the_others_settle(either: Connector, queue: str) -> None:
    enqueue(either, queue, 4)
    metrics = keyspace.queue_key(queue, "metrics:completed")

    def breaking(job: jobs.Claimed) -> str | Error:
        if job.id == "J001":
            either.client.set(metrics, "not a hash")  # every completion after this is refused, before any write
        return Error("later") if job.id in ("J002", "J003") else "done"

    c = Consumer(either, queue, breaking, promote=False, recovery=None, shortcuts=["pipeline"], batch=4)
    with pytest.raises((redis.exceptions.ResponseError, WrongState)):
        c.beat()
    snap = {s: sorted(either.client.zrange(keyspace.queue_key(queue, s), 0, -1)) for s in keyspace.SETS}
    # J000 and J001 were refused (the metrics key broke before their settles ran); the retries went on
    assert snap == {"pending": [], "active": ["J000", "J001"], "schedule": ["J002", "J003"], "dead": []}


def test_the_lease_guard_settles_what_is_done_when_a_batch_outlasts_its_leases(either: Connector,
                                                                              queue: str) -> None:
    # four 400 ms handlers under 1 s leases: settled only at the end, every batch would go stale (the reap
    # takes all four back first) and run again, for ever; settled when half the lease is gone, it drains.
    # The guard is read before each handler: 400 ms in, short of the half by 100 ms (80 ms under 200 ms
    # leases left 20 ms, which a loaded machine's first handler outlasted), 800 ms in, past it
    ids = enqueue(either, queue, 4)

    def slow(job: jobs.Claimed) -> str:
        time.sleep(0.4)
        return "done"

    pool = Pool(either, queue, slow, size=1, batch=4, lease_ms=1_000, metronome_ms=50, idle_sleep_ms=10)
    try:
        report = pool.run(timeout=20, until_idle=True)
        trace = list(pool.consumers[0].conn.trace)
    finally:
        pool.close()
    assert report.stopped_by == "idle" and report.errors == []
    snap = snapshots.snapshot(either, queue)
    assert snap.completed == 4 and snap.total() == 0
    settle = "EMQ.COMPLETE" if either.native else "@complete"
    settles = [e for e in trace if (e.script or e.args[0]) == settle]
    # the first two settled on their own round trip (two entries, no claim), before the third handler ran
    assert [e.args[4 if either.native else 5] for e in settles[:2]] == ids[:2]
    assert [e.shortcuts[-2] for e in settles[:2]] == ["pipeline 1/2", "pipeline 2/2"]
