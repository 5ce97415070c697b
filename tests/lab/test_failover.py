"""Failover under the history checker, and the failure kit's pieces on a cluster.

The session's cluster (conftest ``cluster``: three primaries, a replica each,
trafikey everywhere). ``failover.failover`` kills a primary by SIGKILL and
brings it back as a replica before it returns, so the cluster is whole for
the tests after these. What the failover tests assert is what notebook 09
claims, no more: with replication held back and no WAIT the checker finds
the window's writes lost (the burst's enqueues, the settles of the leases
the replica held, jobs run twice); with a WAIT longer than the window it
finds nothing, and every write the window cut off is an unknown outcome.
"""

from __future__ import annotations

import pytest
import redis

from echomq_teach import jobs, keyspace
from echomq_teach.cluster_connector import ClusterConnector, reconnect
from echomq_teach.connector import NotSent
from echomq_teach.errors import BadInput, CrossSlot
from echomq_teach.lab.checker import FinalState, check
from echomq_teach.lab.failover import drain_rate, failover
from echomq_teach.lab.history import History, Op, Recorder, ServerClock
from echomq_teach.lab.run import Run
from echomq_teach.lab.worker import WorkerOptions

BURST = 20


def shard_state(cluster):
    """Every running primary's data set, as a digest and a key count."""
    out = {}
    for n in cluster.primaries():
        c = n.client()
        try:
            out[n.port] = (c.execute_command("DEBUG", "DIGEST"), c.dbsize())
        finally:
            c.close()
    return out


def whole(cluster):
    """Three primaries serving every slot, each with a replica in sync."""
    assert cluster.healthy()
    assert len(cluster.primaries()) == 3 and all(len(cluster.replicas_of(p)) == 1 for p in cluster.primaries())


# -- the failure kit on a cluster ------------------------------------------------------------------
def test_worker_processes_on_a_cluster_are_recorded_judged_and_their_links_found(cluster, request):
    q = cluster.queue_on(2, f"kit{request.node.name[-4:]}")
    # a lease no loaded machine outlives: a healthy worker's lapse would be a counted stall (and, twice, a burial)
    with Run(cluster, q, workers=2, lease_ms=3_000, work_ms=1, recovery="stalled", tick_ms=25) as run:
        jobs.drop(run.conn, q)
        ids = run.produce(120, batch=50)  # enqueue_many on the cluster connector: three pipelines
        assert len(ids) == 120 and run.sizes() == {"pending": 120, "active": 0, "schedule": 0, "dead": 0}
        run.start()
        # each worker names its links on every node it opened one to: CLIENT LIST per node finds them
        assert run.drop_link(0) >= 1
        run.script_flush()  # SCRIPT FLUSH on every primary: each connector reloads on NOSCRIPT
        assert run.wait_drained(60)
        run.stop()
        report = run.check()  # FinalState.read through the cluster connector
        assert report.valid, report.summary()
        assert report.settled == 120 and run.settled() == 120
        # the worker processes reached the queue's primary, and only it, for the queue's calls
        stops = run.history().notes("stop")
        assert len(stops) == 2 and all(o.extra["wait_short"] == 0 for o in stops)


