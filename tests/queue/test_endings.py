"""Every ending reaches the record: on a recording queue, each way a job leaves for good writes exactly
one entry per life on ``emq:{q}:stream:completions``, in the same atomic step, on both executors.

The ways: completed, dead at the cap, buried by the counted stall sweep (``stalled``), a flow parent
failed by a child's death (``child_failed``, after the child's own entry), an operator's remove of a
job that had not ended (``removed``). ``@drop`` deletes the stream itself and records nothing.
"""

from __future__ import annotations

import pytest
from conftest import wait_until_due

from echomq_teach import flows, jobs, snapshots, stalled
from echomq_teach.connector import Connector
from echomq_teach.consumer import Consumer, Metronome, Pool
from echomq_teach.keyspace import queue_key

SHORT = 20  # a lease that lapses at once: the worker that took it "crashed"
LEASE = 30_000


def entries(conn: Connector, queue: str) -> list[dict[str, str]]:
    """The completions stream's entries, oldest first, without their ids (which are times)."""
    return [f for _, f in conn.client.xrange(queue_key(queue, "stream:completions"))]


def crashed_claim(conn: Connector, queue: str, job_id: str) -> jobs.Claimed:
    """``job_id`` claimed under a short lease by a worker that then died: its lease is now past."""
    got = jobs.claim(conn, queue, SHORT)
    assert got is not None and got.id == job_id
    wait_until_due(conn, queue, "active")
    return got


def test_the_vocabulary_is_one_tuple() -> None:
    assert jobs.OUTCOMES == ("completed", "dead", "stalled", "child_failed", "removed")
    assert set(jobs.DEATHS) < set(jobs.OUTCOMES) and jobs.COMPLETED not in jobs.DEATHS


# -- the counted stall sweep -------------------------------------------------------------------------------
def test_a_recording_consumers_sweep_records_a_burial_once(either: Connector, queue: str) -> None:
    """The issue's reproduction: a recording Consumer, recovery="stalled", max_stalled=1; a job claimed
    with a short lease and never settled; two sweeps. The queue is paused between the crashed claims, so
    the consumer's beats only sweep (pause holds claims only: D-1 in docs/decisions.md)."""
    c = either
    consumer = Consumer(c, queue, lambda j: "done", recovery="stalled", max_stalled=1, record=True)
    job_id = jobs.enqueue(c, queue, "work")
    for round_, buried in ((1, []), (2, [job_id])):
        crashed_claim(c, queue, job_id)
        jobs.pause(c, queue)
        beat = consumer.beat()
        assert beat.buried == buried and beat.claimed is None
        jobs.resume(c, queue)
        assert len(entries(c, queue)) == round_ - 1  # a requeue is not an ending
    assert entries(c, queue) == [{"id": job_id, "outcome": "stalled", "attempts": "2", "error": "stalled"}]
    assert snapshots.snapshot(c, queue).where(job_id) == ["dead"]
    # later sweeps find nothing more to say about it
    consumer.beat()
    assert len(entries(c, queue)) == 1


def test_a_recording_metronome_records_its_burials(either: Connector, queue: str) -> None:
    c = either
    metronome = Metronome(c, queue, recovery="stalled", max_stalled=1, record=True)
    job_id = jobs.enqueue(c, queue, "work")
    crashed_claim(c, queue, job_id)
    assert metronome.tick() == ([], [job_id])
    crashed_claim(c, queue, job_id)
    metronome.tick()
    assert [e["outcome"] for e in entries(c, queue)] == ["stalled"]


def test_a_recording_pool_gives_its_metronome_the_flag(conn: Connector, queue: str) -> None:
    pool = Pool(conn, queue, lambda j: "ok", size=1, recovery="stalled", record=True)
    try:
        assert pool.metronome.record is True
    finally:
        pool.close()
    plain = Pool(conn, queue, lambda j: "ok", size=1, recovery="stalled")
    try:
        assert plain.metronome.record is False
    finally:
        plain.close()


