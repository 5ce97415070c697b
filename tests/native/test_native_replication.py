"""Native writes replicate as effects: a replica without the module ends byte-for-byte equal.

EMQ.* commands send each write with its computed values as literals (the lease
deadline, the time of death, the run_id), never the command itself, so a replica
that has never heard of trafikey applies them and its DEBUG DIGEST matches.
"""

from __future__ import annotations

import pytest
from native_support import aof_commands, digest, force, transactions, wait_replicated

from echomq_teach import flows, jobs, stalled
from echomq_teach.keyspace import base, job_key, queue_key
from echomq_teach.nodes.local import LocalNode

LEASE = 30_000
Q = "repl"


@pytest.fixture(scope="module")
def pair():
    # no diskless-sync delay: the replica's first full sync starts at once
    primary = LocalNode(native=True, extra_config={"repl-diskless-sync-delay": "0"})
    replica = None
    try:
        replica = LocalNode(replica_of=primary)
        yield primary, replica
    finally:
        if replica is not None:
            replica.stop()
        primary.stop()


def test_the_replica_does_not_load_the_module(pair):
    primary, replica = pair
    rc, pc = replica.client(), primary.client()
    try:
        assert not replica.native and replica.module_path is False
        # Valkey 9 lists its Lua engine as a module too: no other one is loaded here
        assert [m["name"] for m in rc.module_list()] == ["lua"]
        assert rc.command_list(module="trafikey") == []
        assert sorted(n.lower() for n in pc.command_list(module="trafikey")) == [
            "emq.claim",
            "emq.claim.many",
            "emq.complete",
            "emq.fail",
            "emq.stalled.check",
        ]
        assert rc.info("replication")["role"] == "slave"
    finally:
        rc.close()
        pc.close()


def test_mixed_native_and_scripted_run_leaves_the_replica_equal(pair):
    primary, replica = pair
    c = primary.connector()  # wire 6: the kit sends EMQ.* where a twin exists
    p, r = primary.client(), replica.client()
    try:
        for i in range(8):
            jobs.enqueue(c, Q, f"job {i}", job_id=f"R{i:02d}")
        sent: list[str] = []

        def note() -> None:
            entry = c.last()[0]
            sent.append(entry.script or entry.line.split()[0])

        a = jobs.claim(c, Q, LEASE)  # EMQ.CLAIM: deadline and lease_epoch as literals
        note()
        b = c.eval("claim2", [queue_key(Q, "pending"), queue_key(Q, "active"), base(Q)], [LEASE])  # @claim2
        note()
        assert jobs.complete(c, Q, a.id, a.attempts, "done", record=True) == jobs.OK  # EMQ.COMPLETE with XADD
        note()
        assert jobs.retry(c, Q, b[0], int(b[2]), "again", 60_000, 3) == jobs.SCHEDULED  # EMQ.FAIL below the cap
        note()
        d = jobs.claim(c, Q, LEASE)
        assert jobs.retry(c, Q, d.id, d.attempts, "gone", 60_000, 1, record=True) == jobs.DEAD  # EMQ.FAIL at cap
        note()
        force(p, Q, "schedule", b[0], 3)
        assert jobs.promote(c, Q) == [b[0]]  # @promote
        note()
        lapse = [jobs.claim(c, Q, LEASE) for _ in range(3)]
        for score, got in enumerate(lapse, start=10):
            force(p, Q, "active", got.id, score)
        assert jobs.reap(c, Q) == [g.id for g in lapse]  # @reap
        note()
        lapse = [jobs.claim(c, Q, LEASE) for _ in range(2)]
        p.hset(job_key(Q, lapse[1].id), "stalled", 1)
        for score, got in enumerate(lapse, start=20):
            force(p, Q, "active", got.id, score)
        report = stalled.check(c, Q, 1)  # EMQ.STALLED.CHECK: one requeued, one buried
        note()
        assert report == stalled.StallReport([lapse[0].id], [lapse[1].id])
        live = jobs.claim(c, Q, LEASE)  # a lease still running when the replica is read
        # a flow child buried by the native sweep: its parent's policy writes replicate too
        flow = flows.add(c, "replflow", ("FP", "parent"), [("FC0", "a"), ("FC1", "b")], policy=["ignore", "fail"])
        kids = [jobs.claim(c, "replflow", LEASE) for _ in flow.child_ids]
        for score, got in enumerate(kids, start=30):
            p.hset(job_key("replflow", got.id), "stalled", 1)
            force(p, "replflow", "active", got.id, score)
        # recording: each burial's entry and the failed parent's, under the ids the primary chose
        assert stalled.check(c, "replflow", 1, record=True).dead == list(flow.child_ids)
        assert [f["outcome"] for _, f in p.xrange(queue_key("replflow", "stream:completions"))] == [
            "stalled", "stalled", "child_failed"
        ]
        note()
        assert sent == [
            "EMQ.CLAIM",
            "@claim2",
            "EMQ.COMPLETE",
            "EMQ.FAIL",
            "EMQ.FAIL",
            "@promote",
            "@reap",
            "EMQ.STALLED.CHECK",
            "EMQ.STALLED.CHECK",
        ]
        wait_replicated(p, r)
        assert p.dbsize() > 10 and digest(r) == digest(p)
        # the digest covers them, but say it plainly: the clock-made values arrived as they were
        for key in (queue_key(Q, "active"), queue_key(Q, "dead"), queue_key(Q, "schedule")):
            assert r.zrange(key, 0, -1, withscores=True) == p.zrange(key, 0, -1, withscores=True)
        assert r.hget(job_key(Q, live.id), "lease_epoch") == primary.run_id
        # issue 13 item 4: a lease_epoch goes with its lease (the sweep ended lapse[1]'s, burying it);
        # before the fix this test read the epoch of lapse[0], requeued by the sweep
        assert r.hget(job_key(Q, lapse[1].id), "lease_epoch") is None
    finally:
        p.close()
        r.close()
        c.close()


