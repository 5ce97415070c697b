"""Faults on real worker processes and a real durable node, judged by the checker.

The nemesis run is the suite's load test under faults: 4 worker processes, a
seeded schedule of SIGKILL, SIGSTOP past the lease, dropped links, SCRIPT
FLUSH and one node restart, 5,000 jobs (``ECHOMQ_FAULT_JOBS=20000`` for the
long run). Every bound here is a bound, not a measurement.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable

import pytest
from conftest import gone, wait_for

from echomq_teach import jobs, keyspace
from echomq_teach.errors import BadInput
from echomq_teach.lab import handlers
from echomq_teach.lab.checker import Report
from echomq_teach.lab.crashes import crash_point, crash_points
from echomq_teach.lab.history import Op
from echomq_teach.lab.nemesis import Nemesis
from echomq_teach.lab.run import Fault, Run

FAULT_JOBS = int(os.environ.get("ECHOMQ_FAULT_JOBS", "5000"))
SEED = int(os.environ.get("ECHOMQ_FAULT_SEED", "20261203"))




def stream_ids(run: Run) -> Counter[str]:
    entries = run.conn.client.xrange(keyspace.queue_key(run.queue, "stream:completions"))
    return Counter(f["id"] for _, f in entries)



@pytest.mark.slow
def test_a_seeded_nemesis_loses_nothing_and_settles_each_job_once(durable, queue):
    nemesis = Nemesis(seed=SEED, kinds=("kill", "freeze", "drop_link", "script_flush"),
                      count=max(10, FAULT_JOBS // 400), gap_s=(0.1, 0.35), freeze_s=(0.7, 1.2),
                      must=("restart", "kill", "freeze"))
    with Run(durable, queue, workers=4, lease_ms=500, work_ms=2, tick_ms=50, timeout=240) as run:
        try:
            enqueued = run.produce(FAULT_JOBS)
            run.start()
            applied = nemesis.run(run, deadline_s=120)
            assert run.wait_drained(240), run.sizes()
        finally:
            run.stop()
        pids = [w.pid for w in run.all]
        report = run.check()
        ids = stream_ids(run)
        print(report.summary())
        print("\n".join(map(str, applied)))
    assert all(gone(p) for p in pids)  # every worker the run started was stopped by its PID
    kinds = {f.kind for f in applied}
    assert {"kill", "freeze", "restart"} <= kinds
    assert len(run.all) > 4  # each kill put a new worker in its slot
    assert report.valid, report.summary()
    assert report.lost == [] and report.settled_twice == [] and report.unfinished == []
    assert (report.enqueued, report.settled) == (FAULT_JOBS, FAULT_JOBS)
    # every job settled exactly once in the completions stream, and nothing else did
    assert set(ids) == set(enqueued) and set(ids.values()) == {1}


def test_a_nemesis_on_batch_workers_loses_nothing_and_settles_each_job_once(either, queue):
    # each worker claims 8 jobs per call and settles them in one round trip: a kill or a freeze lands while
    # it holds a batch, between the claim and the settles, and strands up to 8 leases until the reap
    nemesis = Nemesis(seed=SEED + 25, kinds=("kill", "freeze", "drop_link", "script_flush"), count=8,
                      gap_s=(0.05, 0.15), freeze_s=(0.7, 1.0), must=("kill", "freeze"))
    with Run(either.node, queue, workers=4, lease_ms=500, work_ms=3, tick_ms=50, batch=8, timeout=120) as run:
        try:
            enqueued = run.produce(2400)
            run.start()
            applied = nemesis.run(run, deadline_s=60)
            assert run.wait_drained(120), run.sizes()
        finally:
            run.stop()
        report = run.check()
        ids = stream_ids(run)
        claims = run.history().calls("claim")
        print(report.summary())
    assert {"kill", "freeze"} <= {f.kind for f in applied}
    assert {o.extra.get("batch") for o in claims} == {8}  # every claim went out in a batch of 8
    assert report.valid, report.summary()
    assert report.lost == [] and report.settled_twice == [] and report.unfinished == []
    assert report.recovered  # some batch was stranded by a fault and came back by its leases
    assert set(ids) == set(enqueued) and set(ids.values()) == {1}


def test_the_schedule_is_the_seed_s():
    a = Nemesis(seed=5, count=12, kinds=("kill", "freeze"), must=("restart",)).draw(4)
    b = Nemesis(seed=5, count=12, kinds=("kill", "freeze"), must=("restart",)).draw(4)
    c = Nemesis(seed=6, count=12, kinds=("kill", "freeze"), must=("restart",)).draw(4)
    assert a == b and a != c
    assert [f.kind for f in a].count("restart") == 1
    assert all(f.slot in range(4) for f in a if f.kind != "restart")
    assert all(x.at_s < y.at_s for x, y in zip(a, a[1:]))


# -- crash points ------------------------------------------------------------------------------------
# (point, handler runs, charges made, the token that settled, whether a second worker ran it)
CRASHES = [
    ("claimed", 1, 1, 2),  # died holding the claim: the next worker's run is the only one
    ("handler", 2, 1, 2),  # died halfway through: ran twice, charged once (the charge comes at the end)
    ("handled", 2, 2, 2),  # died after the charge, before the settle: charged twice — at least once
    ("settle-sent", 1, 1, 1),  # the settle ran; the worker never read the answer: settled once, by token 1
]


@pytest.mark.parametrize(("point", "runs", "charges", "token"), CRASHES, ids=[c[0] for c in CRASHES])
def test_a_worker_killed_at_each_crash_point(either, point, runs, charges, token, queue):
    out = crash_point(either.node, queue, point)
    h, report, job = out.history, out.report, out.job
    crash = h.notes("crash")
    assert [(o.worker, o.extra["point"], o.job) for o in crash] == [("w0", point, job)]
    assert report.valid, report.summary()
    assert (out.runs, out.charges, out.token) == (runs, charges, token)
    w0_settles = [o for o in h.calls("complete") if o.worker == "w0"]
    if point == "settle-sent":
        # the worker's history holds the settle it sent and no answer: the stream shows it ran
        assert [o.indeterminate for o in w0_settles] == [True] and report.indeterminate["complete"] == 1
        assert not out.recovered and out.settled_by == "w0"
    else:
        assert w0_settles == [] and out.recovered and out.settled_by != "w0"


def test_a_worker_killed_halfway_through_its_batch(either, queue):
    # w0 claims four jobs in one call, runs two handlers and dies: nothing of its batch was settled
    # a lease far longer than a healthy batch takes (4 × 20 ms), so that only the dead worker's leases lapse, even
    # on a loaded machine
    with Run(either.node, queue, workers=2, lease_ms=1500, work_ms=20, tick_ms=20, batch=4,
             handler="echomq_teach.lab.handlers:charge", timeout=60) as run:
        try:
            batch = run.produce(4)
            doomed = run.spawn(0, crash_at="handled", crash_on=2)
            doomed.wait_ready()
            run.start_metronome()
            doomed.wait(timeout=30)
            run.start()  # a healthy worker in each empty slot
            assert run.wait_drained(30), run.sizes()
        finally:
            run.stop()
        h = run.history()
        report = run.check()
        charged = handlers.effects(run.conn, queue)
        settles = report_settles(run)
    w0 = [o for o in h.calls() if o.worker == "w0"]
    assert [(o.op, o.job) for o in w0] == [("claim", j) for j in batch]  # four claims of one call, no settle
    assert report.valid, report.summary()
    assert sorted(report.recovered) == sorted(batch)  # every lease of the batch lapsed and was reaped
    assert [report.handler_runs[j] for j in batch] == [2, 2, 1, 1]
    assert [charged[j] for j in batch] == [2, 2, 1, 1]  # at least once: the two it ran were charged twice
    assert sorted(settles) == sorted((j, "completed", "2") for j in batch)


def test_a_frozen_worker_holding_half_a_batch_is_answered_stale(node, queue):
    # four handlers of 300 ms under 1.5 s leases: the lease guard would settle the first three when the fourth
    # starts (half the lease gone); frozen after two, w0 outlives every lease of its batch, w1 settles the
    # four, and w0's four settles, sent when it wakes, are all stale
    with Run(node, queue, workers=2, lease_ms=1500, work_ms=300, tick_ms=20, batch=4, timeout=60) as run:
        batch = run.produce(4)
        report, late = zombie(run, batch, lambda: len([o for o in run.history().notes("ran") if o.worker == "w0"]) >= 2,
                              "w0 has run half its batch")
        settles = report_settles(run)
    assert [o.reply for o in late] == ["stale"] * 4  # the fence: w1's claims moved every token
    assert report.valid and report.stale_refused == 4, report.summary()
    assert sorted(settles) == sorted((j, "completed", "2") for j in batch)


def test_crash_points_run_side_by_side_in_order(node, queue):
    outs = crash_points(node, queue)
    assert [o.row() for o in outs] == [(p, r, c, t, o.settled_by, p != "settle-sent")
                                       for (p, r, c, t), o in zip(CRASHES, outs)]
    with pytest.raises(BadInput, match="point"):
        crash_point(node, queue, "lunch")
    with pytest.raises(TypeError, match="handler"):  # 07's table's handler only: 07.1 asks about another
        crash_point(node, queue, "claimed", handler="echomq_teach.lab.handlers:charge_first")


def report_settles(run: Run) -> list[tuple[str, str, str]]:
    entries = run.conn.client.xrange(keyspace.queue_key(run.queue, "stream:completions"))
    return [(f["id"], f["outcome"], f["attempts"]) for _, f in entries]


# -- the zombie, dropped links, a flushed script cache ---------------------------------------------------
#: w1's lease in ``zombie``: far longer than its work takes even on a loaded machine, so that only the frozen
#: w0's leases lapse (a lapse of w1's would make a second stale settle and a third run)
HEALTHY_LEASE_MS = 10_000


def zombie(run: Run, jobs_: list[str], when: Callable[[], bool], what: str) -> tuple[Report, list[Op]]:
    """w0 works until ``when``, is frozen while w1 completes every job, then thawed: the checker's report
    and w0's completions, once each is answered."""
    try:
        run.spawn(0).wait_ready()
        run.start_metronome()
        wait_for(when, what)
        run.freeze(0)
        run.spawn(1, lease_ms=HEALTHY_LEASE_MS).wait_ready()
        wait_for(lambda: sorted(o.job for o in run.history().calls("complete") if o.worker == "w1" and o.reply == "ok")
                 == sorted(jobs_), "w1 completes every job")
        run.thaw(0)
        wait_for(lambda: len([o for o in run.history().calls("complete") if o.worker == "w0" and o.ok]) == len(jobs_),
                 "the zombie's settles are answered")
        assert run.wait_drained(10)
    finally:
        run.stop()
    return run.check(), [o for o in run.history().calls("complete") if o.worker == "w0"]


