"""The Pool's shortcuts (echomq_teach.shortcuts): each leaves the queue as the plain path does; the trace names it.

Every shortcut is run on the same work as the plain path (``shortcuts=False``),
on both executors, and the end states are compared: which set each job is in,
every row, the counters, the completions stream and the flow hashes.
"""

from __future__ import annotations

import pytest
import redis
from pool_support import end_state, handler, land_work

from echomq_teach import Connector, flows, jobs, keyspace, snapshots
from echomq_teach.consumer import Consumer, Pool
from echomq_teach.errors import WrongState
from echomq_teach.shortcuts import FLOW_REFUSALS, Lane

VARIANTS = {
    "native-reads": ["native-reads"],
    "pipeline": ["pipeline"],
    "hiredis": ["hiredis"],
    "all": True,
}


def drain(conn: Connector, q: str, shortcuts: object, size: int = 2) -> dict[str, object]:
    land_work(conn, q)
    pool = Pool(
        conn, q, handler, size=size, shortcuts=shortcuts, metronome_ms=5,
        retry_delay_ms=1, max_attempts=2, record=True, idle_sleep_ms=2,
    )
    try:
        report = pool.run(timeout=60, until_idle=True)
    finally:
        pool.close()
    assert report.errors == [] and report.stopped_by == "idle", report
    return end_state(conn, q)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_shortcut_leaves_the_end_state_of_the_plain_path(either: Connector, queue: str, variant: str) -> None:
    plain = drain(either, queue + "-plain", False)
    fast = drain(either, queue + "-" + variant, VARIANTS[variant])
    assert fast == plain
    # and the work really was done: the dead are the always-failing jobs and the failed flow's parent
    assert plain["sets"] == {
        "pending": [], "active": [], "schedule": [],
        "dead": ["JOBbad0", "JOBbad1", "JOBbad2", "JOBc2a", "JOBc3a", "JOBp3"],
    }
    # 12 plain, 3 flaky, the raw one, flow 1 (two children and the parent), flow 2 (one child, the parent), c3b
    assert plain["completed"] == 12 + 3 + 1 + 3 + 2 + 1
    assert any(("result", "done raw \udcff\udcfe bytes") in e for e in plain["stream"])


def test_a_pool_leaves_the_end_state_of_the_standalone_consumer(either: Connector, queue: str) -> None:
    # promote and recovery on the Metronome's tick, instead of in every beat, move nothing elsewhere
    q = queue + "-beat"
    land_work(either, q)
    report = Consumer(either, q, handler, retry_delay_ms=1, max_attempts=2, record=True, idle_sleep_ms=2).run(
        timeout=60, until_idle=True
    )
    assert report.stopped_by == "idle"
    assert end_state(either, q) == drain(either, queue + "-pool", True)


def test_a_pool_takes_every_shortcut_by_default_and_a_consumer_none(either: Connector, queue: str) -> None:
    pool = Pool(either, queue, handler, size=1)
    try:
        assert pool.shortcuts == {"native-reads", "pipeline", "hiredis"}
        c = pool.consumers[0]
        assert c.shortcuts == {"native-reads", "pipeline"} and c.conn.parser == "hiredis"
        assert pool.metronome.conn.parser == "python"
    finally:
        pool.close()
    assert Consumer(either, queue, handler).shortcuts == frozenset()
    assert Pool(either, queue, handler, size=1, shortcuts=False).shortcuts == frozenset()


# -- the trace names each shortcut ---------------------------------------------------------------------------
def pooled_trace(conn: Connector, q: str, n: int = 2) -> list:
    for i in range(n):
        jobs.enqueue(conn, q, f"ok {i}")
    pool = Pool(conn, q, handler, size=1, metronome_ms=5, idle_sleep_ms=2)
    try:
        report = pool.run(timeout=30, until_idle=True)
        assert report.settled == n
        return list(pool.consumers[0].conn.trace), list(pool.metronome.conn.trace)
    finally:
        pool.close()


def test_the_trace_on_wire_6_shows_one_round_trip_per_job(native_conn: Connector, queue: str) -> None:
    trace, ticks = pooled_trace(native_conn, queue)
    words = [e.args[0] for e in trace]
    # no EXISTS, no HGET: EMQ.CLAIM reads the pause flag, EMQ.COMPLETE refuses a flow child itself
    assert words[:5] == ["EMQ.CLAIM", "EMQ.COMPLETE", "EMQ.CLAIM", "EMQ.COMPLETE", "EMQ.CLAIM"]
    first, settle, claim = trace[0], trace[1], trace[2]
    assert first.shortcuts == ("native-reads: pause read in EMQ.CLAIM", "hiredis")
    assert settle.shortcuts == ("native-reads: flow check in the command", "pipeline 1/2", "hiredis")
    assert claim.shortcuts == ("native-reads: pause read in EMQ.CLAIM", "pipeline 2/2", "hiredis")
    assert str(settle).split("\n")[0].endswith("⟨native-reads: flow check in the command · pipeline 1/2 · hiredis⟩")
    # the last pipelined claim found nothing; the run ended on an idle claim of its own
    assert trace[4].reply == [] and trace[-1].reply == []
    # promote and reap ran on the metronome's tick, on its own connector, and the trace says so
    assert {e.script for e in ticks} >= {"@promote", "@reap"}
    assert all(e.shortcuts == ("metronome tick",) for e in ticks)


