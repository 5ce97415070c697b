"""Each transition's end state, as the course page states it."""

from __future__ import annotations

from conftest import server_ms, state, wait_until_due

from echomq_teach import Connector, jobs, keyspace, snapshots


def only_in(snap: snapshots.Snapshot, job_id: str) -> list[str]:
    return snap.where(job_id)


# -- the happy path ---------------------------------------------------------------------------------
def test_enqueue_writes_the_row_and_pending_at_score_zero(conn: Connector, queue: str) -> None:
    conn.clear_trace()
    job_id = jobs.enqueue(conn, queue, "hello")
    assert [e.script for e in conn.trace] == ["@enqueue"]  # one script, one round trip
    snap = snapshots.snapshot(conn, queue)
    assert snap.rows[job_id] == {"state": "pending", "attempts": "0", "payload": "hello"}
    assert snap.sets["pending"] == {job_id: 0}
    assert only_in(snap, job_id) == ["pending"]


def test_enqueue_with_a_given_id(conn: Connector, queue: str) -> None:
    assert jobs.enqueue(conn, queue, "p", job_id="JOB0KHTOWnGLuC") == "JOB0KHTOWnGLuC"
    assert snapshots.snapshot(conn, queue).pending == ["JOB0KHTOWnGLuC"]


def test_claim_end_state(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "work")
    lease = 30_000
    t0 = server_ms(conn)
    got = jobs.claim(conn, queue, lease)
    t1 = server_ms(conn)
    assert got == jobs.Claimed(job_id, "work", 1)
    snap = snapshots.snapshot(conn, queue)
    assert snap.rows[job_id]["state"] == "active"
    assert snap.rows[job_id]["attempts"] == "1"
    assert only_in(snap, job_id) == ["active"]
    # the active score IS the lease deadline, computed on the server's clock inside the claim
    deadline = snap.sets["active"][job_id]
    assert t0 + lease <= deadline <= t1 + lease
    assert 0 < snap.relative("active", job_id) <= lease


def test_claim_on_empty_queue_answers_none(conn: Connector, queue: str) -> None:
    before = state(conn, queue)
    assert jobs.claim(conn, queue, 1000) is None
    assert state(conn, queue) == before


def test_complete_end_state(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "work")
    got = jobs.claim(conn, queue, 30_000)
    assert got is not None
    before = snapshots.snapshot(conn, queue)
    assert jobs.complete(conn, queue, job_id, got.attempts, "done") == jobs.OK
    snap = snapshots.snapshot(conn, queue)
    # a completed row is deleted, and the metric counts it
    assert job_id not in snap.rows
    assert snap.ids() == set()
    assert snap.completed == before.completed + 1
    assert snap.stream_len == 0  # nothing recorded unless asked
    kinds = {c.kind for c in snapshots.diff(before, snap)}
    assert kinds == {"moved", "removed", "metric"}


def test_second_completion_is_stale_and_writes_nothing(conn: Connector, queue: str) -> None:
    jobs.enqueue(conn, queue, "work")
    got = jobs.claim(conn, queue, 30_000)
    assert jobs.complete(conn, queue, got.id, got.attempts) == jobs.OK
    before = state(conn, queue)
    assert jobs.complete(conn, queue, got.id, got.attempts) == jobs.STALE
    assert state(conn, queue) == before


def test_complete_of_a_pending_job_is_stale(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "work")
    before = state(conn, queue)
    # attempts is 0 and the state pending: no token can finish a job nobody claimed
    assert jobs.complete(conn, queue, job_id, 1) == jobs.STALE
    assert state(conn, queue) == before


def test_complete_with_record_adds_to_the_stream(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "work")
    got = jobs.claim(conn, queue, 30_000)
    assert jobs.complete(conn, queue, job_id, got.attempts, "the result", record=True) == jobs.OK
    entries = conn.client.xrange(keyspace.queue_key(queue, "stream:completions"))
    assert [e[1] for e in entries] == [{"id": job_id, "outcome": "completed", "attempts": "1", "result": "the result"}]


# -- the failure fork ---------------------------------------------------------------------------------
def test_retry_below_cap_parks_on_schedule(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "work")
    got = jobs.claim(conn, queue, 30_000)
    t0 = server_ms(conn)
    assert jobs.retry(conn, queue, job_id, got.attempts, "boom", 5_000, 3) == jobs.SCHEDULED
    t1 = server_ms(conn)
    snap = snapshots.snapshot(conn, queue)
    assert only_in(snap, job_id) == ["schedule"]
    assert snap.rows[job_id]["state"] == "scheduled"
    assert snap.rows[job_id]["last_error"] == "boom"
    assert snap.rows[job_id]["attempts"] == "1"
    # the run-at is now + delay on the server clock
    assert t0 + 5_000 <= snap.sets["schedule"][job_id] <= t1 + 5_000


