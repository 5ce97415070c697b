"""Lifecycle controls: pause/resume, reprocess, remove, trim_dead, and the counted stall sweep."""

from __future__ import annotations

import pytest
from conftest import state, wait_until_due

from echomq_teach import Connector, WrongState, jobs, keyspace, snapshots, stalled


def make_dead(conn: Connector, queue: str, payload: str = "w", reason: str = "fatal") -> str:
    job_id = jobs.enqueue(conn, queue, payload)
    got = jobs.claim(conn, queue, 30_000)
    assert got is not None and got.id == job_id
    assert jobs.retry(conn, queue, job_id, got.attempts, reason, 1, 1) == jobs.DEAD
    return job_id


# -- pause / resume -----------------------------------------------------------------------------------
def test_pause_answers_empty_and_leaves_pending_untouched(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "held")
    assert jobs.pause(conn, queue) is True
    assert jobs.paused(conn, queue)
    before = state(conn, queue)
    assert before["paused"] is True
    conn.clear_trace()
    assert jobs.claim(conn, queue, 30_000) is None
    # the flag is read host-side in its own round trip, and the script is never sent
    assert [e.line for e in conn.trace] == [f"EXISTS emq:{{{queue}}}:paused"]
    assert state(conn, queue) == before
    assert snapshots.snapshot(conn, queue).sets["pending"] == {job_id: 0}


def test_pause_is_a_flag_key(conn: Connector, queue: str) -> None:
    jobs.pause(conn, queue)
    assert conn.client.exists(keyspace.queue_key(queue, "paused")) == 1
    assert jobs.pause(conn, queue) is False  # already paused
    assert jobs.resume(conn, queue) is True
    assert conn.client.exists(keyspace.queue_key(queue, "paused")) == 0
    assert jobs.resume(conn, queue) is False  # not paused
    assert not jobs.paused(conn, queue)


def test_resume_lets_claims_through(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "held")
    jobs.pause(conn, queue)
    assert jobs.claim(conn, queue, 30_000) is None
    jobs.resume(conn, queue)
    assert jobs.claim(conn, queue, 30_000) == jobs.Claimed(job_id, "held", 1)


def test_pause_does_not_stop_settling(conn: Connector, queue: str) -> None:
    # a paused queue holds new claims; a job already out can still finish
    jobs.enqueue(conn, queue, "w")
    got = jobs.claim(conn, queue, 30_000)
    jobs.pause(conn, queue)
    assert jobs.complete(conn, queue, got.id, got.attempts) == jobs.OK


def test_pause_is_per_queue(conn: Connector, queue: str) -> None:
    other = queue + "-other"
    jobs.enqueue(conn, other, "free")
    jobs.pause(conn, queue)
    assert jobs.claim(conn, other, 30_000) is not None


# -- reprocess -----------------------------------------------------------------------------------------
def test_reprocess_returns_a_dead_job_to_pending_for_a_new_life(conn: Connector, queue: str) -> None:
    job_id = make_dead(conn, queue, reason="it broke")
    assert jobs.reprocess(conn, queue, job_id) == jobs.OK
    snap = snapshots.snapshot(conn, queue)
    assert snap.where(job_id) == ["pending"]
    assert snap.rows[job_id]["state"] == "pending"
    # D-5 in docs/decisions.md: attempts is the token's counter and is not reset (it was "0" before the fence held);
    # prior_attempts marks where this life starts, so the cap counts this life's claims afresh
    assert snap.rows[job_id]["attempts"] == "1" and snap.rows[job_id]["prior_attempts"] == "1"
    assert snap.rows[job_id]["last_error"] == "it broke"  # kept as the record of why it died
    assert jobs.claim(conn, queue, 30_000) == jobs.Claimed(job_id, "w", 2)


def test_reprocess_clears_the_stall_count(conn: Connector, queue: str) -> None:
    jobs.enqueue(conn, queue, "w")
    for _ in range(2):
        got = jobs.claim(conn, queue, 20)
        wait_until_due(conn, queue, "active")
        stalled.check(conn, queue, max_stalled=1)
    snap = snapshots.snapshot(conn, queue)
    assert snap.where(got.id) == ["dead"] and snap.rows[got.id]["stalled"] == "2"
    jobs.reprocess(conn, queue, got.id)
    assert "stalled" not in jobs.row(conn, queue, got.id)


def test_reprocess_of_a_live_job_is_refused(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "w")
    before = state(conn, queue)
    with pytest.raises(WrongState, match="not dead"):
        jobs.reprocess(conn, queue, job_id)
    assert state(conn, queue) == before


# -- remove --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["pending", "active", "schedule", "dead"])
def test_remove_deletes_one_job_wherever_it_is(conn: Connector, queue: str, where: str) -> None:
    keep = jobs.enqueue(conn, queue, "stays")
    job_id = jobs.enqueue(conn, queue, "goes")
    if where != "pending":
        jobs.claim(conn, queue, 30_000)  # the first claim takes `keep`, the older mint
        got = jobs.claim(conn, queue, 30_000)
        assert got.id == job_id
        if where == "schedule":
            jobs.retry(conn, queue, job_id, got.attempts, "x", 60_000, 3)
        elif where == "dead":
            jobs.retry(conn, queue, job_id, got.attempts, "x", 1, 1)
    assert snapshots.snapshot(conn, queue).where(job_id) == [where]
    assert jobs.remove(conn, queue, job_id) is True
    snap = snapshots.snapshot(conn, queue)
    assert job_id not in snap.ids()
    assert keep in snap.ids()
    assert jobs.remove(conn, queue, job_id) is False  # nothing left to remove