def test_enqueue_many_on_a_cluster_brands_waits_and_refuses_a_batch_across_slots(cluster, request):
    q = cluster.queue_on(0, f"em{request.node.name[-4:]}")
    other = cluster.queue_on(1, f"em{request.node.name[-4:]}")
    conn = cluster.connector(wire=6, wait=(1, 500))
    try:
        jobs.drop(conn, q)
        conn.clear_trace()
        ids = jobs.enqueue_many(conn, q, ["a", "b", "c"])
        assert [e.line.split()[0] for e in conn.trace] == ["EVALSHA"] * 3 + ["WAIT"]
        assert conn.last()[0].reply == 1 and conn.wait_short == 0
        assert {e.node for e in conn.trace} == {conn.node_for(q)}
        assert conn.client.get(keyspace.brand_key(q)) == keyspace.BRAND_WIRE6  # branded on first use
        assert [jobs.claim(conn, q, 30_000).id for _ in range(3)] == ids
        # a batch whose calls' keys cross slots: refused before anything is sent, nothing written
        before, n_trace = shard_state(cluster), len(conn.trace)
        calls = [([keyspace.queue_key(q, "pending"), keyspace.job_key(other, "J1")], ["J1", "x"])]
        with pytest.raises(CrossSlot, match="nothing was sent"):
            conn.eval_many("enqueue", calls)
        assert shard_state(cluster) == before and len(conn.trace) == n_trace
        # one batch over two queues on two shards: one pipeline (and one WAIT) per slot
        conn.clear_trace()
        both = conn.eval_many("enqueue", [([keyspace.queue_key(q, "pending"), keyspace.job_key(q, "J2")], ["J2", "x"]),
                                          ([keyspace.queue_key(other, "pending"), keyspace.job_key(other, "J3")],
                                           ["J3", "y"])])
        assert both == [1, 1]
        assert [e.line.split()[0] for e in conn.trace] == ["EVALSHA", "WAIT", "EVALSHA", "WAIT"]
        assert [e.node for e in conn.trace] == [conn.node_for(q)] * 2 + [conn.node_for(other)] * 2
        # a stale slot map (as after a resharding): MOVED answers, and those calls go again once
        owner = cluster.primary_of(q)
        wrong = next(p for p in cluster.primaries() if p is not owner)
        nm = conn.client.nodes_manager
        nm.slots_cache[keyspace.slot(q)] = [nm.get_node("127.0.0.1", wrong.port)]
        conn.clear_trace()
        again = jobs.enqueue_many(conn, q, ["d"])
        moved = [e for e in conn.trace if e.redirects]
        assert len(moved) == 1 and moved[0].redirects[0].startswith(f"MOVED {keyspace.slot(q)} 127.0.0.1:{owner.port}")
        assert jobs.row(conn, q, again[0])["payload"] == "d"
    finally:
        jobs.drop(conn, q)
        jobs.drop(conn, other)
        conn.close()


def test_wait_needs_a_cluster_and_is_refused_before_anything_starts(node, cluster):
    with pytest.raises(BadInput, match="needs a cluster"):
        Run(node, "nowait", wait=(1, 100))
    with pytest.raises(BadInput, match="needs a cluster address"):
        reconnect(node.address, wait=(1, 100))
    with pytest.raises(BadInput, match="wait must be"):
        Run(cluster, "badwait", wait=(1,))
    told = WorkerOptions("q", "w", "/tmp", wait=(1, 250))
    assert WorkerOptions.from_json(told.to_json()).wait == (1, 250)  # a tuple again after the JSON list
    with pytest.raises(BadInput, match="wait must be"):
        WorkerOptions("q", "w", "/tmp", wait=("one", 250)).check()  # type: ignore[arg-type]
    with pytest.raises(BadInput, match="every queue must be on its shard"):
        failover(cluster, {cluster.queue_on(0, "fa"): None, cluster.queue_on(1, "fb"): None})
    with pytest.raises(BadInput, match="must outlast"):
        failover(cluster, {cluster.queue_on(0, "fa"): None}, hold_ms=100, window_s=0.4)


def test_wait_costs_jobs_per_second(cluster, request):
    q = cluster.queue_on(1, f"rate{request.node.name[-4:]}")
    # a figure, printed; the bench measures it properly (bench/bench_failover.py): no timed assertion
    plain, waited = (drain_rate(cluster, q, jobs_n=150, wait=w) for w in (None, (1, 500)))
    print(f"\njobs/s without WAIT {plain:.0f}, with WAIT 1 500 {waited:.0f}")
    assert plain > 0 and waited > 0


# -- the checker near a recovery call the kill cut off ---------------------------------------------
def _op(worker, n, op, sent, answered=None, at="answer", job=None, token=None, reply=None, gave_up=None, **extra):
    return Op(worker, n, op, sent, answered, at, job, token, reply, extra=extra, gave_up=gave_up)


