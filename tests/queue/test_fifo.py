"""FIFO by mint order: every pending score is 0, so the lowest id, the oldest mint, is claimed first."""

from __future__ import annotations

from echomq_teach import Connector, ids, jobs, snapshots


def test_claim_order_is_enqueue_order(conn: Connector, queue: str) -> None:
    enqueued = [jobs.enqueue(conn, queue, f"job {i}") for i in range(300)]
    claimed = [jobs.claim(conn, queue, 30_000) for _ in enqueued]
    assert [c.id for c in claimed] == enqueued
    assert [c.payload for c in claimed] == [f"job {i}" for i in range(300)]
    assert jobs.claim(conn, queue, 30_000) is None


def test_ids_minted_in_one_millisecond_claim_in_mint_order(conn: Connector, queue: str) -> None:
    # mint first (hundreds land in one millisecond), then enqueue in a shuffled order:
    # the pending set's order comes from the ids, not from when they were added
    minted = [ids.mint() for _ in range(500)]
    per_ms: dict[str, int] = {}
    for m in minted:
        per_ms[m[3:10]] = per_ms.get(m[3:10], 0) + 1
    assert max(per_ms.values()) > 1, "expected several ids in one millisecond"
    shuffled = minted[1::2] + minted[::2]
    for job_id in reversed(shuffled):
        jobs.enqueue(conn, queue, job_id, job_id=job_id)
    snap = snapshots.snapshot(conn, queue)
    assert set(snap.sets["pending"].values()) == {0}
    assert snap.pending == minted  # ZRANGE of score-0 members is lexicographic: mint order
    claimed = [jobs.claim(conn, queue, 30_000).id for _ in minted]
    assert claimed == minted


def test_fifo_survives_a_retry_round(conn: Connector, queue: str) -> None:
    # a promoted job rejoins pending at score 0 by its id: it goes back in front of younger mints
    first = jobs.enqueue(conn, queue, "first")
    got = jobs.claim(conn, queue, 30_000)
    jobs.retry(conn, queue, got.id, got.attempts, "x", 1, 3)
    later = [jobs.enqueue(conn, queue, str(i)) for i in range(3)]
    for _ in range(200):
        if jobs.promote(conn, queue):
            break
    assert snapshots.snapshot(conn, queue).pending == [first, *later]
    assert jobs.claim(conn, queue, 30_000).id == first
