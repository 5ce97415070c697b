"""Every ending reaches the record under faults: a job whose workers die holding it is buried by the
run's counted stall sweep, and a recording run's stream holds that burial once, as the checker counts it."""

from __future__ import annotations

import pytest
from conftest import wait_for

from echomq_teach import jobs, keyspace
from echomq_teach.lab.run import Run


@pytest.mark.parametrize("record", [True, False], ids=["recorded", "unrecorded"])
def test_a_job_buried_under_faults_is_recorded_once_and_counted(either, queue, record):
    # the doomed workers hold a 150 ms lease, so the job stalls twice quickly; the healthy ones hold 5 s, which
    # no pause of a loaded machine outlasts (a healthy lease that lapsed would be a stall of its own, and a burial)
    with Run(either.node, queue, workers=1, lease_ms=5_000, work_ms=2, tick_ms=25, recovery="stalled",
             record=record, timeout=60) as run:
        try:
            jobs.drop(run.conn, queue)
            [doomed_job] = run.produce(1)
            run.start_metronome()  # promote and the stall sweep (max_stalled 1), recording as the run does
            for _ in range(2):  # two workers die holding it: two counted stalls, one over the cap
                doomed = run.spawn(0, crash_at="claimed", lease_ms=150)
                doomed.wait_ready()
                doomed.wait(timeout=30)
            wait_for(lambda: run.sizes()["dead"] == 1, "the sweep buries the job")
            rest = run.produce(20)
            run.start()
            assert run.wait_drained(30), run.sizes()
        finally:
            run.stop()
        report = run.check()
        crashes = [o.extra["point"] for o in run.history().notes("crash")]
        entries = [f for _, f in run.conn.client.xrange(keyspace.queue_key(queue, "stream:completions"))]
    assert crashes == ["claimed", "claimed"]
    assert report.valid, report.summary()
    assert (report.settled, report.completed, report.dead) == (21, 20, 1)
    if record:
        assert [e for e in entries if e["id"] == doomed_job] == [
            {"id": doomed_job, "outcome": "stalled", "attempts": "2", "error": "stalled"}
        ]
        assert sorted(e["id"] for e in entries) == sorted([doomed_job, *rest])
    else:
        assert entries == []
