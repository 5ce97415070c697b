"""The Pump under the nemesis: a recorded run whose only promoter is the Pump (issue 21).

The run's metronome only recovers (``Run(pump=True)``); every due retry comes
back to pending through the Pump's promote calls, recorded in the ``pump``
lane as a worker's calls are, while the nemesis kills, freezes and cuts the
workers' links and the Pump's own. The checker judges the whole history.
"""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import gone, server_ms, wait_for, wait_until_due

from echomq_teach import jobs, keyspace
from echomq_teach.errors import BadInput
from echomq_teach.lab.nemesis import Nemesis
from echomq_teach.lab.run import PUMP, Fault, Run

JOBS = 600
SEED = 20261204


def test_the_pump_alone_promotes_under_the_nemesis_and_the_checker_finds_the_run_valid(either, queue):
    # every third job fails its first try (handlers.flaky): it is scheduled, and only the Pump brings it back
    nemesis = Nemesis(seed=SEED, kinds=("kill", "freeze", "drop_link", "drop_pump_link"), count=10,
                      gap_s=(0.05, 0.2), freeze_s=(0.7, 1.0), must=("kill", "freeze", "drop_pump_link"))
    with Run(either.node, queue, workers=3, handler="echomq_teach.lab.handlers:flaky", lease_ms=500,
             retry_delay_ms=50, work_ms=2, tick_ms=40, pump=True, timeout=120) as run:
        try:
            enqueued = run.produce(JOBS, payload=lambda i: f"job {i}" + ("!" if i % 3 == 0 else ""))
            run.start()
            applied = nemesis.run(run, deadline_s=60)
            assert run.wait_drained(120), run.sizes()
        finally:
            run.stop()
        pids = [w.pid for w in run.all]
        history = run.history()
        report = run.check()
        entries = run.conn.client.xrange(keyspace.queue_key(run.queue, "stream:completions"))
        pump = run.pump_ticker
        print(report.summary())
        print("\n".join(map(str, applied)))
        print(f"pump: {pump.ticks} beats, promoted {pump.promoted}, lost links {pump.lost_links}")
    assert all(gone(p) for p in pids)
    assert {"kill", "freeze", "drop_pump_link"} <= {f.kind for f in applied}
    assert pump is not None and not pump.running and pump.errors == []
    # the Pump's calls are a lane of the history, as a worker's are; the metronome promoted nothing
    promotes = history.calls("promote")
    assert promotes and {o.worker for o in promotes} == {PUMP}
    promoted = Counter(j for o in promotes for j in o.released())
    retried = {o.job for o in history.calls("retry") if o.ok and o.reply == jobs.SCHEDULED}
    marked = {j for i, j in enumerate(enqueued) if i % 3 == 0}
    # only marked jobs failed; nearly all of them were scheduled (a fault may end a first try before its retry)
    assert retried <= marked and len(retried) >= 0.9 * len(marked)
    # and each came back through a recorded promote of the Pump (one whose answer a cut link took may hide a few)
    missing = retried - set(promoted)
    assert not missing or any(o.indeterminate for o in promotes), sorted(missing)[:5]
    assert sum(promoted.values()) == sum(pump.promoted.values())
    # its link was cut, and its calls after the cut were answered (the next beat opened a new link)
    cuts = [o for o in history.notes("drop_link") if o.extra.get("worker") == PUMP]
    assert cuts and any(o.sent > cuts[-1].sent and o.ok for o in promotes)
    assert report.valid, report.summary()
    assert report.lost == [] and report.settled_twice == [] and report.unfinished == []
    assert (report.enqueued, report.settled) == (JOBS, JOBS)
    ids = Counter(f["id"] for _, f in entries)
    assert set(ids) == set(enqueued) and set(ids.values()) == {1}


def test_the_pump_s_cut_link_is_its_own_and_without_the_pump_a_retry_stays_scheduled(conn, queue):
    with Run(conn.node, queue, workers=1, handler="echomq_teach.lab.handlers:flaky", lease_ms=500,
             retry_delay_ms=20, tick_ms=20, pump=True, timeout=30) as run:
        run.start()
        pump = run.pump_ticker
        assert pump is not None
        assert run.drop_pump_link() == 1  # the Pump's one link, found by its name; no worker's
        assert all(w.alive for w in run.all)
        # after the cut, the next beat opens a new link and the retry still comes back
        run.produce(1, payload=lambda i: "fails once!")
        assert run.wait_drained(30), run.sizes()
        assert sum(pump.promoted.values()) == 1 and pump.errors == []
        # the control: this run's metronome does not promote, so with the Pump stopped nothing comes back
        pump.stop()
        run.produce(1, payload=lambda i: "fails once too!")
        wait_for(lambda: run.sizes()["schedule"] == 1, "its failed first try is scheduled")
        wait_until_due(run.conn, queue, "schedule")
        due = server_ms(run.conn)
        # two beats of the run's metronome after the retry came due: either could have promoted it; neither did
        wait_for(lambda: len([o for o in run.history().calls() if o.worker == "metronome" and o.sent > due]) >= 2,
                 "two metronome beats after the retry came due")
        assert run.sizes()["schedule"] == 1 and run.sizes()["pending"] == 0
        run.stop()


def test_the_pump_fault_needs_a_pump_run_and_writes_nothing(conn, queue):
    with Run(conn.node, queue, workers=1, timeout=30) as run:
        with pytest.raises(BadInput, match="pump=True"):
            run.apply(Fault(0.0, "drop_pump_link"))
        with pytest.raises(BadInput, match="pump=True"):  # a whole schedule: refused before its first fault
            Nemesis(seed=1, kinds=("kill",), must=("drop_pump_link",), count=2).run(run)
        assert run.history().notes() == []  # the refused faults left no line in the nemesis lane
    with pytest.raises(BadInput, match="pump must be True or False"):
        Run(conn.node, queue, pump="yes")
