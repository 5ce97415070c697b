"""Flows on a real node: the atomic land, the fan-in, the child-death policies (D-4 in docs/decisions.md), the reads."""

from __future__ import annotations

import multiprocessing as mp
import queue as stdlib_queue
import time

import pytest
import redis
from conftest import state
from native_support import comparable

from echomq_teach import flows, jobs, snapshots
from echomq_teach.cluster_connector import reconnect
from echomq_teach.consumer import Consumer
from echomq_teach.errors import BadInput, DuplicateJob
from echomq_teach.keyspace import job_key, queue_key
from echomq_teach.nodes.local import LocalNode

LEASE = 30_000


def claim_n(conn, queue, n):
    """Claim ``n`` jobs; children come out in mint order, the order add() was given them."""
    out = [jobs.claim(conn, queue, LEASE) for _ in range(n)]
    assert all(c is not None for c in out)
    return out


def die(conn, queue, job, reason="boom"):
    """Fail a claimed job at its max attempts, so it dies at once."""
    assert jobs.retry(conn, queue, job.id, job.attempts, reason, 1_000, max_attempts=job.attempts) == jobs.DEAD


def held(snap, parent_id):
    """The parent is held: its row waits and no set holds it."""
    return snap.state(parent_id) == "awaiting_children" and snap.where(parent_id) == []


# -- the land --------------------------------------------------------------------------------
def test_add_lands_children_pending_and_parent_held(conn, queue):
    flow = flows.add(conn, queue, "sum them", ["1", "2", "3"])
    assert isinstance(flow, flows.Flow) and len(flow.child_ids) == 3
    snap = snapshots.snapshot(conn, queue)
    # the snapshot's scan of emq:{q}:job:* shows the held parent and its counter
    assert held(snap, flow.parent_id)
    # the flow's number from the queue's counter, on the parent and on each child (the first flow: 1)
    assert snap.rows[flow.parent_id] == {"state": "awaiting_children", "attempts": "0", "payload": "sum them",
                                         "flow": "1"}
    assert snap.counters == {f"{flow.parent_id}:dependencies": 3}
    assert snap.sets["pending"] == dict.fromkeys(flow.child_ids, 0)
    for cid, payload in zip(flow.child_ids, ["1", "2", "3"]):
        assert snap.rows[cid] == {
            "state": "pending",
            "attempts": "0",
            "payload": payload,
            "parent": flow.parent_id,
            "parent_policy": "fail",
            "flow": "1",
        }
    # the parent is minted first: once released it is the oldest id in pending
    assert flow.parent_id < min(flow.child_ids)
    assert flows.dependencies(conn, queue, flow) == 3


def test_land_alone_arms_the_fan_in(conn, queue):
    """A child claimed and completed right after @enqueue_flow, before any host write, still counts."""
    keys = [queue_key(queue, "pending"), job_key(queue, "P1")]
    keys += [job_key(queue, "P1", s) for s in ("dependencies", "processed", "unsuccessful")]
    keys += [job_key(queue, "C1"), job_key(queue, "C2")]
    assert conn.eval("enqueue_flow", keys, ["P1", "p", "C1", "a", "C2", "b"]) == 2
    job = jobs.claim(conn, queue, LEASE)
    assert job.id == "C1"
    assert jobs.complete(conn, queue, job.id, job.attempts, "A") == jobs.OK
    assert flows.dependencies(conn, queue, "P1") == 1
    assert flows.children_values(conn, queue, "P1") == {"C1": "A"}


def test_policy_written_after_a_settled_child_leaves_no_ghost_row(conn, queue):
    flow = flows.add(conn, queue, ("P", "p"), [("C1", "a")])
    job = jobs.claim(conn, queue, LEASE)
    assert jobs.complete(conn, queue, job.id, job.attempts, "A") == jobs.OK
    # add() lands the policy inside @enqueue_flow (issue 13 item 6): it makes no host write that
    # could follow the settle and bring the row back holding one field
    snap = snapshots.snapshot(conn, queue)
    assert "C1" not in snap.rows and snap.state(flow.parent_id) == "pending"


def test_per_child_policies(conn, queue):
    flow = flows.add(conn, queue, "p", ["a", "b", "c", "d"], policy=["fail", "ignore", "remove", "wait"])
    rows = snapshots.snapshot(conn, queue).rows
    assert [rows[c]["parent_policy"] for c in flow.child_ids] == ["fail", "ignore", "remove", "wait"]