def test_native_effects_are_plain_commands_with_literal_values_one_transaction_each():
    """What a replica and the AOF get from each EMQ.* call: its effects, spelled out, in one MULTI/EXEC."""
    node = LocalNode(native=True, durable=True)
    try:
        c = node.connector()
        active = queue_key(Q, "active")
        for job_id in ("A", "B"):
            jobs.enqueue(c, Q, job_id.lower(), job_id=job_id)
        start = len(aof_commands(node.dir))
        c.clear_trace()
        a = jobs.claim(c, Q, LEASE)
        deadline_a = int(c.client.zscore(active, "A"))
        assert jobs.complete(c, Q, a.id, a.attempts, "done", record=True) == jobs.OK
        entry_id = c.client.xrange(queue_key(Q, "stream:completions"))[-1][0]
        b = jobs.claim(c, Q, LEASE)
        deadline_b = int(c.client.zscore(active, "B"))
        assert jobs.retry(c, Q, b.id, b.attempts, "boom", 5_000, 3) == jobs.SCHEDULED
        run_at = int(c.client.zscore(queue_key(Q, "schedule"), "B"))
        sent = [e.line.split()[0] for e in c.last(50) if e.line.startswith("EMQ.")]
        assert sent == ["EMQ.CLAIM", "EMQ.COMPLETE", "EMQ.CLAIM", "EMQ.FAIL"]

        written = aof_commands(node.dir)[start:]
        # no module command is written: a server without trafikey replays (or replicates) every line
        assert not [w for w in written if w[0].upper().startswith("EMQ.")]
        row_a, row_b = job_key(Q, "A"), job_key(Q, "B")

        def claimed(job_id: str, row: str, deadline: int) -> list[list[str]]:
            # the pop, the row's new token, state and epoch in one HSET, the deadline as a number
            return [
                ["ZREM", queue_key(Q, "pending"), job_id],
                ["HSET", row, "attempts", "1", "state", "active", "lease_epoch", node.run_id],
                ["ZADD", active, str(deadline), job_id],
            ]

        assert transactions(written) == [
            claimed("A", row_a, deadline_a),
            [  # EMQ.COMPLETE: the stream entry under the id the primary chose, the count as a number
                ["ZREM", active, "A"],
                [
                    "XADD",
                    queue_key(Q, "stream:completions"),
                    entry_id,
                    *"id A outcome completed attempts 1 result done".split(),
                ],
                ["DEL", row_a],
                ["HSET", queue_key(Q, "metrics:completed"), "count", "1"],
            ],
            claimed("B", row_b, deadline_b),
            [  # EMQ.FAIL below the cap: the lease's epoch goes, the run-at as a number
                ["ZREM", active, "B"],
                ["HDEL", row_b, "lease_epoch"],
                ["ZADD", queue_key(Q, "schedule"), str(run_at), "B"],
                ["HSET", row_b, "state", "scheduled", "last_error", "boom"],
            ],
        ]
    finally:
        node.stop()


def test_a_recording_sweep_replicates_each_entry_inside_its_transaction():
    """A flow child buried by a recording EMQ.STALLED.CHECK: the burial, its entry, the parent's death and
    the parent's entry are one MULTI/EXEC, each XADD under the id the primary chose."""
    node = LocalNode(native=True, durable=True)
    try:
        c = node.connector()
        flows.add(c, Q, ("P", "parent"), [("C", "child")])
        got = jobs.claim(c, Q, LEASE)
        c.client.hset(job_key(Q, "C"), "stalled", 1)
        force(c.client, Q, "active", "C", 5)
        start = len(aof_commands(node.dir))
        assert stalled.check(c, Q, 1, record=True).dead == ["C"]
        written = aof_commands(node.dir)[start:]
        assert not [w for w in written if w[0].upper().startswith("EMQ.")]
        dead = int(c.client.zscore(queue_key(Q, "dead"), "C"))
        stream = queue_key(Q, "stream:completions")
        (child_id, _), (parent_id, _) = c.client.xrange(stream)
        row, prow = job_key(Q, "C"), job_key(Q, "P")
        assert transactions(written) == [[
            ["ZREM", queue_key(Q, "active"), "C"],
            ["HSET", row, "stalled", "2"],
            ["HDEL", row, "lease_epoch"],
            ["ZADD", queue_key(Q, "dead"), str(dead), "C"],
            ["HSET", row, "state", "dead", "last_error", "stalled"],
            ["XADD", stream, child_id, *f"id C outcome stalled attempts {got.attempts} error stalled".split()],
            ["ZADD", queue_key(Q, "dead"), str(dead), "P"],
            ["HSET", prow, "state", "dead", "last_error", "child C failed: stalled"],
            ["XADD", stream, parent_id, "id", "P", "outcome", "child_failed", "attempts", "0",
             "error", "child C failed: stalled"],
            ["HDEL", row, "parent", "parent_policy"],
        ]]
    finally:
        node.stop()
