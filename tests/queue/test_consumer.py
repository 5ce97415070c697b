"""Consumers: the beat, the bounded run, the retry policy, the recovery leg, recording; Pool and Metronome."""

from __future__ import annotations

import threading

import pytest
import redis
from conftest import server_ms, wait_until_due

from echomq_teach import Connector, jobs, keyspace, snapshots
from echomq_teach.consumer import Budget, Consumer, Error, Metronome, Pool


def stream(conn: Connector, queue: str) -> list[dict[str, str]]:
    return [fields for _, fields in conn.client.xrange(keyspace.queue_key(queue, "stream:completions"))]


def upper(job: jobs.Claimed) -> str:
    return job.payload.upper()


def failing(job: jobs.Claimed) -> Error:
    return Error(f"nope #{job.attempts}")


# -- one beat -----------------------------------------------------------------------------------------
def test_beat_claims_runs_and_completes(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "hello")
    b = Consumer(conn, queue, upper).beat()
    assert b.claimed == jobs.Claimed(job_id, "hello", 1)
    assert b.outcome == jobs.OK and not b.idle
    snap = snapshots.snapshot(conn, queue)
    assert snap.ids() == set() and snap.completed == 1


def test_beat_on_an_empty_queue_is_idle(conn: Connector, queue: str) -> None:
    b = Consumer(conn, queue, upper).beat()
    assert b.idle and b.outcome is None and b.claimed is None


def test_beat_legs_are_promote_recover_claim_settle(conn: Connector, queue: str) -> None:
    jobs.enqueue(conn, queue, "w")
    conn.clear_trace()
    Consumer(conn, queue, upper).beat()
    scripts = [e.script or e.args[0] for e in conn.trace]
    assert scripts == ["@promote", "@reap", "EXISTS", "@claim2", "HGET", "@complete"]


def test_default_retry_delay_is_1000_ms(conn: Connector, queue: str) -> None:
    c = Consumer(conn, queue, failing)
    assert c.retry_delay_ms == 1_000 and c.max_attempts == jobs.DEFAULT_MAX_ATTEMPTS
    job_id = jobs.enqueue(conn, queue, "w")
    t0 = server_ms(conn)
    b = c.beat()
    t1 = server_ms(conn)
    assert b.outcome == jobs.SCHEDULED and b.detail == "nope #1"
    snap = snapshots.snapshot(conn, queue)
    assert t0 + 1_000 <= snap.sets["schedule"][job_id] <= t1 + 1_000
    assert snap.rows[job_id]["last_error"] == "nope #1"


def test_a_handler_exception_is_an_error_result(conn: Connector, queue: str) -> None:
    def crash(job: jobs.Claimed) -> str:
        raise ValueError("bad payload")

    job_id = jobs.enqueue(conn, queue, "w")
    b = Consumer(conn, queue, crash).beat()
    assert b.outcome == jobs.SCHEDULED
    assert jobs.row(conn, queue, job_id)["last_error"] == "ValueError: bad payload"


def test_max_attempts_cap_buries_the_job(conn: Connector, queue: str) -> None:
    job_id = jobs.enqueue(conn, queue, "w")
    c = Consumer(conn, queue, failing, retry_delay_ms=1, max_attempts=2)
    assert c.beat().outcome == jobs.SCHEDULED
    wait_until_due(conn, queue, "schedule")
    b = c.beat()  # the beat's promote leg brings it back before the claim
    assert b.promoted == [job_id]
    assert b.claimed.attempts == 2 and b.outcome == jobs.DEAD
    row = jobs.row(conn, queue, job_id)
    assert row["state"] == "dead" and row["attempts"] == "2" and row["last_error"] == "nope #2"


def test_handler_values_are_stored_as_strings(conn: Connector, queue: str) -> None:
    jobs.enqueue(conn, queue, "w")
    jobs.enqueue(conn, queue, "w")
    c = Consumer(conn, queue, lambda j: 42, record=True)
    c.beat()
    c.beat()
    assert [e["result"] for e in stream(conn, queue)] == ["42", "42"]
    jobs.enqueue(conn, queue, "w")
    Consumer(conn, queue, lambda j: None, record=True).beat()
    assert stream(conn, queue)[-1]["result"] == ""