def test_chosen_ids_and_bytes_payloads(conn, queue):
    flow = flows.add(conn, queue, ("report", b"build"), [("leg-1", b"x"), "y"])
    assert flow.parent_id == "report" and flow.child_ids[0] == "leg-1"
    rows = snapshots.snapshot(conn, queue).rows
    assert rows["report"]["payload"] == "build" and rows["leg-1"]["payload"] == "x"
    assert rows[flow.child_ids[1]]["parent"] == "report"


# -- the fan-in ------------------------------------------------------------------------------
def test_counter_ticks_to_zero_and_parent_released_once_at_zero(conn, queue):
    n = 4
    flow = flows.add(conn, queue, "p", [f"c{i}" for i in range(n)])
    claimed = claim_n(conn, queue, n)
    assert [c.id for c in claimed] == list(flow.child_ids)
    for done, job in enumerate(claimed, start=1):
        before = snapshots.snapshot(conn, queue)
        assert held(before, flow.parent_id)
        assert jobs.complete(conn, queue, job.id, job.attempts, f"r{done}") == jobs.OK
        assert flows.dependencies(conn, queue, flow) == n - done
        after = snapshots.snapshot(conn, queue)
        if done < n:
            assert held(after, flow.parent_id)
        else:
            assert after.state(flow.parent_id) == "pending"
            assert after.sets["pending"] == {flow.parent_id: 0}
    assert flows.children_values(conn, queue, flow) == {c: f"r{i}" for i, c in enumerate(flow.child_ids, start=1)}
    assert jobs.claim(conn, queue, LEASE).id == flow.parent_id


def test_redelivered_and_stale_completions_never_double_count(conn, queue):
    flow = flows.add(conn, queue, "p", ["a", "b"])
    a = jobs.claim(conn, queue, 1)  # a 1 ms lease, so it lapses and can be reaped
    b = jobs.claim(conn, queue, LEASE)
    deadline = time.monotonic() + 5
    while a.id not in jobs.reap(conn, queue):
        assert time.monotonic() < deadline, "the 1 ms lease never lapsed"
    a2 = jobs.claim(conn, queue, LEASE)
    assert a2.id == a.id and a2.attempts == a.attempts + 1
    # the crashed worker's late completion: refused, nothing counted
    before = state(conn, queue)
    assert jobs.complete(conn, queue, a.id, a.attempts, "late") == jobs.STALE
    assert state(conn, queue) == before
    assert jobs.complete(conn, queue, a2.id, a2.attempts, "A") == jobs.OK
    assert jobs.complete(conn, queue, b.id, b.attempts, "B") == jobs.OK
    # the parent is out and running: a second release would drag it back to pending
    parent = jobs.claim(conn, queue, LEASE)
    assert parent.id == flow.parent_id
    before = state(conn, queue)
    for job in (a, a2, b):  # redeliveries, with the old and the current tokens
        assert jobs.complete(conn, queue, job.id, job.attempts, "again") == jobs.STALE
    assert state(conn, queue) == before
    snap = snapshots.snapshot(conn, queue)
    assert snap.where(flow.parent_id) == ["active"] and snap.state(flow.parent_id) == "active"
    assert flows.dependencies(conn, queue, flow) == 0
    assert flows.children_values(conn, queue, flow) == {a.id: "A", b.id: "B"}


def _worker(address, wire, queue, parent_id, barrier, out):
    """One process: claim and complete until the queue is empty; the parent gets the parent handler."""
    conn = reconnect(address, wire)
    try:
        barrier.wait(timeout=20)
        done, parent_saw = [], None
        while (job := jobs.claim(conn, queue, LEASE)) is not None:
            if job.id == parent_id:
                parent_saw = (flows.dependencies(conn, queue, parent_id), flows.children_values(conn, queue, parent_id))
                jobs.complete(conn, queue, job.id, job.attempts, str(len(parent_saw[1])))
            else:
                assert jobs.complete(conn, queue, job.id, job.attempts, job.payload.upper()) == jobs.OK
                done.append(job.id)
        out.put((done, parent_saw))
    finally:
        conn.close()


def test_children_completed_concurrently_from_4_processes(conn, queue):
    n = 200
    payloads = [f"leg{i}" for i in range(n)]
    flow = flows.add(conn, queue, "p", payloads)
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(4), ctx.Queue()
    args = (conn.address, conn.wire, queue, flow.parent_id, barrier, out)
    procs = [ctx.Process(target=_worker, args=args) for _ in range(4)]
    for p in procs:
        p.start()
    try:
        results = [out.get(timeout=30) for _ in procs]
    except stdlib_queue.Empty:
        pytest.fail("a worker process did not report back within 30 s")
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    completed = [cid for done, _ in results for cid in done]
    assert sorted(completed) == sorted(flow.child_ids)  # each child completed exactly once
    # exactly one worker ran the parent, and only after the counter reached zero
    parent_runs = [saw for _, saw in results if saw is not None]
    assert len(parent_runs) == 1
    deps, values = parent_runs[0]
    assert deps == 0
    assert values == {cid: p.upper() for cid, p in zip(flow.child_ids, payloads)}
    snap = snapshots.snapshot(conn, queue)
    assert snap.total() == 0 and snap.rows == {}
    assert snap.completed == n + 1
    assert snap.counters == {f"{flow.parent_id}:dependencies": 0}
    assert len(snap.flow_hashes[f"{flow.parent_id}:processed"]) == n