def test_the_trace_on_wire_4_shows_the_reads_before_the_settle(conn: Connector, queue: str) -> None:
    trace, _ = pooled_trace(conn, queue)
    words = [e.script or e.args[0] for e in trace]
    # claim/3's pause read, then per job: [parent read, next pause read] and [settle, next claim]
    assert words[:8] == ["EXISTS", "@claim2", "HGET", "EXISTS", "@complete", "@claim2", "HGET", "EXISTS"]
    pair = [("pipeline 1/2", "hiredis"), ("pipeline 2/2", "hiredis")]
    assert [e.shortcuts for e in trace[2:6]] == pair + pair


def test_the_plain_paths_trace_names_no_shortcut(either: Connector, queue: str) -> None:
    jobs.enqueue(either, queue, "w")
    either.clear_trace()
    Consumer(either, queue, handler).beat()
    assert either.trace and all(e.shortcuts == () for e in either.trace)
    assert all("⟨" not in str(e) for e in either.trace)


def test_a_flow_child_refused_natively_falls_back_to_the_script(native_conn: Connector, queue: str) -> None:
    flows.add(native_conn, queue, ("JOBparent", "p"), [("JOBchild", "ok c")])
    pool = Pool(native_conn, queue, handler, size=1, metronome_ms=5, idle_sleep_ms=2)
    try:
        report = pool.run(timeout=30, until_idle=True)
        trace = list(pool.consumers[0].conn.trace)
    finally:
        pool.close()
    assert report.settled == 2 and report.outcomes == {jobs.OK: 2}
    refused = next(e for e in trace if e.error)
    assert refused.args[0] == "EMQ.COMPLETE" and str(refused.reply).startswith(FLOW_REFUSALS)
    after = trace[trace.index(refused) + 1 :][:3]
    # the pipelined claim ran after the refusal, then the script path: the parent read and @complete
    assert [e.script or e.args[0] for e in after] == ["EMQ.CLAIM", "HGET", "@complete"]
    assert after[1].reply == "JOBparent" and after[2].reply == 1
    assert after[1].shortcuts[0] == after[2].shortcuts[0] == "native-reads: fallback"
    assert snapshots.snapshot(native_conn, queue).ids() == set()


# -- what the pipeline must not change --------------------------------------------------------------------------
@pytest.mark.parametrize("batch", [1, 8])
def test_max_jobs_leaves_the_rest_pending_not_claimed(either: Connector, queue: str, batch: int) -> None:
    # a batch claim asks for no more than the budget has left
    for i in range(50):
        jobs.enqueue(either, queue, f"ok {i}")
    pool = Pool(either, queue, handler, size=3, idle_sleep_ms=2, batch=batch)
    try:
        report = pool.run(max_jobs=20, timeout=30)
    finally:
        pool.close()
    assert report.settled == 20 and report.stopped_by == "max_jobs"
    snap = snapshots.snapshot(either, queue)
    assert len(snap.pending) == 30 and snap.active == [] and snap.completed == 20


def test_a_run_that_stops_settles_the_job_in_hand(either: Connector, queue: str) -> None:
    import time

    for i in range(20):
        jobs.enqueue(either, queue, f"ok {i}")

    def slow(job: jobs.Claimed) -> str:
        time.sleep(0.02)
        return "done"

    c = Consumer(either, queue, slow, promote=False, recovery=None, shortcuts=["pipeline"])
    report = c.run(timeout=0.1)
    assert report.stopped_by == "timeout"
    snap = snapshots.snapshot(either, queue)
    # the claim that rode in the last settle was worked and settled too: nothing is left in active
    assert snap.active == [] and snap.completed == report.settled == 20 - len(snap.pending)


@pytest.mark.parametrize("variant", ["plain", "all"])
def test_a_paused_queue_gives_a_pool_nothing(either: Connector, queue: str, variant: str) -> None:
    for i in range(3):
        jobs.enqueue(either, queue, f"ok {i}")
    jobs.pause(either, queue)
    before = snapshots.snapshot(either, queue).state_only()
    pool = Pool(either, queue, handler, size=2, shortcuts=variant == "all", idle_sleep_ms=5)
    try:
        report = pool.run(timeout=0.2)
    finally:
        pool.close()
    assert report.settled == 0
    assert snapshots.snapshot(either, queue).state_only() == before


