"""Notebooks 04–06: each exercise's reference passes (test_exercises.py runs it) and plausible wrong answers
fail, each with the finding that explains why; the 05.2 build is judged by the checker over several seeds."""

from __future__ import annotations

import re

import pytest
from wrong_answers import fan_in as wrong_fan_ins

from echomq_teach.course import exercises, registry

# -- 05.2: the quorum fan-in, written as Lua, judged on flows under kills and a zombie ----------------------------
WRONG_FAN_INS = {
    # the gap: a worker wakes after a sweep put its child back (no claim since); the queue-state check finds the
    # ghost its completion leaves in pending
    "no fence": (wrong_fan_ins.NO_FENCE, ("woke after a sweep put its child", "ghost:")),
    "token, not state": (wrong_fan_ins.TOKEN_NOT_STATE, ("woke after a sweep put its child", "ghost:",
                                                          "it is in pending with no row")),
    # the queue-state check: released to pending, its row still awaiting_children
    "row left waiting": (wrong_fan_ins.ROW_LEFT_WAITING, ("misplaced:", "its row says 'awaiting_children'",
                                                          "it is in pending")),
    "no guard": (wrong_fan_ins.NO_GUARD, ("after the third child completed, its parent running", "two sets:")),
    "counted late": (wrong_fan_ins.COUNTED_LATE, ("has its quorum of 2: release it to pending",)),
    "runtime": (wrong_fan_ins.RUNTIME, ("line 9 of your script", "parents_left")),
    # copy attempts: @complete as notebooks 03 and 05 show it, and with its release line reading the quorum
    "copy: @complete": (wrong_fan_ins.complete_as_it_is(), ("has its quorum of 2: release it to pending",
                                                            "its row says 'awaiting_children'")),
    "copy: @complete, quorum read": (wrong_fan_ins.complete_with_the_quorum(), ("its parent running", "two sets:")),
}


@pytest.mark.parametrize("name", sorted(WRONG_FAN_INS))
def test_a_wrong_fan_in_fails_the_dry_run_with_its_finding(name):
    source, says = WRONG_FAN_INS[name]
    verdict = exercises.check("05.2", lambda: source)
    assert not verdict.ok
    text = str(verdict)
    for s in says:
        assert s in text, (name, text)
    assert not re.search(r"failed on \d+ of", text)  # refused before any judged run: no seed's luck in it
    assert registry.REGISTRY["05.2"].hint not in text


def test_a_fan_in_that_does_not_compile_names_its_line():
    # the if is never closed: the node says so where the source ends, line 4
    verdict = exercises.check("05.2", lambda: "local left = redis.call('DECR', KEYS[3])\nif left then\nreturn 1\n")
    assert not verdict.ok and "your script does not compile: line 4 of your script" in str(verdict), str(verdict)


# -- every other exercise of 04–06: two plausible wrong answers, each failing with its finding ------------------
from wrong_answers import mid_notebooks as w  # noqa: E402 - answers written to fail

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
    "05.1": [(w.REFUSED_LANDS_HALF_WRITTEN, "jobs in the queue after the three: you predicted 3; the run gave 1"),
             (w.REFUSED_LANDS_DUPLICATES_ALLOWED, "two children share an id: you predicted 'landed'; the run gave "
                                                  "'BadInput'")],
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
    mine = sorted(k for k in registry.REGISTRY if k[:2] in ("04", "05", "06") and k != "05.2")
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


def test_a_worker_refuses_a_flow_complete_that_is_no_sha():
    from echomq_teach.errors import BadInput
    from echomq_teach.lab.worker import WorkerOptions

    with pytest.raises(BadInput, match="flow_complete must be a loaded script's SHA1"):
        WorkerOptions(queue="q", name="w", history="/nowhere", flow_complete="return 1").check()