def test_parent_handler_reads_children_values(conn, queue):
    flow = flows.add(conn, queue, "total", ["1", "2", "3"])
    seen: list[tuple[str, dict[str, str], int]] = []

    def handler(job):
        if job.id == flow.parent_id:
            values = flows.children_values(conn, queue, job.id)
            seen.append((job.id, values, flows.dependencies(conn, queue, job.id)))
            return str(sum(int(v) for v in values.values()))
        seen.append((job.id, {}, -1))
        return str(int(job.payload) * 10)

    report = Consumer(conn, queue, handler, lease_ms=LEASE).run(max_jobs=4, timeout=10)
    assert report.settled == 4 and report.outcomes == {"ok": 4}
    assert [s[0] for s in seen] == [*flow.child_ids, flow.parent_id]  # the parent runs last
    assert seen[-1][1] == dict(zip(flow.child_ids, ["10", "20", "30"])) and seen[-1][2] == 0
    assert snapshots.snapshot(conn, queue).rows == {}


# -- child death: the policies of D-4 in docs/decisions.md -----------------------------------
def test_policy_fail_kills_the_parent_naming_the_child(conn, queue):
    flow = flows.add(conn, queue, "p", ["a", "b"])  # fail is the default
    a, b = claim_n(conn, queue, 2)
    die(conn, queue, a, "disk full")
    snap = snapshots.snapshot(conn, queue)
    assert snap.where(flow.parent_id) == ["dead"] and snap.state(flow.parent_id) == "dead"
    assert snap.rows[flow.parent_id]["last_error"] == f"child {a.id} failed: disk full"
    assert flows.dependencies(conn, queue, flow) == 2 and flows.ignored_failures(conn, queue, flow) == {}
    # the sibling still completes; the dead parent stays dead
    assert jobs.complete(conn, queue, b.id, b.attempts, "B") == jobs.OK
    snap = snapshots.snapshot(conn, queue)
    assert snap.where(flow.parent_id) == ["dead"] and snap.state(flow.parent_id) == "dead"


def test_policy_fail_reprocessed_culprit_does_not_revive_a_dead_parent(conn, queue):
    flow = flows.add(conn, queue, "p", ["a", "b"])
    a, b = claim_n(conn, queue, 2)
    assert jobs.complete(conn, queue, b.id, b.attempts, "B") == jobs.OK
    die(conn, queue, a)
    assert jobs.reprocess(conn, queue, a.id) == jobs.OK
    a2 = jobs.claim(conn, queue, LEASE)
    assert a2.id == a.id
    assert jobs.complete(conn, queue, a2.id, a2.attempts, "A") == jobs.OK
    # counting a here would have put the parent in pending while it is still in dead
    snap = snapshots.snapshot(conn, queue)
    assert snap.where(flow.parent_id) == ["dead"] and snap.state(flow.parent_id) == "dead"
    assert flows.dependencies(conn, queue, flow) == 1


def test_policy_ignore_records_and_releases(conn, queue):
    flow = flows.add(conn, queue, "p", ["a", "b"], policy="ignore")
    a, b = claim_n(conn, queue, 2)
    die(conn, queue, a, "bad input")
    assert flows.ignored_failures(conn, queue, flow) == {a.id: "bad input"}
    assert flows.dependencies(conn, queue, flow) == 1
    assert held(snapshots.snapshot(conn, queue), flow.parent_id)
    assert jobs.complete(conn, queue, b.id, b.attempts, "B") == jobs.OK
    snap = snapshots.snapshot(conn, queue)
    assert snap.where(flow.parent_id) == ["pending"] and snap.state(flow.parent_id) == "pending"
    assert flows.children_values(conn, queue, flow) == {b.id: "B"}
    assert snap.where(a.id) == ["dead"]


