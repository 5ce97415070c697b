"""Each case file's workload, under a few seeds: the model shows the report's anomaly, this queue holds.

The same seeded nemesis drives both sides (lab.models.trial); the model's run
must be invalid with the finding its report describes, and this queue's run
valid — or, where the two share a weakness, valid with that weakness counted.
"""

from __future__ import annotations

import time

import pytest

from echomq_teach.errors import BadInput
from echomq_teach.lab.models import CASES, module
from echomq_teach.lab.models.trial import both, trial

#: the finding each model's run must show
EXPECTED = {
    "kombu_restore": "settled_twice",
    "celery_acks_late": "lost",
    "sidekiq_orphans": "stranded",
    "bull_stall_scan": "double_handouts",
    "bullmq_flow_release": "released_early",
    "bullmq_evicted_locks": "double_handouts",
}
#: seeds per case: the eviction case starts a node of its own and runs longest, so it gets one
SEEDS = {case: (1, 2) for case in CASES} | {"bullmq_evicted_locks": (1,)}


def test_every_case_has_an_expected_finding_and_a_report_with_a_thread() -> None:
    assert set(EXPECTED) == set(CASES)
    for case in CASES:
        doc = module(case).__doc__ or ""
        assert "#" in doc and ("The report " in doc or "The reports " in doc), case


@pytest.mark.parametrize("case,seed", [(c, s) for c in CASES for s in SEEDS[c]])
def test_model_shows_the_anomaly_and_this_queue_holds(node, case: str, seed: int) -> None:
    model, queue = both(case, node, seed)
    assert [str(f) for f in model.faults] == [str(f) for f in queue.faults], "one schedule for both sides"
    assert not model.valid, model
    assert model.report.of(EXPECTED[case]), model
    assert queue.valid, queue
    assert queue.report.unfinished == [], queue


def test_kombu_case_shared_weakness_is_counted_not_hidden(node) -> None:
    # a worker frozen past its lease: this queue runs the job again too, and refuses the stale settle
    queue = trial("kombu_restore", node, 1, "queue")
    assert queue.valid
    assert queue.report.stale_refused >= 1
    assert any(n > 1 for n in queue.report.handler_runs.values())


def test_bad_case_and_side_are_refused(node) -> None:
    with pytest.raises(BadInput, match="unknown case"):
        trial("nope", node, 1)
    with pytest.raises(BadInput, match="side must be"):
        trial("kombu_restore", node, 1, "both")


def test_model_workers_are_children_the_nemesis_reaches_by_pid(node, tmp_path) -> None:
    # each model worker is the kit's Child (tied to this process); a freeze stops that very PID, a thaw
    # resumes it, a kill ends it and its slot gets a new process
    from echomq_teach.lab.models.trial import WORKLOADS, ModelRun
    from echomq_teach.lab.run import Fault
    from echomq_teach.nodes.process import Child

    def state(pid: int, want: str) -> str:
        # a signal reaches a running process soon, not at once: look for up to 2 s
        deadline = time.monotonic() + 2
        while True:
            line = next(ln for ln in open(f"/proc/{pid}/status") if ln.startswith("State:"))
            if (line.split()[1] == "T") == (want == "T") or time.monotonic() > deadline:
                return line.split()[1]
            time.sleep(0.01)

    run = ModelRun("kombu_restore", node, "case-child-check", WORKLOADS["kombu_restore"], tmp_path)
    try:
        run.start()
        first = run.slots[0]
        assert all(isinstance(p, Child) for p in run.slots)
        run.apply(Fault(0.0, "freeze", 0))
        assert state(first.pid, "T") == "T" and first.frozen
        run.thaw(0)
        assert state(first.pid, "running") != "T" and not first.frozen
        run.apply(Fault(0.0, "kill", 0))
        assert not first.alive and first.returncode == -9
        assert run.slots[0] is not first and run.slots[0].alive
    finally:
        run.close()
    assert not any(p.alive for p in run.all)


def test_the_nemesis_drives_one_protocol_the_lab_run_and_a_model_run_answer(node, tmp_path) -> None:
    from echomq_teach.lab.models.trial import WORKLOADS, ModelRun
    from echomq_teach.lab.nemesis import Target
    from echomq_teach.lab.run import Run

    model = ModelRun("kombu_restore", node, "case-protocol", WORKLOADS["kombu_restore"], tmp_path / "model")
    try:
        with Run(node, "case-protocol-run", workers=1, folder=tmp_path / "run") as run:
            assert isinstance(run, Target) and isinstance(model, Target)
            assert (run.size, run.pump, model.size, model.pump) == (1, False, 3, False)
    finally:
        model.close()
    assert not isinstance(object(), Target)


def test_the_case_invariants_compose_with_the_checkers_own() -> None:
    # one signature, the run's facts: composed, the case files' findings follow the checker's in one report
    from test_checker import Story, final

    from echomq_teach.lab import checker
    from echomq_teach.lab.history import Op
    from echomq_teach.lab.models import findings

    s = Story()
    s.enqueue("P")
    s.ops.append(Op("producer", 99, "enqueue", s.t, s.t + 1, "answer", "C", None, "C", extra={"parent": "P"}))
    s.claim("w1", "P", 1)  # the parent, claimed while its child has no ending
    s.complete("w1", "P", 1)
    s.claim("w2", "C", 1)
    s.complete("w2", "C", 1)
    history, end = s.history(), final([("P", "completed", 1), ("C", "completed", 1)])
    assert checker.check(history, end).valid  # the checker alone knows no flow
    composed = findings.judge(history, end)
    assert [f.kind for f in composed.findings] == ["released_early"] and not composed.valid
    assert list(findings.INVARIANTS)[: len(checker.INVARIANTS)] == list(checker.INVARIANTS)
    assert checker.check(history, end, invariants=findings.INVARIANTS).findings == composed.findings