# -- the recovery leg -----------------------------------------------------------------------------------
def crashed_claim(conn: Connector, queue: str) -> jobs.Claimed:
    jobs.enqueue(conn, queue, "w")
    got = jobs.claim(conn, queue, 20)  # a worker took it under a tiny lease and died
    wait_until_due(conn, queue, "active")
    return got


def test_recovery_leg_reaps_by_default(conn: Connector, queue: str) -> None:
    crashed = crashed_claim(conn, queue)
    c = Consumer(conn, queue, upper)
    assert c.recovery == "reap"
    b = c.beat()
    assert b.recovered == [crashed.id]
    assert b.claimed == jobs.Claimed(crashed.id, "w", 2)  # the same beat claims it again, new token
    assert b.outcome == jobs.OK


def test_recovery_leg_stalled_counts_the_stall(conn: Connector, queue: str) -> None:
    crashed = crashed_claim(conn, queue)
    b = Consumer(conn, queue, lambda j: Error("keep it"), recovery="stalled", retry_delay_ms=60_000).beat()
    assert b.recovered == [crashed.id] and b.buried == []
    assert jobs.row(conn, queue, crashed.id)["stalled"] == "1"


def test_recovery_leg_stalled_buries_past_max(conn: Connector, queue: str) -> None:
    crashed = crashed_claim(conn, queue)
    conn.client.hset(keyspace.job_key(queue, crashed.id), "stalled", 1)  # it stalled once before
    b = Consumer(conn, queue, upper, recovery="stalled", max_stalled=1).beat()
    assert b.buried == [crashed.id] and b.idle
    assert jobs.row(conn, queue, crashed.id)["last_error"] == "stalled"


class WorkerKilled(BaseException):
    """A worker dying inside its handler: the beat stops where it is and nothing settles."""


def test_a_poison_job_loops_under_reap_and_is_buried_under_stalled(either: Connector, queue: str) -> None:
    # issue 32: max_attempts is read only by @retry, which a dying worker never calls; under the default
    # leg a job that kills every worker is handed out for ever, past its cap; the counted sweep buries it
    def poison(job: jobs.Claimed) -> str:
        raise WorkerKilled

    seen: dict[str, list[tuple[list[str], int]]] = {}
    for leg in ("reap", "stalled"):
        q = f"{queue}-{leg}"
        job_id = jobs.enqueue(either, q, "kills its worker")
        seen[leg] = []
        for _ in range(6):
            worker = Consumer(either, q, poison, lease_ms=20, max_attempts=3, recovery=leg, max_stalled=2)
            try:
                worker.beat()
            except WorkerKilled:
                pass
            snap = snapshots.snapshot(either, q)
            seen[leg].append((snap.where(job_id), int(snap.rows[job_id]["attempts"])))
            wait_until_due(either, q, "active")
    assert seen["reap"] == [(["active"], n) for n in range(1, 7)]  # six runs under a cap of three
    assert seen["stalled"] == [(["active"], n) for n in (1, 2, 3)] + [(["dead"], 3)] * 3
    [buried] = snapshots.snapshot(either, f"{queue}-stalled").dead
    assert jobs.row(either, f"{queue}-stalled", buried)["last_error"] == "stalled"


def test_no_recovery_leg_leaves_the_lapsed_lease(conn: Connector, queue: str) -> None:
    crashed = crashed_claim(conn, queue)
    b = Consumer(conn, queue, upper, recovery=None).beat()
    assert b.recovered == [] and b.idle
    assert snapshots.snapshot(conn, queue).where(crashed.id) == ["active"]


# -- record=True ------------------------------------------------------------------------------------------
def test_record_adds_each_settled_job_to_the_stream(conn: Connector, queue: str) -> None:
    ok_id = jobs.enqueue(conn, queue, "fine")
    bad_id = jobs.enqueue(conn, queue, "bad")
    c = Consumer(conn, queue, lambda j: Error("no") if j.payload == "bad" else "done", record=True, max_attempts=1)
    assert c.beat().outcome == jobs.OK
    assert c.beat().outcome == jobs.DEAD
    assert stream(conn, queue) == [
        {"id": ok_id, "outcome": "completed", "attempts": "1", "result": "done"},
        {"id": bad_id, "outcome": "dead", "attempts": "1", "error": "no"},
    ]


