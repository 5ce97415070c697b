"""Each case file's workload, under a few seeds: the model shows the report's anomaly, this queue holds.

The same seeded nemesis drives both sides (lab.models.trial); the model's run
must be invalid with the finding its report describes, and this queue's run
valid — or, where the two share a weakness, valid with that weakness counted.
"""

from __future__ import annotations

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
