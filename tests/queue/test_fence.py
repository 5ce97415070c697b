"""D-5 in docs/decisions.md: a job's fencing token never repeats while its row lives, on both executors.

The token is the row's ``attempts`` after the claim's HINCRBY (the ``@claim2``
body is the page's own). A reprocess therefore keeps ``attempts`` and records
where the new life starts (``prior_attempts``); the cap counts only this life's
claims, so a reprocessed job still gets its full number of attempts.
"""

from __future__ import annotations

import time

import pytest
from native_support import force

from echomq_teach import jobs, snapshots, stalled

LEASE = 30_000


@pytest.fixture
def c(either):
    return either


def test_the_reprocess_zombie_is_stale(c, queue):
    # the reproduction: worker A's token 1 from the first life must not settle the third claim
    job_id = jobs.enqueue(c, queue, "w")
    a = jobs.claim(c, queue, 50)
    assert a.attempts == 1
    time.sleep(0.08)  # past A's lease
    assert jobs.reap(c, queue) == [job_id]
    b = jobs.claim(c, queue, LEASE)
    assert b.attempts == 2
    assert jobs.retry(c, queue, job_id, b.attempts, "boom", 1_000, 2) == jobs.DEAD
    assert jobs.reprocess(c, queue, job_id) == jobs.OK
    cc = jobs.claim(c, queue, LEASE)
    assert cc.id == job_id and cc.attempts == 3  # a new token, not token 1 again
    assert jobs.complete(c, queue, job_id, a.attempts, "zombie") == jobs.STALE
    assert jobs.complete(c, queue, job_id, b.attempts, "zombie") == jobs.STALE
    assert snapshots.snapshot(c, queue).where(job_id) == ["active"]
    assert jobs.complete(c, queue, job_id, cc.attempts, "done") == jobs.OK


def test_a_reprocessed_job_gets_its_full_attempts_again(c, queue):
    job_id = jobs.enqueue(c, queue, "w")
    for _ in range(2):  # the first life: two claims, the cap is 2
        got = jobs.claim(c, queue, LEASE)
        outcome = jobs.retry(c, queue, job_id, got.attempts, "boom", 60_000, 2)
        if outcome == jobs.SCHEDULED:
            force(c.client, queue, "schedule", job_id, 1)
            assert jobs.promote(c, queue) == [job_id]
    assert outcome == jobs.DEAD
    jobs.reprocess(c, queue, job_id)
    row = jobs.row(c, queue, job_id)
    assert (row["attempts"], row["prior_attempts"], row["state"]) == ("2", "2", "pending")
    # the second life: again two claims before the cap, with tokens 3 and 4
    got = jobs.claim(c, queue, LEASE)
    assert got.attempts == 3
    assert jobs.retry(c, queue, job_id, got.attempts, "again", 60_000, 2) == jobs.SCHEDULED
    force(c.client, queue, "schedule", job_id, 1)
    jobs.promote(c, queue)
    got = jobs.claim(c, queue, LEASE)
    assert got.attempts == 4
    assert jobs.retry(c, queue, job_id, got.attempts, "again", 60_000, 2) == jobs.DEAD


def test_tokens_never_repeat_across_lives(c, queue):
    job_id = jobs.enqueue(c, queue, "w")
    tokens = []
    for life in range(4):
        got = jobs.claim(c, queue, 1)  # a lease that lapses at once: the stall sweep takes it
        tokens.append(got.attempts)
        time.sleep(0.005)
        report = stalled.check(c, queue, max_stalled=2)
        assert report.requeued == [job_id]
        got = jobs.claim(c, queue, LEASE)
        tokens.append(got.attempts)
        assert jobs.retry(c, queue, job_id, got.attempts, f"life {life}", 1_000, 2) == jobs.DEAD
        jobs.reprocess(c, queue, job_id)
    assert tokens == list(range(1, 9))


def test_a_custom_id_reused_after_its_row_was_deleted_starts_again_at_token_1(c, queue):
    # the limit the fence cannot cover (documented on jobs.enqueue and jobs.reprocess): once the row
    # is gone, nothing on the node remembers the old tokens, and the new life's first claim is 1 again
    jobs.enqueue(c, queue, "first life", job_id="REUSED")
    old = jobs.claim(c, queue, LEASE)
    assert jobs.complete(c, queue, "REUSED", old.attempts, "done") == jobs.OK  # the row is deleted
    jobs.enqueue(c, queue, "second life", job_id="REUSED")
    new = jobs.claim(c, queue, LEASE)
    assert new.attempts == old.attempts == 1
    # a late worker holding the first life's token 1 would settle the second life
    assert jobs.complete(c, queue, "REUSED", old.attempts, "from the first life") == jobs.OK
