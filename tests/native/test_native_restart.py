"""The native stall sweep exempts a lease granted before a server restart (durable native node).

A lease's lease_epoch is the run_id of the server that granted it. After a
restart the run_id is new: the old worker is gone with the old process, so its
lapsed lease returns to pending without counting a stall. A lease taken after
the restart is counted as usual.
"""

from __future__ import annotations

import pytest
from native_support import force

from echomq_teach import jobs, snapshots, stalled
from echomq_teach.keyspace import base, job_key, queue_key
from echomq_teach.nodes.local import LocalNode

LEASE = 30_000
Q = "restart"


@pytest.fixture
def durable_native():
    n = LocalNode(native=True, durable=True)
    yield n
    n.stop()


def test_a_lease_from_before_the_restart_is_exempt_and_one_after_is_counted(durable_native):
    n = durable_native
    c = n.connector()
    for job_id in ("A0", "A1", "B0", "B1"):
        jobs.enqueue(c, Q, job_id.lower(), job_id=job_id)
    before = [jobs.claim(c, Q, LEASE), jobs.claim(c, Q, LEASE)]  # A0, A1
    # A1 has stalled once before: were it counted now, max_stalled=1 would bury it
    c.client.hset(job_key(Q, "A1"), "stalled", 1)
    old_run_id = n.run_id
    assert {jobs.row(c, Q, g.id)["lease_epoch"] for g in before} == {old_run_id}
    c.close()

    n.restart()
    assert n.run_id != old_run_id
    c = n.connector()
    snap = snapshots.snapshot(c, Q)
    assert snap.active == ["A0", "A1"]  # the AOF kept the leases and their epochs
    after = [jobs.claim(c, Q, LEASE), jobs.claim(c, Q, LEASE)]  # B0, B1
    assert [g.id for g in after] == ["B0", "B1"]
    c.client.hset(job_key(Q, "B1"), "stalled", 1)
    assert jobs.row(c, Q, "B0")["lease_epoch"] == n.run_id
    for score, job_id in enumerate(["A0", "A1", "B0", "B1"], start=1):
        force(c.client, Q, "active", job_id, score)  # every lease lapsed, in this order

    report = stalled.check(c, Q, max_stalled=1)
    assert c.last()[0].line.startswith("EMQ.STALLED.CHECK 4 ")
    # the pre-restart leases are exempt, even A1 at its cap; B1's counted stall buries it
    assert report == stalled.StallReport(["A0", "A1", "B0"], ["B1"])
    snap = snapshots.snapshot(c, Q)
    assert "stalled" not in snap.rows["A0"] and snap.rows["A1"]["stalled"] == "1"  # unchanged
    assert snap.rows["B0"]["stalled"] == "1" and snap.rows["B1"]["stalled"] == "2"
    assert snap.pending == ["A0", "A1", "B0"] and snap.dead == ["B1"]
    assert snap.rows["B1"]["last_error"] == "stalled"
    c.close()


def test_the_script_counts_a_pre_restart_lease(durable_native):
    # the contrast: @stalled_check has no epoch to read, so the same lapse is a stall
    n = durable_native
    c = n.connector()
    jobs.enqueue(c, Q, "s", job_id="S")
    jobs.claim(c, Q, LEASE)
    c.close()
    n.restart()
    c = n.connector()
    force(c.client, Q, "active", "S", 1)
    keys = [queue_key(Q, s) for s in ("active", "pending", "dead")] + [base(Q)]
    assert c.eval("stalled_check", keys, [1]) == [["S"], []]
    assert jobs.row(c, Q, "S")["stalled"] == "1"
    c.close()


def test_a_pre_restart_job_claimed_again_by_claim2_is_counted(durable_native):
    # issue 13 item 4: the lease_epoch of a native claim ends with its lease, so a later @claim2
    # lease (which writes no epoch) is counted by the native sweep like any other
    n = durable_native
    c = n.connector()
    jobs.enqueue(c, Q, "s", job_id="S")
    jobs.claim(c, Q, LEASE)  # EMQ.CLAIM: lease_epoch = this run_id
    c.close()
    n.restart()
    c = n.connector()
    force(c.client, Q, "active", "S", 1)
    assert stalled.check(c, Q, max_stalled=1) == stalled.StallReport(["S"], [])  # exempt: not counted
    row = jobs.row(c, Q, "S")
    assert "stalled" not in row and "lease_epoch" not in row
    keys = [queue_key(Q, "pending"), queue_key(Q, "active"), base(Q)]
    assert c.eval("claim2", keys, [LEASE])[0] == "S"  # the script's claim, on the native node
    force(c.client, Q, "active", "S", 2)
    assert stalled.check(c, Q, max_stalled=1) == stalled.StallReport(["S"], [])
    assert jobs.row(c, Q, "S")["stalled"] == "1"  # counted this time
    assert c.eval("claim2", keys, [LEASE])[0] == "S"
    force(c.client, Q, "active", "S", 3)
    assert stalled.check(c, Q, max_stalled=1) == stalled.StallReport([], ["S"])  # and buried past the cap
    c.close()