def test_policy_ignore_reprocessed_child_does_not_count_twice(conn, queue):
    flow = flows.add(conn, queue, "p", ["a", "b", "c"], policy="ignore")
    a, b, c = claim_n(conn, queue, 3)
    die(conn, queue, a)
    assert jobs.reprocess(conn, queue, a.id) == jobs.OK
    a2 = jobs.claim(conn, queue, LEASE)
    assert jobs.complete(conn, queue, a2.id, a2.attempts, "A") == jobs.OK
    assert jobs.complete(conn, queue, b.id, b.attempts, "B") == jobs.OK
    # c is still running: a counted twice would have released the parent already
    assert flows.dependencies(conn, queue, flow) == 1
    assert held(snapshots.snapshot(conn, queue), flow.parent_id)
    assert jobs.complete(conn, queue, c.id, c.attempts, "C") == jobs.OK
    assert snapshots.snapshot(conn, queue).where(flow.parent_id) == ["pending"]


def test_policy_remove_releases_without_a_record(conn, queue):
    flow = flows.add(conn, queue, "p", ["a", "b"], policy="remove")
    a, b = claim_n(conn, queue, 2)
    assert jobs.complete(conn, queue, b.id, b.attempts, "B") == jobs.OK
    die(conn, queue, a)
    snap = snapshots.snapshot(conn, queue)
    assert snap.where(flow.parent_id) == ["pending"] and snap.state(flow.parent_id) == "pending"
    assert flows.ignored_failures(conn, queue, flow) == {}
    assert f"{flow.parent_id}:unsuccessful" not in snap.flow_hashes
    assert flows.dependencies(conn, queue, flow) == 0


def test_policy_wait_holds_the_parent_until_the_child_is_reprocessed(conn, queue):
    flow = flows.add(conn, queue, "p", ["a", "b"], policy="wait")
    a, b = claim_n(conn, queue, 2)
    assert jobs.complete(conn, queue, b.id, b.attempts, "B") == jobs.OK
    die(conn, queue, a)
    snap = snapshots.snapshot(conn, queue)
    assert held(snap, flow.parent_id) and snap.where(a.id) == ["dead"]
    assert flows.dependencies(conn, queue, flow) == 1 and flows.ignored_failures(conn, queue, flow) == {}
    assert jobs.reprocess(conn, queue, a.id) == jobs.OK
    assert held(snapshots.snapshot(conn, queue), flow.parent_id)
    a2 = jobs.claim(conn, queue, LEASE)
    # D-5 in docs/decisions.md: the reprocessed child's token runs on from its first life (it was 1 before)
    assert a2.id == a.id and a2.attempts == a.attempts + 1
    assert jobs.complete(conn, queue, a2.id, a2.attempts, "A") == jobs.OK
    snap = snapshots.snapshot(conn, queue)
    assert snap.where(flow.parent_id) == ["pending"] and snap.state(flow.parent_id) == "pending"
    assert flows.children_values(conn, queue, flow) == {a.id: "A", b.id: "B"}


def test_a_child_below_max_attempts_is_only_scheduled(conn, queue):
    flow = flows.add(conn, queue, "p", ["a"])
    (a,) = claim_n(conn, queue, 1)
    assert jobs.retry(conn, queue, a.id, a.attempts, "flaky", 1_000, max_attempts=3) == jobs.SCHEDULED
    snap = snapshots.snapshot(conn, queue)
    assert held(snap, flow.parent_id) and snap.rows[a.id]["parent"] == flow.parent_id


# -- the pure reads --------------------------------------------------------------------------
def test_reads_change_nothing_and_absent_is_empty(conn, queue):
    assert flows.dependencies(conn, queue, "NOPARENT") == 0
    assert flows.children_values(conn, queue, "NOPARENT") == {}
    assert flows.ignored_failures(conn, queue, "NOPARENT") == {}
    flow = flows.add(conn, queue, "p", ["a", "b"], policy="ignore")
    a, b = claim_n(conn, queue, 2)
    die(conn, queue, a, "nope")
    assert jobs.complete(conn, queue, b.id, b.attempts, "B") == jobs.OK
    before = state(conn, queue)
    for _ in range(2):
        assert flows.dependencies(conn, queue, flow.parent_id) == 0
        assert flows.children_values(conn, queue, flow.parent_id) == {b.id: "B"}
        assert flows.ignored_failures(conn, queue, flow.parent_id) == {a.id: "nope"}
    assert state(conn, queue) == before