def test_a_sweep_that_does_not_record_writes_no_entry(either: Connector, queue: str) -> None:
    c = either
    job_id = jobs.enqueue(c, queue, "work")
    for _ in range(2):
        crashed_claim(c, queue, job_id)
        stalled.check(c, queue, 1)
    assert snapshots.snapshot(c, queue).where(job_id) == ["dead"]
    assert entries(c, queue) == []


def test_one_sweep_records_each_burial_in_its_order(either: Connector, queue: str) -> None:
    c = either
    ids = [jobs.enqueue(c, queue, f"w{i}") for i in range(3)]
    for _ in range(3):
        jobs.claim(c, queue, SHORT)
    wait_until_due(c, queue, "active")
    report = stalled.check(c, queue, 1, record=False)
    assert sorted(report.requeued) == sorted(ids)
    for _ in range(3):
        jobs.claim(c, queue, SHORT)
    wait_until_due(c, queue, "active")
    report = stalled.check(c, queue, 1, record=True)
    assert [e["id"] for e in entries(c, queue)] == report.dead and sorted(report.dead) == sorted(ids)


# -- a flow parent failed by a child's death ----------------------------------------------------------------
def test_a_child_dead_at_its_cap_records_its_death_then_its_parents(either: Connector, queue: str) -> None:
    c = either  # a flow child takes the script on either wire
    flow = flows.add(c, queue, ("P", "parent"), [("C", "child")])
    got = jobs.claim(c, queue, LEASE)
    assert jobs.retry(c, queue, "C", got.attempts, "boom", 1_000, 1, record=True) == jobs.DEAD
    assert entries(c, queue) == [
        {"id": "C", "outcome": "dead", "attempts": "1", "error": "boom"},
        {"id": "P", "outcome": "child_failed", "attempts": "0", "error": "child C failed: boom"},
    ]
    snap = snapshots.snapshot(c, queue)
    assert snap.where(flow.parent_id) == ["dead"] and snap.where("C") == ["dead"]


def test_a_child_buried_by_the_sweep_records_its_burial_then_its_parents(either: Connector, queue: str) -> None:
    c = either  # on wire 6 the sweep is EMQ.STALLED.CHECK
    flows.add(c, queue, ("P", "parent"), [("C", "child"), ("D", "other")])
    crashed_claim(c, queue, "C")
    stalled.check(c, queue, 1, record=True)  # requeued: stalled once
    crashed_claim(c, queue, "C")
    assert stalled.check(c, queue, 1, record=True).dead == ["C"]
    assert entries(c, queue) == [
        {"id": "C", "outcome": "stalled", "attempts": "2", "error": "stalled"},
        {"id": "P", "outcome": "child_failed", "attempts": "0", "error": "child C failed: stalled"},
    ]
    # the other child completes later: the parent died once, and stays with its one entry
    got = jobs.claim(c, queue, LEASE)
    assert got.id == "D" and jobs.complete(c, queue, "D", got.attempts, "r", record=True) == jobs.OK
    assert [e["id"] for e in entries(c, queue)] == ["C", "P", "D"]


@pytest.mark.parametrize("policy", ["ignore", "remove", "wait"])
def test_a_policy_that_keeps_the_parent_records_only_the_child(either: Connector, queue: str, policy: str) -> None:
    c = either
    flows.add(c, queue, ("P", "parent"), [("C", "child"), ("D", "other")], policy=policy)
    got = jobs.claim(c, queue, LEASE)
    jobs.retry(c, queue, "C", got.attempts, "boom", 1_000, 1, record=True)
    assert [(e["id"], e["outcome"]) for e in entries(c, queue)] == [("C", "dead")]


def test_a_parent_failed_without_record_writes_nothing(either: Connector, queue: str) -> None:
    c = either
    flows.add(c, queue, ("P", "parent"), [("C", "child")])
    got = jobs.claim(c, queue, LEASE)
    jobs.retry(c, queue, "C", got.attempts, "boom", 1_000, 1)
    assert entries(c, queue) == [] and snapshots.snapshot(c, queue).where("P") == ["dead"]