def _two_claims(recovery: str, gap_ms: float, lease_ms: int | None, retried: bool = False,
                token: int = 2) -> History:
    """J enqueued; claimed by w1 (``lease_ms`` recorded or not); a ``recovery`` call whose link was lost
    ``gap_ms`` later; J claimed again by w2 (with ``token``: 2 if a put-back came between, 1 if the node
    forgot the first claim) with nothing known to have put it back."""
    lease = {} if lease_ms is None else {"lease_ms": lease_ms}
    ops = [_op("producer", 1, "enqueue", 0.0, 1.0, job="J", reply="J"),
           _op("w1", 1, "claim", 10.0, 11.0, job="J", token=1, reply=["J", "p", 1], **lease)]
    if retried:
        ops.append(_op("w1", 2, "retry", 20.0, 21.0, job="J", token=1, reply="scheduled"))
    ops += [_op("metronome", 1, recovery, 10.0 + gap_ms, None, "lost", gave_up=11.0 + gap_ms),
            _op("w2", 1, "claim", 5_000.0, 5_001.0, job="J", token=token, reply=["J", "p", token], **lease)]
    return History.of(ops)


def test_a_recovery_call_cut_off_inside_the_lease_cannot_explain_a_second_claim():
    final = FinalState({s: set() for s in keyspace.SETS}, {}, [])
    # the claim's lease (1500 ms) had not lapsed when the reap or sweep lost its link 400 ms later:
    # whatever that call did, it could not have put J back, so the second claim is a double hand-out
    for recovery in ("reap", "stalled"):
        r = check(_two_claims(recovery, 400, 1_500), final, recorded=False)
        assert [f.job for f in r.double_handouts] == ["J"], recovery
    # past the lease it could have: no finding, and the note says why
    r = check(_two_claims("stalled", 2_000, 1_500), final, recorded=False)
    assert not r.double_handouts and any("recovery call" in n for n in r.notes)
    # a claim recorded without its lease is judged as before: any such call may have put it back
    assert not check(_two_claims("reap", 400, None), final, recorded=False).double_handouts
    # a promote puts back only a scheduled job: only after a retry of J could it explain the second claim
    assert check(_two_claims("promote", 400, 1_500), final, recorded=False).double_handouts
    assert not check(_two_claims("promote", 400, 1_500, retried=True), final, recorded=False).double_handouts
    # the same token twice: no put-back makes a claim hand out a token again, only a node that forgot the first
    assert check(_two_claims("stalled", 2_000, 1_500, token=1), final, recorded=False).double_handouts


def test_a_recorded_claim_keeps_its_lease(cluster, request, tmp_path):
    q = cluster.queue_on(0, f"lease{request.node.name[-4:]}")
    conn = cluster.connector(wire=6)
    try:
        jobs.enqueue(conn, q, "x")
        with Recorder(tmp_path, "w", ServerClock(conn)) as rec:
            rec.claim(conn, q, 750)
        [op] = History.read(tmp_path).calls("claim")
        assert op.ok and op.extra == {"lease_ms": 750}
    finally:
        jobs.drop(conn, q)
        conn.close()


# -- failover ------------------------------------------------------------------------------------------
def test_held_replication_loses_the_windows_writes_and_wait_keeps_them(cluster, request):
    tag = request.node.name[-4:]
    plain_q, waited_q = cluster.queue_on(1, f"plain{tag}"), cluster.queue_on(1, f"waited{tag}")
    primary, replica = cluster.primary_of(plain_q), cluster.replica_of(cluster.primary_of(plain_q))
    out = failover(cluster, {plain_q: None, waited_q: (1, 2000)}, hold_ms=2500, burst=BURST, timeout=90)
    plain, waited = out[plain_q], out[waited_q]
    print(f"\nno WAIT: {plain.figures()}\nWAIT:    {waited.figures()}")
    # the cluster is whole again: the replica promoted, the killed node back as its replica
    whole(cluster)
    assert cluster.primary_of(plain_q) is replica and cluster.view(primary).role == "replica"
    assert plain.old_run_id != plain.new_run_id
    assert plain.drained and waited.drained

    # without WAIT: the replica never applied the window, so the new primary lacks it
    r = plain.report
    assert not r.valid
    burst = _burst(plain)
    assert len(burst) == BURST
    # every enqueue of the window was acknowledged and is gone: lost, or (a worker got to it inside
    # the window) its settle is the write that went missing; nothing enqueued before the window is lost
    assert r.lost and set(r.lost) <= burst <= set(r.lost) | set(r.jobs_of("unrecorded"))
    assert r.settled_twice and r.jobs_of("unrecorded")  # settles acknowledged by the old primary alone
    assert sum(1 for n in r.handler_runs.values() if n > 1) >= 1  # and jobs run again on the new primary
    # claims of the window handed out again: a sweep the kill cut off cannot explain them (the leases
    # had not lapsed by then), so each is a double hand-out, and each of those jobs ran twice
    assert r.double_handouts
    assert {f.job for f in r.double_handouts} <= {j for j, n in r.handler_runs.items() if n > 1}
    assert all(plain.in_window(f) for f in r.findings)  # every finding lies in the window the replica held back
    assert not r.fence_violations and not r.unexpected and not r.jobs_of("stranded")

    # with WAIT longer than the window: no acknowledged write was lost; the window's calls have no answer
    w = waited.report
    assert w.valid, w.summary()
    assert w.counts() == dict.fromkeys(w.counts(), 0)
    assert w.enqueue_unknown == BURST and w.settled == w.enqueued
    assert sum(w.indeterminate.values()) >= BURST

    # the lease_epoch rule: what the replica held in active carried the dead primary's run_id; once
    # lapsed, the new primary's stall sweep put each back uncounted, and nothing was buried
    for f in (plain, waited):
        assert set(f.inherited.values()) <= {f.old_run_id}
        assert set(f.old_leases()) <= set(f.inherited)
        assert f.uncounted() == f.old_leases() and f.dead_after == []
    assert plain.old_leases()  # the no-WAIT workers held leases at the kill (each was in its handler)
    # calls sent while the dead primary still owned the slot never left their process: refused, not unknown
    refused = [o for o in plain.history.calls() if o.at == "refused" and "nothing was sent" in (o.error or "")]
    assert refused