def test_record_is_atomic_with_the_settle(conn: Connector, queue: str) -> None:
    jobs.enqueue(conn, queue, "w")
    conn.clear_trace()
    Consumer(conn, queue, upper, record=True).beat()
    # no XADD of its own: the stream entry is written inside @complete
    assert not any(e.args[0] == "XADD" for e in conn.trace)
    assert [e.script for e in conn.trace if e.script] == ["@promote", "@reap", "@claim2", "@complete"]
    assert len(stream(conn, queue)) == 1


def test_a_stale_settle_records_nothing(conn: Connector, queue: str) -> None:
    crashed = crashed_claim(conn, queue)
    jobs.reap(conn, queue)
    jobs.claim(conn, queue, 30_000)
    assert jobs.complete(conn, queue, crashed.id, crashed.attempts, record=True) == jobs.STALE
    assert jobs.retry(conn, queue, crashed.id, crashed.attempts, "x", 1, 1, record=True) == jobs.STALE
    assert stream(conn, queue) == []


def test_without_record_the_stream_is_untouched(conn: Connector, queue: str) -> None:
    jobs.enqueue(conn, queue, "w")
    Consumer(conn, queue, upper).beat()
    assert conn.client.exists(keyspace.queue_key(queue, "stream:completions")) == 0


# -- run() ------------------------------------------------------------------------------------------------
def test_run_stops_at_max_jobs(conn: Connector, queue: str) -> None:
    for i in range(5):
        jobs.enqueue(conn, queue, str(i))
    report = Consumer(conn, queue, upper).run(max_jobs=3, timeout=30)
    assert report.stopped_by == "max_jobs" and report.settled == 3
    assert report.outcomes == {jobs.OK: 3}
    assert len(snapshots.snapshot(conn, queue).pending) == 2


def test_run_until_idle_drains_the_queue(conn: Connector, queue: str) -> None:
    for i in range(10):
        jobs.enqueue(conn, queue, str(i))
    report = Consumer(conn, queue, upper, idle_sleep_ms=1).run(timeout=30, until_idle=True)
    assert report.stopped_by == "idle" and report.settled == 10
    assert snapshots.snapshot(conn, queue).completed == 10


def test_run_until_idle_waits_for_a_scheduled_retry(conn: Connector, queue: str) -> None:
    # idle means nothing in pending, active or schedule: a parked retry keeps the loop going
    jobs.enqueue(conn, queue, "w")
    seen: list[int] = []

    def flaky(job: jobs.Claimed) -> str | Error:
        seen.append(job.attempts)
        return Error("once") if job.attempts == 1 else "ok"

    report = Consumer(conn, queue, flaky, retry_delay_ms=30, idle_sleep_ms=5).run(timeout=30, until_idle=True)
    assert report.stopped_by == "idle"
    assert seen == [1, 2] and report.outcomes == {jobs.SCHEDULED: 1, jobs.OK: 1}


def test_run_is_bounded_by_its_timeout(conn: Connector, queue: str) -> None:
    report = Consumer(conn, queue, upper).run(timeout=0.1)
    assert report.stopped_by == "timeout" and report.settled == 0 and report.beats >= 1


def test_stop_ends_a_run_from_another_thread(conn: Connector, queue: str) -> None:
    c = Consumer(conn, queue, upper)
    threading.Timer(0.05, c.stop).start()
    report = c.run(timeout=30)
    assert report.stopped_by == "stop()"


# -- Pool and Metronome ---------------------------------------------------------------------------------------
def test_metronome_tick_promotes_and_reaps(conn: Connector, queue: str) -> None:
    crashed = crashed_claim(conn, queue)
    parked = jobs.enqueue(conn, queue, "parked")
    got = jobs.claim(conn, queue, 30_000)
    jobs.retry(conn, queue, got.id, got.attempts, "x", 1, 3)
    wait_until_due(conn, queue, "schedule")
    m = Metronome(conn, queue)
    assert m.tick() == ([parked], [crashed.id])
    assert (m.ticks, m.promoted, m.recovered) == (1, 1, 1)