# -- bad input: refused before any write ------------------------------------------------------
BAD = {
    "no children": dict(parent="p", children=[]),
    "children not a list": dict(parent="p", children="abc"),
    "child equal to parent": dict(parent=("P", "p"), children=[("C", "c"), ("P", "x")]),
    "duplicate children": dict(parent="p", children=[("C", "c"), "d", ("C", "e")]),
    "child payload not str/bytes": dict(parent="p", children=["a", 7]),
    "child payload None": dict(parent="p", children=[("C", None)]),
    "parent payload not str/bytes": dict(parent={"x": 1}, children=["a"]),
    "bad child id": dict(parent="p", children=[("a:b", "c")]),
    "unknown policy": dict(parent="p", children=["a"], policy="retry"),
    "unknown policy in list": dict(parent="p", children=["a", "b"], policy=["fail", "skip"]),
    "policy list too short": dict(parent="p", children=["a", "b"], policy=["fail"]),
}
BAD_WORDS = {
    "no children": "at least one child",
    "children not a list": "children must be a list",
    "child equal to parent": "parent's own id",
    "duplicate children": "share the id",
    "child payload not str/bytes": "child 1",
    "child payload None": "payload must be str or bytes",
    "parent payload not str/bytes": "parent",
    "bad child id": "no braces, colons",
    "unknown policy": "unknown policy 'retry'",
    "unknown policy in list": "unknown policy 'skip' for child 1",
    "policy list too short": "one per child",
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_refused_and_nothing_written(conn, queue, case):
    flows.add(conn, queue, "existing", ["x"])  # something to leave untouched
    before, size = state(conn, queue), conn.call("DBSIZE")
    with pytest.raises(BadInput, match=BAD_WORDS[case]):
        flows.add(conn, queue, **BAD[case])
    assert state(conn, queue) == before and conn.call("DBSIZE") == size


@pytest.mark.parametrize("bad_queue", ["", "a{b}", "a:b", "a b", 5])
def test_bad_queue_name_is_refused_and_nothing_written(conn, bad_queue):
    size = conn.call("DBSIZE")
    with pytest.raises(BadInput, match="queue name"):
        flows.add(conn, bad_queue, "p", ["a"])
    assert conn.call("DBSIZE") == size


def test_duplicate_ids_are_refused_and_nothing_written(conn, queue):
    jobs.enqueue(conn, queue, "old", job_id="OLD")
    flows.add(conn, queue, ("P", "p"), [("C", "c")])
    before = state(conn, queue)
    with pytest.raises(DuplicateJob, match="job OLD already exists"):
        flows.add(conn, queue, ("OLD", "p2"), ["n1"])
    with pytest.raises(DuplicateJob, match="job C already exists"):
        flows.add(conn, queue, ("P2", "p2"), ["n1", ("C", "again")])
    with pytest.raises(DuplicateJob, match="job P already exists"):
        flows.add(conn, queue, ("P3", "p3"), [("P", "a parent as a child")])
    assert state(conn, queue) == before


def test_leftover_flow_keys_of_a_finished_parent_are_refused(conn, queue):
    """A finished parent's row is gone but its :processed stays: reusing its id would mix results."""
    flows.add(conn, queue, ("P", "p"), [("C", "c")])
    for _ in range(2):  # the child, then the released parent
        job = jobs.claim(conn, queue, LEASE)
        assert jobs.complete(conn, queue, job.id, job.attempts, "r") == jobs.OK
    before = state(conn, queue)
    with pytest.raises(DuplicateJob, match="still has"):
        flows.add(conn, queue, ("P", "p again"), [("C2", "c")])
    assert state(conn, queue) == before


# -- durability -------------------------------------------------------------------------------
def test_a_flow_survives_a_restart_of_a_durable_node_midway():
    node = LocalNode(durable=True)
    try:
        q = "flow-restart"
        conn = node.connector()
        flow = flows.add(conn, q, "p", ["a", "b", "c"], policy="ignore")
        a, b, c = claim_n(conn, q, 3)
        assert jobs.complete(conn, q, a.id, a.attempts, "A") == jobs.OK
        before = state(conn, q)
        conn.close()
        old_run_id = node.run_id
        node.restart()
        assert node.run_id != old_run_id
        conn = node.connector()
        assert state(conn, q) == before
        assert flows.dependencies(conn, q, flow) == 2
        # leases and tokens outlive the restart: b completes, c dies under its policy
        assert jobs.complete(conn, q, b.id, b.attempts, "B") == jobs.OK
        die(conn, q, c, "lost")
        snap = snapshots.snapshot(conn, q)
        assert snap.where(flow.parent_id) == ["pending"] and snap.state(flow.parent_id) == "pending"
        assert flows.children_values(conn, q, flow) == {a.id: "A", b.id: "B"}
        assert flows.ignored_failures(conn, q, flow) == {c.id: "lost"}
        conn.close()
    finally:
        node.stop()


# -- the native executor ----------------------------------------------------------------------
def test_native_complete_and_fail_refuse_a_flow_child(native_conn, queue):
    c = native_conn
    flow = flows.add(c, queue, "p", ["a"])  # the land is a script on either executor
    job = jobs.claim(c, queue, LEASE)  # EMQ.CLAIM on a wire 6 connector
    assert job.id == flow.child_ids[0]
    base = queue_key(queue, "")
    active, row = queue_key(queue, "active"), job_key(queue, job.id)
    flow_keys = [job_key(queue, flow.parent_id, s) for s in ("dependencies", "processed")]
    flow_keys.append(job_key(queue, flow.parent_id))
    before = state(c, queue)
    tries = {
        "flow layout": ["EMQ.COMPLETE", 5, active, row, *flow_keys],
        "parent id given": ["EMQ.COMPLETE", 2, active, row],
        "row carries parent": ["EMQ.COMPLETE", 2, active, row],
    }
    parents = {"flow layout": flow.parent_id, "parent id given": flow.parent_id, "row carries parent": ""}
    for what, head in tries.items():
        with pytest.raises(redis.exceptions.ResponseError, match="^EMQSTATE complete flow not native"):
            c.call(*head, job.id, str(job.attempts), base, parents[what], "r", "0")
        assert state(c, queue) == before, what
    unsuccessful = job_key(queue, flow.parent_id, "unsuccessful")
    fail_keys = [active, queue_key(queue, "schedule"), queue_key(queue, "dead"), row]
    with pytest.raises(redis.exceptions.ResponseError, match="^EMQSTATE fail flow not native"):
        c.call("EMQ.FAIL", 4, *fail_keys, job.id, str(job.attempts), "1000", "3", "why", base, "", "0")
    fail_argv = [job.id, str(job.attempts), "1000", "3", "why", base, flow.parent_id, "0"]
    with pytest.raises(redis.exceptions.ResponseError, match="^EMQSTATE fail flow not native"):
        c.call("EMQ.FAIL", 7, *fail_keys, flow_keys[0], unsuccessful, flow_keys[2], *fail_argv)
    assert state(c, queue) == before
    # jobs.complete sends the script for a flow child, so the fan-in still runs
    assert jobs.complete(c, queue, job.id, job.attempts, "A") == jobs.OK
    assert c.last()[0].script == "@complete"
    assert snapshots.snapshot(c, queue).state(flow.parent_id) == "pending"


def test_children_of_a_removed_parent_settle_as_plain_jobs(conn, queue):
    # the fan-in would otherwise release the parent into a deleted row: a ghost in pending
    flow = flows.add(conn, queue, "parent", ["a", "b"])
    assert jobs.remove(conn, queue, flow.parent_id) is True
    for _ in flow.child_ids:
        c = jobs.claim(conn, queue, 30_000)
        assert jobs.complete(conn, queue, c.id, c.attempts, "done") == jobs.OK
    snap = snapshots.snapshot(conn, queue)
    assert snap.rows == {} and snap.total() == 0 and snap.counters == {}
    assert jobs.claim(conn, queue, 30_000) is None


def test_children_of_a_removed_parent_settle_by_script_on_wire_6(native_conn, queue):
    # their rows still carry parent, which EMQ.COMPLETE refuses: complete/5 sends the script
    test_children_of_a_removed_parent_settle_as_plain_jobs(native_conn, queue)
    assert [e.script for e in native_conn.trace if e.script == "@complete"] == ["@complete", "@complete"]


@pytest.mark.parametrize(
    ("policy", "parent_state"), [("fail", "dead"), ("ignore", "pending"), ("wait", "awaiting_children")]
)
def test_a_child_buried_by_the_stall_sweep_answers_to_its_policy(conn, queue, policy, parent_state):
    from echomq_teach import stalled

    flow = flows.add(conn, queue, "parent", ["stalls"], policy=policy)
    # two lapsed leases with max_stalled=1: the second sweep buries the child
    for _ in range(2):
        jobs.claim(conn, queue, 1)
        time.sleep(0.01)
        report = stalled.check(conn, queue, max_stalled=1)
    assert report.dead == [flow.child_ids[0]]
    snap = snapshots.snapshot(conn, queue)
    assert snap.state(flow.parent_id) == parent_state
    if policy == "fail":
        assert "stalled" in snap.rows[flow.parent_id]["last_error"]
    if policy == "ignore":
        assert flows.ignored_failures(conn, queue, flow.parent_id) == {flow.child_ids[0]: "stalled"}


# -- review defects (issue 13): each of these failed before its fix ------------------------------
def test_wire6_child_of_a_removed_parent_completes_and_retries(conn, native_conn, queue):
    # issue 13 item 1: the host sent the orphan to EMQ.COMPLETE/EMQ.FAIL, which refuse a row
    # carrying parent; a row naming a parent now always takes the script, on either wire
    ends = []
    # on a cluster both names are one connector (tests/queue/test_cluster_core.py): the queue runs once
    for c in (conn,) if native_conn is conn else (conn, native_conn):
        flow = flows.add(c, queue, ("P", "p"), [("A", "a"), ("B", "b")])
        assert jobs.remove(c, queue, flow.parent_id) is True
        a, b = claim_n(c, queue, 2)
        assert jobs.complete(c, queue, a.id, a.attempts, "done") == jobs.OK
        assert c.last()[0].script == "@complete"
        assert jobs.retry(c, queue, b.id, b.attempts, "boom", 1_000, 1) == jobs.DEAD
        assert c.last()[0].script == "@retry"
        snap = snapshots.snapshot(c, queue)
        # plain settles: no ghost parent, no counter or record written for it
        assert snap.pending == [] and snap.dead == ["B"] and set(snap.rows) == {"B"}
        assert snap.counters == {} and snap.flow_hashes == {}
        ends.append(comparable(snap))  # the two nodes' clocks differ: times of death by membership
        # test_cluster_core hands this body one cluster connector as both: each pass starts empty
        jobs.drop(c, queue)
    assert ends[0] == ends[-1]


def _complete_keys(queue, child, parent):
    """@complete's KEYS for a flow child: active, its row, the parent's counter, results and row."""
    keys = [queue_key(queue, "active"), job_key(queue, child)]
    return keys + [job_key(queue, parent, "dependencies"), job_key(queue, parent, "processed"), job_key(queue, parent)]


def test_complete_does_not_release_a_removed_parent(conn, queue):
    # issue 13 item 2: the host read the parent's row, then an operator removed it before the
    # script ran; the script itself must see that the row is gone
    flow = flows.add(conn, queue, ("P", "p"), [("A", "a")])
    a = jobs.claim(conn, queue, LEASE)
    keys = _complete_keys(queue, a.id, flow.parent_id)  # the layout the host built while P existed
    assert jobs.remove(conn, queue, flow.parent_id) is True
    argv = [a.id, str(a.attempts), queue_key(queue, ""), flow.parent_id, "A", "0"]
    assert conn.eval("complete", keys, argv) == 1
    snap = snapshots.snapshot(conn, queue)
    assert snap.rows == {} and snap.pending == [] and snap.counters == {} and snap.flow_hashes == {}
    assert snap.completed == 1
    assert jobs.claim(conn, queue, LEASE) is None


@pytest.mark.parametrize("policy", ["fail", "ignore", "remove"])
def test_retry_leaves_a_removed_parents_keys_alone(conn, queue, policy):
    # issue 13 item 2, the death side: a child dying after its parent was removed writes nothing for it
    flow = flows.add(conn, queue, ("P", "p"), [("A", "a")], policy=policy)
    a = jobs.claim(conn, queue, LEASE)
    keys = [queue_key(queue, s) for s in ("active", "schedule", "dead")] + [job_key(queue, a.id)]
    keys += [job_key(queue, "P", "dependencies"), job_key(queue, "P", "unsuccessful"), job_key(queue, "P")]
    assert jobs.remove(conn, queue, flow.parent_id) is True
    argv = [a.id, str(a.attempts), "1000", "1", "boom", queue_key(queue, ""), "P", "0"]
    assert conn.eval("retry", keys, argv) == jobs.DEAD
    snap = snapshots.snapshot(conn, queue)
    assert snap.dead == ["A"] and set(snap.rows) == {"A"}
    assert snap.counters == {} and snap.flow_hashes == {}


def test_land_alone_arms_the_policies(conn, queue):
    # issue 13 item 6: a child that dies right after @enqueue_flow, before any host write,
    # is judged by the policy it was given, not by the default
    keys = [queue_key(queue, "pending"), job_key(queue, "P1")]
    keys += [job_key(queue, "P1", s) for s in ("dependencies", "processed", "unsuccessful")]
    keys += [job_key(queue, "C1"), job_key(queue, "C2")]
    assert conn.eval("enqueue_flow", keys, ["P1", "p", "C1", "a", "C2", "b", "ignore", "wait"]) == 2
    rows = snapshots.snapshot(conn, queue).rows
    assert (rows["C1"]["parent_policy"], rows["C2"]["parent_policy"]) == ("ignore", "wait")
    job = jobs.claim(conn, queue, LEASE)
    die(conn, queue, job, "early death")
    snap = snapshots.snapshot(conn, queue)
    assert snap.state("P1") == "awaiting_children"  # not dead, as the default 'fail' would make it
    assert flows.ignored_failures(conn, queue, "P1") == {"C1": "early death"}


def test_add_writes_nothing_after_the_land(conn, queue):
    # issue 13 item 6: the whole flow, policies too, is the one script; no host write follows it
    conn.clear_trace()
    flow = flows.add(conn, queue, "p", ["a", "b"], policy=["ignore", "remove"])
    assert [e.script for e in conn.trace] == ["@enqueue_flow"]
    rows = snapshots.snapshot(conn, queue).rows
    assert [rows[c]["parent_policy"] for c in flow.child_ids] == ["ignore", "remove"]


def test_a_completed_parents_flow_keys_expire_on_both_executors(either, queue):
    # issue 13 item 11: the parent's :dependencies, :processed and :unsuccessful stay readable
    # while its handler runs and for FLOW_KEYS_TTL_S after it completes, then go
    c = either
    flow = flows.add(c, queue, ("P", "p"), [("A", "a"), ("B", "b")], policy="ignore")
    a, b = claim_n(c, queue, 2)
    assert jobs.complete(c, queue, a.id, a.attempts, "A") == jobs.OK
    die(c, queue, b, "lost")
    parent = jobs.claim(c, queue, LEASE)
    assert parent.id == "P"
    flow_keys = [job_key(queue, "P", s) for s in ("dependencies", "processed", "unsuccessful")]
    assert [c.client.ttl(k) for k in flow_keys] == [-1, -1, -1]  # no expiry while the parent lives
    assert flows.children_values(c, queue, flow) == {"A": "A"}  # what the parent's handler reads
    assert jobs.complete(c, queue, "P", parent.attempts, "sum") == jobs.OK
    ttls = [c.client.ttl(k) for k in flow_keys]
    assert all(0 < t <= flows.FLOW_KEYS_TTL_S for t in ttls), ttls
    assert flows.children_values(c, queue, flow) == {"A": "A"}
    assert flows.ignored_failures(c, queue, flow) == {"B": "lost"}


# -- a parent id used again (issue 32): a child counts only toward the flow it was landed with --------
@pytest.mark.parametrize("policy", ["fail", "ignore"])
@pytest.mark.parametrize("ending", ["complete", "retry at the cap", "stall burial"])
def test_an_old_child_never_counts_toward_a_new_flow_under_the_same_parent_id(either, queue, ending, policy):
    # a caller removes a flow's parent while a child runs, then lands a new flow under the same
    # business id; the old child's ending finds a parent row again, and must leave it alone
    from echomq_teach import stalled

    c = either
    flows.add(c, queue, ("order-42", "first try"), [("c1", "old"), ("c2", "old")], policy=policy)
    if ending == "stall burial":
        # one counted stall before the remove, so the sweep after the new land buries c1 (max_stalled=1)
        jobs.claim(c, queue, 1)
        time.sleep(0.01)
        assert stalled.check(c, queue, max_stalled=1).requeued == ["c1"]
    old = jobs.claim(c, queue, 1 if ending == "stall burial" else LEASE)
    assert old.id == "c1"
    assert jobs.remove(c, queue, "order-42") is True
    new = flows.add(c, queue, ("order-42", "again"), [("d1", "new"), ("d2", "new")], policy=policy)
    if ending == "complete":
        assert jobs.complete(c, queue, "c1", old.attempts, "old result") == jobs.OK
    elif ending == "retry at the cap":
        die(c, queue, old, "old failure")
    else:
        time.sleep(0.01)
        assert stalled.check(c, queue, max_stalled=1).dead == ["c1"]
    # the old sibling ends too, as a plain completion
    sibling = jobs.claim(c, queue, LEASE)
    assert sibling.id == "c2" and jobs.complete(c, queue, "c2", sibling.attempts, "old result") == jobs.OK
    snap = snapshots.snapshot(c, queue)
    assert snap.state("order-42") == "awaiting_children" and snap.where("order-42") == []
    assert snap.rows["order-42"].get("last_error") is None
    assert flows.dependencies(c, queue, new) == 2
    assert flows.children_values(c, queue, new) == {} and flows.ignored_failures(c, queue, new) == {}
    # the new flow's own children, and only they, release it
    first = jobs.claim(c, queue, LEASE)
    assert first.id == "d1" and jobs.complete(c, queue, "d1", first.attempts, "one") == jobs.OK
    assert snapshots.snapshot(c, queue).state("order-42") == "awaiting_children"
    second = jobs.claim(c, queue, LEASE)
    assert second.id == "d2" and jobs.complete(c, queue, "d2", second.attempts, "two") == jobs.OK
    assert snapshots.snapshot(c, queue).where("order-42") == ["pending"]
    assert flows.children_values(c, queue, new) == {"d1": "one", "d2": "two"}