def test_promote_leaves_a_job_that_is_not_due(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "work")
    got = jobs.claim(conn, queue, 30_000)
    jobs.retry(conn, queue, job_id, got.attempts, "boom", 60_000, 3)
    before = state(conn, queue)
    assert jobs.promote(conn, queue) == []
    assert state(conn, queue) == before


def test_promote_returns_a_due_job_to_pending(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "work")
    got = jobs.claim(conn, queue, 30_000)
    jobs.retry(conn, queue, job_id, got.attempts, "boom", 1, 3)
    wait_until_due(conn, queue, "schedule")
    assert jobs.promote(conn, queue) == [job_id]
    snap = snapshots.snapshot(conn, queue)
    assert snap.sets["pending"] == {job_id: 0}
    assert snap.rows[job_id]["state"] == "pending"
    assert snap.rows[job_id]["attempts"] == "1"  # promote does not touch the token


def test_promote_respects_its_limit(conn: Connector, queue: str) -> None:
    ids = [jobs.enqueue(conn, queue, str(i)) for i in range(5)]
    for _ in ids:
        got = jobs.claim(conn, queue, 30_000)
        jobs.retry(conn, queue, got.id, got.attempts, "boom", 1, 3)
    wait_until_due(conn, queue, "schedule")
    first = jobs.promote(conn, queue, limit=2)
    assert len(first) == 2
    assert sorted(first + jobs.promote(conn, queue)) == sorted(ids)


def test_retry_at_cap_buries_in_dead(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "work")
    got = jobs.claim(conn, queue, 30_000)
    t0 = server_ms(conn)
    assert jobs.retry(conn, queue, job_id, got.attempts, "fatal", 1_000, 1) == jobs.DEAD
    t1 = server_ms(conn)
    snap = snapshots.snapshot(conn, queue)
    assert only_in(snap, job_id) == ["dead"]
    assert snap.rows[job_id] == {"state": "dead", "attempts": "1", "payload": "work", "last_error": "fatal"}
    assert t0 <= snap.sets["dead"][job_id] <= t1  # the score is the time of death


def test_retry_with_record_records_only_a_death(conn: Connector, queue: str) -> None:
    stream = keyspace.queue_key(queue, "stream:completions")
    job_id = jobs.enqueue(conn, queue, "work")
    got = jobs.claim(conn, queue, 30_000)
    assert jobs.retry(conn, queue, job_id, got.attempts, "once", 1, 2, record=True) == jobs.SCHEDULED
    assert conn.client.xlen(stream) == 0  # a parked job has not settled
    wait_until_due(conn, queue, "schedule")
    jobs.promote(conn, queue)
    got = jobs.claim(conn, queue, 30_000)
    assert jobs.retry(conn, queue, job_id, got.attempts, "twice", 1, 2, record=True) == jobs.DEAD
    entries = [e[1] for e in conn.client.xrange(stream)]
    assert entries == [{"id": job_id, "outcome": "dead", "attempts": "2", "error": "twice"}]


def test_snapshot_diff_names_the_claim(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "work")
    before = snapshots.snapshot(conn, queue)
    jobs.claim(conn, queue, 30_000)
    after = snapshots.snapshot(conn, queue)
    words = [str(c) for c in snapshots.diff(before, after)]
    assert f"{job_id}: pending → active" in words
    assert f"{job_id}.attempts: 0 → 1" in words
    assert f"{job_id}.state: pending → active" in words
    assert snapshots.diff(after, snapshots.snapshot(conn, queue)) == []


def test_snapshot_is_read_only_and_complete(conn: Connector, queue: str) -> None:
    jobs.enqueue(conn, queue, "a")
    snap = snapshots.snapshot(conn, queue)
    assert set(snap.sets) == set(keyspace.SETS)
    assert snap.sizes() == {"pending": 1, "active": 0, "schedule": 0, "dead": 0}
    assert abs(snap.now_ms - server_ms(conn)) < 60_000  # the server's clock, not an epoch of its own
    assert snap.total() == 1 and not snap.paused


def test_bytes_payload_round_trips(conn: Connector, queue: str) -> None:
    raw = b"\xff\x00 not utf-8 \xfe"
    job_id = jobs.enqueue(conn, queue, raw)
    got = jobs.claim(conn, queue, 30_000)
    assert got is not None and got.id == job_id
    # a payload that is not UTF-8 comes back as a str that encodes to the same bytes
    assert got.payload.encode("utf-8", "surrogateescape") == raw
    assert jobs.complete(conn, queue, job_id, got.attempts, got.payload) == jobs.OK


def test_unicode_payload_round_trips(conn: Connector, queue: str) -> None:
    jobs.enqueue(conn, queue, "café ☕ 队列")
    assert jobs.claim(conn, queue, 30_000).payload == "café ☕ 队列"
