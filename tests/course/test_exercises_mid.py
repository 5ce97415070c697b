"""Notebooks 04–06: each exercise's reference passes (test_exercises.py runs it) and plausible wrong answers
fail, each with the finding that explains why; 05.2, a stage of your own queue, is in test_my_queue.py."""

from __future__ import annotations

import pytest
from wrong_answers import mid_notebooks as w

from echomq_teach.course import exercises, registry

# -- every exercise of 04–06 (05.2 aside): two plausible wrong answers, each failing with its finding ---------------
WRONG = {
    "04.2": [(w.sweep_reads_no_epoch, "when the sweep ran, a server process that is gone granted it"),
             (w.sweep_reads_no_clock, "its lease had not lapsed when the sweep ran, a server process that is gone "
                                      "granted it")],
    "04.3": [(w.wire_by_brand_alone, "and the connectors did not: node"),
             (w.wire_by_trying_connectors, "your diagnosis wrote its brand (None before, 'echomq:4.0.0' after)"),
             (w.wire_by_module_alone, "and the connectors did not: node")],
    "04.1": [(w.PART_WAYS_ALIKE, "after that claim, the ghost is: you predicted ['nowhere', 'nowhere']; the run "
                                 "gave ['nowhere', 'pending']"),
             (w.PART_WAYS_COMMAND_POPS_FIRST, "a lease of 'soon', a ghost at its head: the raw claim answers: you "
                                              "predicted ['empty', 'empty']; the run gave ['empty', 'error']"),
             (w.PART_WAYS_SCRIPT_READS_THE_FLAG, "after that claim, the ghost is: you predicted ['pending', "
                                                 "'pending']; the run gave ['nowhere', 'pending']")],
    "05.1": [(w.REFUSED_LANDS_EVERY_ID_SEEN, "a child's id is a completed job's: you predicted 'DuplicateJob'; "
                                             "the run gave 'landed'"),
             (w.REFUSED_LANDS_BY_THE_SETS, "a child's id is a waiting parent's: you predicted 'landed'; the run "
                                           "gave 'DuplicateJob'")],
    "05.3": [(w.take_every_child, "'s worker is still on it, its lease running: nothing may take it from that "
                                  "worker"),
             (w.force_the_parents, "was released with 1 of its 2 children's results in :processed")],
    "05.4": [(w.COUNTER_COUNTS_EVERY_CALL, "dependencies after each step: you predicted [3, 2, 2, 1, 0, 0]; the "
                                           "run gave [3, 3, 3, 2, 1, 0]"),
             (w.COUNTER_REMOVE_RECORDS_TOO, "entries in the parent's :unsuccessful at the end: you predicted 2; the "
                                            "run gave 1")],
    "06.1": [(w.TRACE_TOKEN_GIVEN_BACK, "a's token when it completed: you predicted 2; the run gave 3"),
             (w.TRACE_DEATH_COUNTS_NOTHING, "the parent at the end: you predicted 'awaiting_children'; the run gave "
                                            "'pending'")],
}
CASES = [(key, n) for key, answers in sorted(WRONG.items()) for n in range(len(answers))]


def test_every_exercise_of_04_to_06_has_two_wrong_answers():
    mine = sorted(k for k in registry.REGISTRY if k[:2] in ("04", "05", "06") and k != "05.2")  # 05.2: a stage
    assert sorted(WRONG) == mine and all(len(v) >= 2 for v in WRONG.values())
    assert any(k.startswith("06.") for k in registry.REGISTRY)  # the workshop has its exercise
    for key in ("04.2", "04.3", "05.1", "05.3", "06.1"):  # no transcription: diagnoses and predictions
        assert registry.REGISTRY[key].kind in ("diagnose", "predict")


@pytest.mark.parametrize(("key", "n"), CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_a_wrong_answer_fails_with_its_finding(key, n, conn, native_conn):
    answer, says = WRONG[key][n]
    conns = (conn, native_conn) if key.startswith("04.") else (conn,)
    verdict = exercises.check(key, answer, *conns)
    what = getattr(answer, "__name__", n)
    assert not verdict.ok, (key, what)
    assert says in str(verdict), (key, what, str(verdict))
    assert registry.REGISTRY[key].hint not in str(verdict)