@pytest.mark.parametrize("handler", ["charge", "charge_once"])
def test_a_frozen_worker_wakes_after_its_lease_and_its_settle_is_refused(node, queue, handler):
    # the lease (1.5 s) is longer than the work (600 ms): only a freeze makes a worker outlive it; the work is long
    # enough that the freeze lands while w0 still runs the job, even on a loaded machine
    with Run(node, queue, workers=2, lease_ms=1_500, work_ms=600, handler=f"echomq_teach.lab.handlers:{handler}",
             tick_ms=20, timeout=60) as run:
        [job] = run.produce(1)
        report, late = zombie(run, [job], lambda: any(o.worker == "w0" for o in run.history().notes("run")),
                              "w0 runs the job")
        settles = report_settles(run)
        charged, once = handlers.effects(run.conn, queue)[job], handlers.effects_once(run.conn, queue)
    assert [o.reply for o in late] == ["stale"]  # the fence: w1's claim moved the token
    assert report.valid and report.stale_refused == 1 and report.handler_runs[job] == 2
    assert job in report.recovered
    assert settles == [(job, "completed", "2")]
    if handler == "charge":
        assert charged == 2  # at least once: the job was charged twice
    else:
        assert charged == 0 and list(once) == [job]  # idempotent: charged once, whoever ran it