def test_remove_takes_a_parents_flow_keys(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "parent-like")
    conn.client.set(keyspace.job_key(queue, job_id, "dependencies"), 2)
    conn.client.hset(keyspace.job_key(queue, job_id, "processed"), "JOBchild", "v")
    assert jobs.remove(conn, queue, job_id) is True
    snap = snapshots.snapshot(conn, queue)
    assert snap.counters == {} and snap.flow_hashes == {} and snap.ids() == set()


# -- trim_dead -----------------------------------------------------------------------------------------
def test_trim_dead_keeps_the_newest_n_and_deletes_the_rest(conn: Connector, queue: str) -> None:
    dead = [make_dead(conn, queue, payload=str(i)) for i in range(5)]
    alive = jobs.enqueue(conn, queue, "alive")
    deleted = jobs.trim_dead(conn, queue, 2)
    # oldest death first; deaths in one ms tie and fall back to id order, which is mint order here
    assert deleted == dead[:3]
    snap = snapshots.snapshot(conn, queue)
    assert snap.dead == dead[3:]
    # trimming deletes, it does not archive: the rows are gone
    for job_id in dead[:3]:
        assert job_id not in snap.rows
    assert alive in snap.rows
    assert jobs.trim_dead(conn, queue, 2) == []


def test_trim_dead_to_zero(conn: Connector, queue: str) -> None:
    dead = [make_dead(conn, queue) for _ in range(3)]
    assert sorted(jobs.trim_dead(conn, queue, 0)) == sorted(dead)
    assert snapshots.snapshot(conn, queue).ids() == set()


# -- the counted stall sweep ---------------------------------------------------------------------------
def test_stalled_check_counts_each_lapse_and_buries_past_max(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "w")
    max_stalled = 2
    for lapse in (1, 2):
        got = jobs.claim(conn, queue, 20)
        assert got.attempts == lapse
        wait_until_due(conn, queue, "active")
        report = stalled.check(conn, queue, max_stalled)
        assert report == stalled.StallReport([job_id], [])
        snap = snapshots.snapshot(conn, queue)
        assert snap.where(job_id) == ["pending"]
        assert snap.rows[job_id]["stalled"] == str(lapse)
        assert snap.rows[job_id]["state"] == "pending"
    jobs.claim(conn, queue, 20)
    wait_until_due(conn, queue, "active")
    assert stalled.check(conn, queue, max_stalled) == stalled.StallReport([], [job_id])
    snap = snapshots.snapshot(conn, queue)
    assert snap.where(job_id) == ["dead"]
    assert snap.rows[job_id]["state"] == "dead"
    assert snap.rows[job_id]["last_error"] == "stalled"
    assert snap.rows[job_id]["stalled"] == "3"


def test_stalled_check_leaves_live_leases(conn: Connector, queue: str) -> None:
    jobs.enqueue(conn, queue, "w")
    jobs.claim(conn, queue, 30_000)
    before = state(conn, queue)
    assert stalled.check(conn, queue) == stalled.StallReport([], [])
    assert state(conn, queue) == before


def test_stalled_check_default_buries_on_the_second_stall(conn: Connector, queue: str) -> None:
    assert stalled.DEFAULT_MAX_STALLED == 1
    job_id = jobs.enqueue(conn, queue, "w")
    jobs.claim(conn, queue, 20)
    wait_until_due(conn, queue, "active")
    assert stalled.check(conn, queue).requeued == [job_id]
    jobs.claim(conn, queue, 20)
    wait_until_due(conn, queue, "active")
    assert stalled.check(conn, queue).dead == [job_id]


def test_drop_deletes_one_queue_whole_and_nothing_else(conn, queue):
    from echomq_teach import flows

    other = queue + "-other"
    glob = queue + "*[x]"  # glob characters in a name match only themselves
    for q in (queue, other, glob):
        jobs.enqueue(conn, q, "x")
        flows.add(conn, q, "parent", ["child"])
        c = jobs.claim(conn, q, 30_000)
        jobs.complete(conn, q, c.id, c.attempts, record=True)
    kept = {q: state(conn, q) for q in (other, queue)}
    assert jobs.drop(conn, glob) > 0
    assert snapshots.snapshot(conn, glob).state_only() == snapshots.snapshot(conn, glob + "-never").state_only()
    assert {q: state(conn, q) for q in (other, queue)} == kept
    assert jobs.drop(conn, queue) >= 5  # pending, row, parent row, :dependencies, :processed, metric, stream
    assert snapshots.snapshot(conn, queue).total() == 0 and snapshots.snapshot(conn, queue).rows == {}
    assert conn.client.get("{emq}:version") == "echomq:4.0.0"
    assert jobs.drop(conn, queue) == 0
