"""The failure fork and recovery: retry → schedule → promote → claim → dead; the lease, reap, the token."""

from __future__ import annotations

from conftest import state, wait_until_due

from echomq_teach import Connector, jobs, snapshots

LEASE_MS = 25  # tiny leases keep the lapse tests fast


def lapsed_claim(conn: Connector, queue: str, payload: str = "work") -> jobs.Claimed:
    """A job claimed under a tiny lease by a worker that then 'crashed', its lease now past."""
    jobs.enqueue(conn, queue, payload)
    got = jobs.claim(conn, queue, LEASE_MS)
    assert got is not None
    wait_until_due(conn, queue, "active")
    return got


# -- the failure fork ---------------------------------------------------------------------------------
def test_failure_fork_retry_schedule_promote_claim_dead(conn: Connector, queue: str) -> None:
    cap = 2
    job_id = jobs.enqueue(conn, queue, "flaky")
    first = jobs.claim(conn, queue, 30_000)
    assert first == jobs.Claimed(job_id, "flaky", 1)
    assert jobs.retry(conn, queue, job_id, first.attempts, "first failure", 1, cap) == jobs.SCHEDULED
    snap = snapshots.snapshot(conn, queue)
    assert snap.where(job_id) == ["schedule"] and snap.state(job_id) == "scheduled"
    # the schedule is a visibility fence: nothing to claim until a promote
    assert jobs.claim(conn, queue, 30_000) is None
    wait_until_due(conn, queue, "schedule")
    assert jobs.claim(conn, queue, 30_000) is None  # due, but nothing moves on its own
    assert jobs.promote(conn, queue) == [job_id]
    assert snapshots.snapshot(conn, queue).where(job_id) == ["pending"]
    second = jobs.claim(conn, queue, 30_000)
    assert second == jobs.Claimed(job_id, "flaky", 2)  # the next claim increments the token again
    assert jobs.retry(conn, queue, job_id, second.attempts, "final failure", 1, cap) == jobs.DEAD
    snap = snapshots.snapshot(conn, queue)
    assert snap.where(job_id) == ["dead"]
    row = snap.rows[job_id]
    assert row["state"] == "dead"
    assert row["last_error"] == "final failure"
    assert int(row["attempts"]) == cap


def test_default_cap_is_three_attempts(conn: Connector, queue: str) -> None:
    assert jobs.DEFAULT_MAX_ATTEMPTS == 3 and jobs.DEFAULT_RETRY_DELAY_MS == 1_000
    job_id = jobs.enqueue(conn, queue, "w")
    outcomes = []
    for _ in range(3):
        got = jobs.claim(conn, queue, 30_000)
        outcomes.append(jobs.retry(conn, queue, job_id, got.attempts, f"fail {got.attempts}", 1))
        wait_until_due(conn, queue, "schedule")
        jobs.promote(conn, queue)
    assert outcomes == [jobs.SCHEDULED, jobs.SCHEDULED, jobs.DEAD]
    assert jobs.row(conn, queue, job_id)["attempts"] == "3"


# -- recovery -----------------------------------------------------------------------------------------
def test_lapsed_lease_stays_in_active_until_reap(conn: Connector, queue: str) -> None:
    got = lapsed_claim(conn, queue)
    snap = snapshots.snapshot(conn, queue)
    assert snap.relative("active", got.id) < 0  # the clock has passed the deadline
    assert snap.where(got.id) == ["active"] and snap.state(got.id) == "active"
    # nothing moves on its own: a promote or a claim does not recover it
    assert jobs.promote(conn, queue) == []
    assert jobs.claim(conn, queue, 30_000) is None
    assert snapshots.snapshot(conn, queue).where(got.id) == ["active"]
    assert jobs.reap(conn, queue) == [got.id]
    snap = snapshots.snapshot(conn, queue)
    assert snap.sets["pending"] == {got.id: 0}
    assert snap.rows[got.id]["state"] == "pending"
    assert snap.rows[got.id]["attempts"] == "1"  # reap leaves the token; the next claim moves it