def test_dropped_links_and_a_flushed_script_cache_lose_nothing(node, queue):
    with Run(node, queue, workers=4, lease_ms=400, work_ms=3, tick_ms=30, timeout=60) as run:
        try:
            enqueued = run.produce(800)
            run.start()
            for slot in range(4):
                time.sleep(0.05)
                assert run.drop_link(slot) >= 1  # each worker's link was found by its name and killed
            run.script_flush()
            assert run.wait_drained(60)
        finally:
            run.stop()
        report = run.check()
        notes = [o.op for o in run.history().notes() if o.worker == "nemesis"]
        ids = stream_ids(run)
    assert notes == ["drop_link"] * 4 + ["script_flush"]
    assert report.valid, report.summary()
    assert set(ids) == set(enqueued) and set(ids.values()) == {1}


# -- bad input: refused before anything starts or is written -----------------------------------------------
def test_bad_input_is_refused_before_any_process_or_write(node, queue, tmp_path):
    from conftest import state

    conn = node.connector()
    try:
        before = state(conn, queue)
        for kwargs, words in (
            ({"workers": 0}, "workers"), ({"lease_ms": -1}, "lease_ms"), ({"recovery": "hope"}, "recovery"),
            ({"handler": "nocolon"}, "module:function"), ({"timeout": 0}, "timeout"),
        ):
            with pytest.raises(BadInput, match=words):
                Run(node, queue, folder=tmp_path / "r", **kwargs)
        assert not (tmp_path / "r").exists()
        with pytest.raises(BadInput, match="queue name"):
            Run(node, "no spaces", folder=tmp_path / "r")
        with Run(node, queue, workers=2, folder=tmp_path / "ok") as run:
            with pytest.raises(BadInput, match="slot"):
                run.spawn(2)
            with pytest.raises(BadInput, match="crash_at"):
                run.spawn(0, crash_at="lunch")
            with pytest.raises(BadInput, match="unknown worker options"):
                run.spawn(0, colour="red")
            with pytest.raises(BadInput, match="durable"):
                run.restart_node()  # a node without persistence would come back empty
            with pytest.raises(BadInput, match="unknown fault"):
                run.apply(Fault(0.0, "meteor"))
            assert run.all == []  # no process was started
        with pytest.raises(BadInput, match="unknown fault kinds"):
            Nemesis(seed=1, kinds=("kill", "flood"))
        with pytest.raises(BadInput, match="freeze_s"):
            Nemesis(seed=1, freeze_s=(2.0, 1.0))
        assert state(conn, queue) == before
    finally:
        conn.close()


def test_a_worker_with_a_handler_it_cannot_load_says_so(node, queue):
    with Run(node, queue, workers=1, handler="no_such_module:go") as run:
        w = run.spawn(0)
        with pytest.raises(RuntimeError, match="cannot load handler 'no_such_module:go'"):
            w.wait_ready(timeout=20)
    assert w.returncode not in (None, 0)
    assert jobs.paused(node.connector(), queue) is False


def shout(job, ctx):
    """A handler defined here, not in a module the workers know: it travels as its source."""
    ctx.work()
    return job.payload.upper()


def test_a_handler_function_travels_to_the_workers_as_its_source(node, queue):
    with Run(node, queue, workers=2, handler=shout, work_ms=1, timeout=30) as run:
        run.produce(20, payload=lambda i: f"job {i}")
        run.start()
        assert run.wait_drained(30)
        run.stop()
        results = {f["result"] for _, f in run.conn.client.xrange(keyspace.queue_key(queue, "stream:completions"))}
        assert (run.folder / "run_handler_shout.py").exists()
    assert results == {f"JOB {i}" for i in range(20)}
    with pytest.raises(BadInput, match="lambda"):
        Run(node, queue, handler=lambda job, ctx: "x")
