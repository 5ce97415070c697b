"""The ghost guard: a pending id with no row is consumed by the pop, answers empty, and mints nothing."""

from __future__ import annotations

from conftest import state

from echomq_teach import Connector, jobs, keyspace, snapshots

GHOST = "JOB0000000000g"  # sorts before every minted id, so it is the head


def add_ghost(conn: Connector, queue: str, set_name: str = "pending", score: int = 0) -> None:
    conn.client.zadd(keyspace.queue_key(queue, set_name), {GHOST: score})


def test_ghost_head_is_consumed_and_answers_none(conn: Connector, queue: str) -> None:
    add_ghost(conn, queue)
    assert jobs.claim(conn, queue, 30_000) is None
    snap = snapshots.snapshot(conn, queue)
    assert snap.ids() == set()  # gone from pending, not in active, no row
    assert conn.client.exists(keyspace.job_key(queue, GHOST)) == 0
    assert snap.completed == 0


def test_ghost_answers_none_even_with_real_jobs_behind_it(conn: Connector, queue: str) -> None:
    real = jobs.enqueue(conn, queue, "real")
    add_ghost(conn, queue)
    assert snapshots.snapshot(conn, queue).pending == [GHOST, real]
    before = state(conn, queue)
    # the claim pops the ghost and stops there: one claim, one pop
    assert jobs.claim(conn, queue, 30_000) is None
    after = state(conn, queue)
    assert after["sets"]["pending"] == {real: 0}
    assert after["rows"] == before["rows"]  # no row minted, the real one untouched
    assert jobs.claim(conn, queue, 30_000) == jobs.Claimed(real, "real", 1)


def test_ghost_claim_mints_no_row_fields(conn: Connector, queue: str) -> None:
    # HINCRBY on a missing hash would create it: the guard must run before it
    add_ghost(conn, queue)
    jobs.claim(conn, queue, 30_000)
    assert conn.client.hgetall(keyspace.job_key(queue, GHOST)) == {}
    assert conn.client.zscore(keyspace.queue_key(queue, "active"), GHOST) is None


def test_promote_of_a_ghost_leaves_nothing_in_pending(conn: Connector, queue: str) -> None:
    add_ghost(conn, queue, "schedule", 0)
    assert jobs.promote(conn, queue) == [GHOST]
    assert snapshots.snapshot(conn, queue).ids() == set()


def test_stalled_check_of_a_ghost_leaves_nothing(conn: Connector, queue: str) -> None:
    from echomq_teach import stalled

    add_ghost(conn, queue, "active", 0)
    assert stalled.check(conn, queue) == stalled.StallReport([], [])
    assert snapshots.snapshot(conn, queue).ids() == set()