def test_pool_drains_with_one_metronome_doing_recovery(conn: Connector, queue: str) -> None:
    crashed = crashed_claim(conn, queue)
    parked = jobs.enqueue(conn, queue, "parked")
    got = jobs.claim(conn, queue, 30_000)
    jobs.retry(conn, queue, got.id, got.attempts, "x", 1, 3)
    fresh = [jobs.enqueue(conn, queue, str(i)) for i in range(40)]
    pool = Pool(conn, queue, upper, size=3, metronome_ms=10, record=True, idle_sleep_ms=2)
    try:
        # the pool's consumers leave promote and recovery to the metronome
        assert all(c.recovery is None and not c.promote for c in pool.consumers)
        assert len({id(c.conn) for c in pool.consumers} | {id(pool.metronome.conn)}) == 4
        report = pool.run(max_jobs=42, timeout=30)
    finally:
        pool.close()
    assert report.settled == 42 and report.outcomes == {jobs.OK: 42}
    assert pool.metronome.ticks >= 1
    assert pool.metronome.recovered >= 1 and pool.metronome.promoted >= 1
    settled = [e["id"] for e in stream(conn, queue)]
    assert sorted(settled) == sorted([crashed.id, parked, *fresh])
    assert snapshots.snapshot(conn, queue).ids() == set()


def test_pool_run_until_idle(conn: Connector, queue: str) -> None:
    for i in range(20):
        jobs.enqueue(conn, queue, str(i))
    pool = Pool(conn, queue, upper, size=2, metronome_ms=10, idle_sleep_ms=2)
    try:
        report = pool.run(timeout=30, until_idle=True)
    finally:
        pool.close()
    assert report.settled == 20 and report.stopped_by == "idle"


# -- review defects (issue 13 item 5): each of these failed before its fix ------------------------------
def test_pool_passes_max_stalled_to_its_metronome(conn: Connector, queue: str) -> None:
    # a job that stalled twice: under max_stalled=3 the pool's sweep requeues it, the default would bury it
    job_id = jobs.enqueue(conn, queue, "slow")
    conn.client.hset(keyspace.job_key(queue, job_id), "stalled", 2)
    jobs.claim(conn, queue, 1)
    wait_until_due(conn, queue, "active")
    pool = Pool(conn, queue, upper, size=1, recovery="stalled", max_stalled=3, metronome_ms=10)
    try:
        assert pool.metronome.max_stalled == 3
        assert pool.metronome.tick() == ([], [job_id])  # requeued, not buried
    finally:
        pool.close()
    assert snapshots.snapshot(conn, queue).where(job_id) == ["pending"]


def test_an_exception_in_a_pool_thread_is_in_the_report(conn: Connector, queue: str) -> None:
    jobs.enqueue(conn, queue, "x")
    # a pending and a schedule set that are not sorted sets: every claim the consumers send, and
    # the metronome's promote, is refused by the node
    for name in ("pending", "schedule"):
        conn.client.delete(keyspace.queue_key(queue, name))
        conn.client.set(keyspace.queue_key(queue, name), "not a zset")
    pool = Pool(conn, queue, upper, size=2, metronome_ms=10, idle_sleep_ms=2)
    try:
        report = pool.run(timeout=5, until_idle=True)
    finally:
        pool.close()
    assert "error" in report.stopped_by.split(",")
    assert len(report.errors) == 3  # two consumers and the metronome, each named with its error
    assert all("WRONGTYPE" in e for e in report.errors), report.errors
    assert sorted(e.split(":")[0] for e in report.errors) == ["consumer-0", "consumer-1", "metronome"]


def test_a_run_that_raises_gives_its_budget_back(conn: Connector, queue: str) -> None:
    # a pool's consumers share one Budget: a consumer whose run ends on an error gives back what it
    # claimed and will not settle, so the others may still settle it
    jobs.enqueue(conn, queue, "x")
    conn.client.set(keyspace.queue_key(queue, "metrics:completed"), "not a hash")  # the complete is refused
    budget = Budget(max_jobs=1)
    with pytest.raises(redis.ResponseError, match="metrics:completed"):
        Consumer(conn, queue, upper).run_within(budget, timeout=5)
    assert (budget.taken, budget.settled) == (0, 0)
    assert budget.take() == 1  # the one job the run counted on is the others' again


def test_a_metronome_error_stops_its_loop_and_is_kept(conn: Connector, queue: str) -> None:
    conn.client.set(keyspace.queue_key(queue, "schedule"), "not a zset")
    m = Metronome(conn.fork(), queue, interval_ms=5)
    try:
        m.start()
        m._thread.join(timeout=10)  # the loop ends by itself, on its first tick's error
        assert not m._thread.is_alive()
        m.stop()
    finally:
        m.conn.close()
    assert len(m.errors) == 1 and "WRONGTYPE" in m.errors[0]