# -- an operator's remove ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["pending", "active", "scheduled", "awaiting_children"])
def test_removing_a_job_that_had_not_ended_records_it_once(either: Connector, queue: str, where: str) -> None:
    c = either
    if where == "awaiting_children":
        job_id = flows.add(c, queue, ("J", "parent"), [("K", "child")]).parent_id
    else:
        job_id = jobs.enqueue(c, queue, "work", job_id="J")
    token = 0
    if where in ("active", "scheduled"):
        token = jobs.claim(c, queue, LEASE).attempts
    if where == "scheduled":
        assert jobs.retry(c, queue, job_id, token, "later", 60_000, 3) == jobs.SCHEDULED
    assert jobs.remove(c, queue, job_id, record=True) is True
    assert entries(c, queue) == [
        {"id": job_id, "outcome": "removed", "attempts": str(token), "error": f"removed while {where}"}
    ]
    if where == "active":  # the worker that held it comes back: its settle is stale, and writes nothing
        assert jobs.complete(c, queue, job_id, token, "late", record=True) == jobs.STALE
    assert len(entries(c, queue)) == 1


def test_removing_a_dead_job_adds_no_second_entry(either: Connector, queue: str) -> None:
    c = either
    job_id = jobs.enqueue(c, queue, "work")
    got = jobs.claim(c, queue, LEASE)
    jobs.retry(c, queue, job_id, got.attempts, "fatal", 1_000, 1, record=True)
    assert jobs.remove(c, queue, job_id, record=True) is True
    assert [e["outcome"] for e in entries(c, queue)] == ["dead"]


def test_a_remove_that_does_not_record_writes_no_entry(either: Connector, queue: str) -> None:
    c = either
    job_id = jobs.enqueue(c, queue, "work")
    assert jobs.remove(c, queue, job_id) is True
    assert jobs.remove(c, queue, job_id, record=True) is False  # nothing left: nothing ends, nothing recorded
    assert entries(c, queue) == []


# -- one entry per life ----------------------------------------------------------------------------------------
def test_reprocess_then_end_again_records_one_entry_per_life(either: Connector, queue: str) -> None:
    c = either
    job_id = jobs.enqueue(c, queue, "work")
    # life 1: buried by the sweep
    for _ in range(2):
        crashed_claim(c, queue, job_id)
        stalled.check(c, queue, 1, record=True)
    # life 2: dies at its cap
    jobs.reprocess(c, queue, job_id)
    got = jobs.claim(c, queue, LEASE)
    assert jobs.retry(c, queue, job_id, got.attempts, "fatal", 1_000, 1, record=True) == jobs.DEAD
    # life 3: removed while pending
    jobs.reprocess(c, queue, job_id)
    jobs.remove(c, queue, job_id, record=True)
    assert [(e["outcome"], e["attempts"]) for e in entries(c, queue)] == [
        ("stalled", "2"),
        ("dead", "3"),
        ("removed", "3"),
    ]


def test_drop_deletes_the_stream_and_records_nothing(either: Connector, queue: str) -> None:
    c = either
    job_id = jobs.enqueue(c, queue, "work")
    got = jobs.claim(c, queue, LEASE)
    jobs.complete(c, queue, job_id, got.attempts, "r", record=True)
    jobs.enqueue(c, queue, "left behind")
    assert len(entries(c, queue)) == 1
    jobs.drop(c, queue)
    assert entries(c, queue) == [] and c.client.exists(queue_key(queue, "stream:completions")) == 0


def test_record_must_be_a_bool(conn: Connector, queue: str) -> None:
    from echomq_teach.errors import BadInput

    job_id = jobs.enqueue(conn, queue, "work")
    before = snapshots.snapshot(conn, queue).state_only()
    for call in (
        lambda: jobs.remove(conn, queue, job_id, record="yes"),
        lambda: stalled.check(conn, queue, 1, record=1),
        lambda: jobs.complete(conn, queue, job_id, 1, "r", record="no"),
        lambda: Metronome(conn, queue, record=None),
    ):
        with pytest.raises(BadInput, match="record must be True or False"):
            call()
    assert snapshots.snapshot(conn, queue).state_only() == before