def test_a_settle_carries_no_claim_into_a_paused_queue(either: Connector, queue: str) -> None:
    first = jobs.enqueue(either, queue, "one")
    second = jobs.enqueue(either, queue, "two")
    lane = Lane(either, queue, frozenset({"native-reads", "pipeline"}),
                lease_ms=30_000, retry_delay_ms=1_000, max_attempts=3, record=False)
    job = lane.claim()
    assert job is not None and job.id == first
    jobs.pause(either, queue)
    either.clear_trace()
    s = lane.settle(job, True, "done", claim_next=True)
    assert s == (jobs.OK, None, None, None)
    sent = [e.script or e.args[0] for e in either.trace]
    last_reply = either.trace[-1].reply
    assert snapshots.snapshot(either, queue).pending == [second]
    if either.native:
        assert sent == ["EMQ.COMPLETE", "EMQ.CLAIM"] and last_reply == []  # the pause read inside
    else:
        assert sent == ["HGET", "EXISTS", "@complete"]  # paused: no claim was sent at all


def breaking_run(conn: Connector, q: str, shortcuts: object, breaks: str) -> tuple[list[str], str]:
    """Two jobs; the first job's handler breaks a key; beats until one raises: (outcomes, the error's words)."""
    jobs.enqueue(conn, q, "one", job_id="JOBone")
    jobs.enqueue(conn, q, "two", job_id="JOBtwo")

    def handler(job: jobs.Claimed) -> str:
        if job.id == "JOBone" and breaks == "the next row":
            conn.client.hset(keyspace.job_key(q, "JOBtwo"), "attempts", "x")  # only a claim of JOBtwo minds
        elif job.id == "JOBone":
            metrics = keyspace.queue_key(q, "metrics:completed")
            conn.client.set(metrics, "not a hash")  # every completion is refused before its first write
        return "done"

    c = Consumer(conn, q, handler, promote=False, recovery=None, shortcuts=shortcuts, lease_ms=100)
    outcomes = []
    with pytest.raises((redis.exceptions.ResponseError, WrongState)) as err:
        for _ in range(3):
            outcomes.append(c.beat().outcome)
    return outcomes, str(err.value).replace(q, "Q")


def raw_state(conn: Connector, q: str) -> dict[str, object]:
    """The sets and the two rows, read one by one (a broken key would fail ``@snapshot``)."""
    c = conn.client
    return {
        **{s: sorted(c.zrange(keyspace.queue_key(q, s), 0, -1)) for s in keyspace.SETS},
        "rows": {j: {k: v for k, v in c.hgetall(keyspace.job_key(q, j)).items() if k != "lease_epoch"}
                 for j in ("JOBone", "JOBtwo")},
    }


@pytest.mark.parametrize("breaks", ["the next row", "the metrics"])
def test_a_refusal_is_raised_where_the_plain_beat_raises_it(either: Connector, queue: str, breaks: str) -> None:
    plain = breaking_run(either, queue + "-plain", (), breaks)
    fast = breaking_run(either, queue + "-fast", ["native-reads", "pipeline"], breaks)
    assert plain[1] == fast[1]  # the same refusal, raised by the same beat
    before, after = raw_state(either, queue + "-plain"), raw_state(either, queue + "-fast")
    if breaks == "the next row":
        # JOBone settles; the claim of JOBtwo is refused (with the pipeline, in the first beat's round trip)
        # and raised at the second beat: the queue is left as the plain beats leave it
        assert plain[0] == fast[0] == [jobs.OK]
        assert before == after
        return
    # the settle is refused: the one case the pipeline leaves otherwise (docs/decisions.md). The claim that
    # rode with it took JOBtwo, whose settle is refused too: JOBtwo waits in active for its lease, where the
    # plain consumer, which stopped before claiming, left it pending
    assert plain[0] == fast[0] == []
    assert before["active"] == ["JOBone"] and before["pending"] == ["JOBtwo"]
    assert after["active"] == ["JOBone", "JOBtwo"] and after["pending"] == []
    import time

    time.sleep(0.15)  # both 100 ms leases lapse; a reap (the Metronome's, in a pool) returns them
    assert sorted(jobs.reap(either, queue + "-fast")) == ["JOBone", "JOBtwo"]
    assert raw_state(either, queue + "-fast")["pending"] == ["JOBone", "JOBtwo"]


def test_a_pipeline_survives_a_script_flush(conn: Connector, queue: str, node) -> None:
    for i in range(3):
        jobs.enqueue(conn, queue, f"ok {i}")
    c = Consumer(conn, queue, handler, promote=False, recovery=None, shortcuts=["pipeline"])
    assert c.beat().outcome == jobs.OK  # @complete and @claim2 loaded; the next job is in hand
    raw = node.client()
    try:
        raw.script_flush()
    finally:
        raw.close()
    conn.clear_trace()
    assert c.beat().outcome == jobs.OK
    sent = [(e.script or " ".join(e.args[: 2 if e.args[0] == "SCRIPT" else 1]), e.error) for e in conn.trace]
    assert sent == [
        ("HGET", False), ("EXISTS", False),
        ("@complete", True), ("@claim2", True),  # both refused NOSCRIPT
        ("SCRIPT LOAD", False), ("@complete", False),  # then each loaded and sent again, in order
        ("SCRIPT LOAD", False), ("@claim2", False),
    ]
    report = c.run(timeout=10, until_idle=True)
    assert report.settled == 1 and snapshots.snapshot(conn, queue).completed == 3