def test_reap_leaves_a_live_lease(conn: Connector, queue: str) -> None:
    jobs.enqueue(conn, queue, "w")
    jobs.claim(conn, queue, 30_000)
    before = state(conn, queue)
    assert jobs.reap(conn, queue) == []
    assert state(conn, queue) == before


def test_reap_moves_at_most_100_per_call(conn: Connector, queue: str) -> None:
    total = 130
    for i in range(total):
        jobs.enqueue(conn, queue, str(i))
    claimed = [jobs.claim(conn, queue, LEASE_MS) for _ in range(total)]
    assert all(claimed)
    wait_until_due(conn, queue, "active")
    first = jobs.reap(conn, queue)
    assert len(first) == 100
    snap = snapshots.snapshot(conn, queue)
    assert len(snap.pending) == 100 and len(snap.active) == total - 100
    # earliest deadline first; claims ran in id order, so (deadline, id) order is claim order
    assert first == [c.id for c in claimed[:100]]
    second = jobs.reap(conn, queue)
    assert second == [c.id for c in claimed[100:]]
    assert jobs.reap(conn, queue) == []


def test_late_completion_after_the_next_claim_is_stale(conn: Connector, queue: str) -> None:
    crashed = lapsed_claim(conn, queue)
    assert jobs.reap(conn, queue) == [crashed.id]
    second = jobs.claim(conn, queue, 30_000)
    assert second == jobs.Claimed(crashed.id, "work", 2)
    before = state(conn, queue)
    # the crashed worker wakes up and tries to finish with its old token
    assert jobs.complete(conn, queue, crashed.id, crashed.attempts, "late") == jobs.STALE
    assert jobs.retry(conn, queue, crashed.id, crashed.attempts, "late", 1, 3) == jobs.STALE
    assert state(conn, queue) == before
    # the live holder finishes normally
    assert jobs.complete(conn, queue, second.id, second.attempts) == jobs.OK


def test_late_completion_after_reap_before_any_claim_is_stale(conn: Connector, queue: str) -> None:
    crashed = lapsed_claim(conn, queue)
    jobs.reap(conn, queue)
    before = state(conn, queue)
    # the token still matches, but the row is pending again: D-3 in docs/decisions.md refuses it
    assert jobs.complete(conn, queue, crashed.id, crashed.attempts) == jobs.STALE
    assert state(conn, queue) == before


def test_lapsed_but_unreaped_lease_may_still_complete(conn: Connector, queue: str) -> None:
    # D-3 in docs/decisions.md: the fence is the token and the active state, not the clock
    crashed = lapsed_claim(conn, queue)
    before = snapshots.snapshot(conn, queue)
    assert before.relative("active", crashed.id) < 0
    assert jobs.complete(conn, queue, crashed.id, crashed.attempts, "just in time") == jobs.OK
    after = snapshots.snapshot(conn, queue)
    assert after.ids() == set()
    assert after.completed == before.completed + 1
    assert jobs.reap(conn, queue) == []  # nothing left to recover


def test_lapsed_but_unreaped_lease_may_still_retry(conn: Connector, queue: str) -> None:
    crashed = lapsed_claim(conn, queue)
    assert jobs.retry(conn, queue, crashed.id, crashed.attempts, "slow failure", 60_000, 3) == jobs.SCHEDULED
    assert snapshots.snapshot(conn, queue).where(crashed.id) == ["schedule"]


def test_reap_of_a_removed_row_leaves_no_ghost(conn: Connector, queue: str) -> None:
    crashed = lapsed_claim(conn, queue)
    # the row goes but the active entry stays (a teaching edge: the reap must not mint a ghost in pending)
    conn.client.delete(f"emq:{{{queue}}}:job:{crashed.id}")
    assert jobs.reap(conn, queue) == [crashed.id]
    snap = snapshots.snapshot(conn, queue)
    assert snap.ids() == set()
