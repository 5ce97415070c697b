"""Concurrency: four processes of consumers drain 5,000 jobs, and each job settles exactly once."""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

import pytest

from echomq_teach import jobs, keyspace, snapshots
from echomq_teach.connector import connect
from echomq_teach.consumer import Consumer

JOBS = 5_000
PROCESSES = 4
RUN_TIMEOUT_S = 60.0  # a bound, not a measurement: a healthy drain takes a few seconds


def echo(job: jobs.Claimed) -> str:
    return job.payload


def drain(address: dict[str, Any], queue: str, out: Any) -> None:
    """One worker process: its own connector, one recording consumer, run until the queue is idle."""
    conn = connect(address)
    try:
        report = Consumer(conn, queue, echo, record=True, idle_sleep_ms=5).run(timeout=RUN_TIMEOUT_S, until_idle=True)
        out.put((report.settled, report.outcomes, report.stopped_by))
    finally:
        conn.close()


@pytest.mark.slow
def test_four_processes_settle_each_job_exactly_once(node, conn, queue: str) -> None:
    enqueued = [jobs.enqueue(conn, queue, f"p{i}") for i in range(JOBS)]
    assert len(snapshots.snapshot(conn, queue).pending) == JOBS

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=drain, args=(node.address, queue, out)) for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    try:
        reports = [out.get(timeout=RUN_TIMEOUT_S + 30) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():  # never leave a worker behind, even on failure
                p.terminate()
                p.join(timeout=5)
    assert all(p.exitcode == 0 for p in procs)
    assert all(stopped == "idle" for _, _, stopped in reports), reports
    assert sum(settled for settled, _, _ in reports) == JOBS
    assert all(outcomes == {jobs.OK: settled} for settled, outcomes, _ in reports if settled)

    entries = conn.client.xrange(keyspace.queue_key(queue, "stream:completions"))
    settled_ids = [fields["id"] for _, fields in entries]
    assert len(settled_ids) == JOBS
    assert len(set(settled_ids)) == JOBS  # no job settled twice
    assert set(settled_ids) == set(enqueued)  # and none was lost
    assert all(fields["outcome"] == "completed" and fields["attempts"] == "1" for _, fields in entries)
    # each result is the job's own payload: no worker finished another's claim
    payload_of = {job_id: f"p{i}" for i, job_id in enumerate(enqueued)}
    assert all(fields["result"] == payload_of[fields["id"]] for _, fields in entries)

    snap = snapshots.snapshot(conn, queue)
    assert snap.completed == JOBS
    assert conn.client.hget(keyspace.queue_key(queue, "metrics:completed"), "count") == str(JOBS)
    assert snap.sizes() == {"pending": 0, "active": 0, "schedule": 0, "dead": 0}
    assert snap.rows == {}
    # the work was shared: more than one process settled jobs
    assert sum(1 for settled, _, _ in reports if settled) > 1