def test_a_failover_as_it_comes(cluster, request):
    """Nothing widened: the kill at a moment of the run. WAIT's run is valid; the other is measured."""
    tag = request.node.name[-4:]
    plain_q, waited_q = cluster.queue_on(0, f"asis{tag}"), cluster.queue_on(0, f"asisw{tag}")
    out = failover(cluster, {plain_q: None, waited_q: (1, 2000)}, burst=0, timeout=90)
    plain, waited = out[plain_q], out[waited_q]
    print(f"\nno WAIT: {plain.figures()}\nWAIT:    {waited.figures()}")
    whole(cluster)
    assert waited.report.valid, waited.report.summary()
    # on loopback the replica trails by well under a millisecond: whatever the checker finds without
    # WAIT is a write answered right before the kill (the bench counts how often, over many rounds)
    lo = plain.kill_sent - 50.0
    for f in plain.report.findings:
        ops = [o for o in plain.history.calls() if o.job == f.job and o.answered is not None]
        assert any(lo <= o.answered <= plain.killed_at for o in ops), str(f)
    assert plain.report.settled + len(plain.report.lost) == plain.report.enqueued
    assert plain.uncounted() == plain.old_leases() and plain.dead_after == []


def test_a_call_to_a_dead_primary_is_refused_as_not_sent(cluster, request):
    q = cluster.queue_on(2, f"ns{request.node.name[-4:]}")
    conn = cluster.connector(wire=6)
    primary = cluster.primary_of(q)
    replica = cluster.replica_of(primary)
    folder = request.getfixturevalue("tmp_path")
    try:
        jobs.enqueue(conn, q, "x")
        rec = Recorder(folder, "w", ServerClock(conn))
        cluster.kill(primary)
        try:
            with pytest.raises(redis.exceptions.ConnectionError):
                jobs.claim(conn, q, 1000)  # the pooled link finds the node gone (its outcome unknown)
            with pytest.raises(NotSent, match="nothing was sent"):
                rec.claim(conn, q, 1000)  # no link opens: the call never left this process
            assert isinstance(conn, ClusterConnector)
        finally:
            cluster.wait_promotion(replica, timeout=30)
            cluster.restart_as_replica(primary)
        rec.close()
        [op] = History.read(folder).calls("claim")
        assert op.at == "refused" and not op.indeterminate  # the checker knows it did not run
        conn.refresh()
        assert jobs.claim(conn, q, 1000) is not None  # the job was on the replica: it is on the new primary
    finally:
        jobs.drop(conn, q)
        conn.close()
    whole(cluster)


def _burst(f):
    """The ids the producer enqueued inside the window: every enqueue not answered before the hold."""
    enq = f.history.calls("enqueue")
    return {o.job for o in enq} - {o.job for o in enq if o.answered is not None and o.answered < f.window[0]}
