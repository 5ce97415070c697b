"""Copy attempts (issue 31, item 4): every exercise that is not a build refuses the nearest thing a learner can
copy without its idea, with a finding that says why.

For each exercise, the copy is the code of the cell printed just above it, fitted to the exercise's function
(or the kit's own call as the notebook makes it), and for a prediction the values the nearest run above it
showed (tests/course/wrong_answers/copies.py). Where that copy is already one of the exercise's wrong
answers, run by the notebook's own test file, it is named here and not run twice. No exercise says it is
about reuse, so none is exempt.
"""

from __future__ import annotations

import pytest
import test_early_exercises as early
import test_exercises_mid as mid
import test_late_exercises as late
from wrong_answers import copies

from echomq_teach.course import exercises, registry

#: per exercise, its copy attempts: (what is copied, the answer, what its finding must say)
COPIES = {
    "01.1": [("the tour's table, by state", copies.tour_table_by_state,
              ("not enqueue: it is in pending, and an enqueue leaves attempts at 0",))],
    "01.2": [("the urgent one claimed out of the way", copies.claim_the_urgent_one,
              ("is in active, held by no worker: when its lease lapses a reap puts it back",))],
    "01.3": [("the custom id first, the rest as enqueued", copies.CUSTOM_ID_FIRST_THEN_AS_ENQUEUED,
              ("you predicted ['custom id A-rush', 'reaped back", "why: ZPOPMIN with every score 0"))],
    "01.4": [("03's wrong token, stale", copies.AS_03S_WRONG_TOKEN,
              ("z, completed with the token x's claim answered: you predicted 'stale'; the run gave 'ok'.",
               "completed count at the end: you predicted 1; the run gave 2.")),
             ("01's complete cell, a count of one", copies.AS_01S_COMPLETE_CELL,
              ("completed count at the end: you predicted 1; the run gave 2.",))],
    "03.1": [("each late worker tried", copies.try_each_late_worker,
              ("your diagnosis changed what it was to read", "a call made to see what happens")),
             ("the first life's late worker refused, for all", copies.every_late_worker_refused,
              ("of the late workers the node let through are missing from your answer",))],
    "03.2": [("the kit's reap", copies.the_kits_reap,
              ("should wait in pending for its next worker; its row says 'active' and it sits in pending",)),
             ("reap, claim, complete", copies.reap_claim_complete,
              ("has no row any more: bring the job back for its next worker",))],
    "03.4": [("the sweep above, every lapse counted", copies.SWEEP_AS_SHOWN_ABOVE,
              ("where after each round: you predicted ['pending', 'pending', 'pending', 'dead', 'dead']",
               "why: only the counted sweep counts"))],
    "03.5": [("the Pump's promote and a reap", copies.pump_and_reap,
              ("its pool's metronome would have left it in",)),
             ("the sweep as called above, max_stalled=1", copies.sweep_with_a_cap_of_one,
              ("its pool's metronome would have left it in",))],
    "04.2": [("lease_epoch against run_id", copies.epoch_against_run_id, ("when the sweep ran",))],
    "05.1": [("every land lands", copies.EVERY_LAND_LANDS,
              ("a dead job's id, with a policy list one short: you predicted 'landed'; the run gave 'BadInput'.",
               "jobs in the queue after the three: you predicted 14; the run gave 7."))],
    "05.3": [("the dead child reprocessed, as under wait above", copies.reprocess_the_dead_child,
              ("it was dead, a job of its own that failed, no parent's child, and should have stayed so",))],
    "05.4": [("the lapse taken for the reap of 'Never twice'", copies.LAPSE_TAKEN_FOR_THE_REAP_ABOVE,
              ("dependencies after each step: you predicted [4, 4, 4, 3, 2, 1]; the run gave [3, 3, 3, 2, 1, 0]",
               "the parent's state at the end: you predicted 'awaiting_children'; the run gave 'pending'."))],
    "06.1": [("the stepper's walk and the composer's counter", copies.TRACE_AS_THE_STEPPER_SHOWED,
              ("a's token when it completed: you predicted 2; the run gave 3.",
               "where a is after each step: you predicted"))],
    "08.1": [("ten in both places, as the kill below", copies.TEN_IN_BOTH_AS_BELOW,
              ("stream, when the second driver is killed: you predicted 15; the run gave 5.",))],
    "10.1": [("the deliveries counted twice", copies.delivered_twice,
              ("of the ids that the restore put back (fetched again, or waiting on the list) are missing",)),
             ("what the restore deleted from unacked", copies.gone_from_unacked,
              ("of the ids that the restore put back (fetched again, or waiting on the list) are missing",))],
    "10.2": [("the model's recovery, run", copies.run_the_recovery, ("your diagnosis changed what it was to read",))],
    "10.3": [("every parent on the wait list", copies.parents_on_the_wait_list,
              ("of the ids you named were released when their last child ended",))],
}

#: copies that are already wrong answers in the notebooks' own test files, run there: (table, entry)
ELSEWHERE = {
    "02.1": (early.MORE["02.1"]["the clock decides"][0], "the server's clock above, taken to judge the settle"),
    "02.3": (early.MORE["02.3"]["resume only"][0], "the resume and claim of the cells above"),
    "04.1": (mid.WRONG["04.1"][0][0], "the same reply and end state above, taken for no difference"),
    "04.3": (mid.WRONG["04.3"][1][0], "the connectors of the cell above, tried on each node"),
    "07.1": (late.WRONG_OTHERS["07.1 as charge"][1], "handlers.charge's table above, each pair as its first crash"),
    "08.3": (late.WRONG_OTHERS["08.3 floor only"][1], "the floor's reads above, the stream left out"),
    "09.1": (late.WRONG_FAILOVERS["as the held rows"][0], "docs/cluster.md's held rows, which the notebook links"),
}
CASES = [(key, n) for key, answers in sorted(COPIES.items()) for n in range(len(answers))]


def test_every_exercise_but_the_builds_has_a_copy_attempt():
    not_builds = sorted(k for k, e in registry.REGISTRY.items() if e.kind != "build")
    assert sorted([*COPIES, *ELSEWHERE]) == not_builds
    assert not set(COPIES) & set(ELSEWHERE)


@pytest.mark.parametrize(("key", "n"), CASES, ids=[f"{k}-{COPIES[k][n][0]}" for k, n in CASES])
def test_a_copy_fails_with_the_finding_that_says_why(key, n, conn, native_conn):
    _refused(key, *COPIES[key][n], conn, native_conn)


def _refused(key, what, answer, says, conn, native_conn):
    """``answer`` fails ``key``'s check with each of ``says``, never the hint, and leaves the nodes' keys be."""
    conns = (conn, native_conn) if key.startswith("04.") else (conn,)
    before = [set(c.client.keys("*")) for c in conns]
    verdict = exercises.check(key, answer, *conns)
    text = str(verdict)
    assert not verdict.ok, f"{key}: {what} passes:\n{text}"
    for s in says:
        assert s in text, (key, what, s, text)
    assert registry.REGISTRY[key].hint not in text
    assert [set(c.client.keys("*")) for c in conns] == before  # the check left nothing behind, refused or not


# -- the lazy routes of attack reports A and B, and ours: each now refused (tests/course/wrong_answers/lazy.py) ------
from wrong_answers import lazy  # noqa: E402 - answers written to fail

#: per exercise: (the route, the answer, what its finding must say)
LAZY = {
    "01.1": [("by position", lazy.transitions_by_position, ("not ",))],
    "01.2": [("a completion faked", lazy.fake_a_completion, ("the queue counts 1 completion (metrics:completed)",))],
    "02.3": [("resume, then claims until one hands out a job", lazy.resume_and_claim_until_something,
              ("return a pair: the ids you found in pending that are no job",)),
             ("the same, with everything else in pending named", lazy.every_other_id_named,
              ("of the ids you named as no job have a job",))],
    "03.1": [("by position", lazy.settle_by_position, ("of the late workers the node let through are missing",)),
             ("tried on a copy", lazy.settle_tried_on_a_copy, ("your diagnosis wrote while it read", "RESTORE")),
             ("tried on a copy, the command counts cleared", lazy.settle_tried_on_a_copy_counts_cleared,
              ("the command counts of 1 node were reset while your function ran",)),
             ("tried on a node it starts", lazy.settle_tried_on_a_node_of_its_own,
              ("your function started 1 process of its own",))],
    "03.2": [("put where a reap finds it, reaped", lazy.reaped_blind,
              ("'0' claims, and its crashed worker holds token",)),
             ("attempts raised past any token", lazy.attempts_raised_past_any_token,
              ("row counts 99 claims, and it has had",))],
    "03.5": [("one blind tick", lazy.one_blind_tick, ("its pool's metronome would have left it in",)),
             ("two blind ticks", lazy.two_blind_ticks, ("its pool's metronome would have left it in",))],
    "04.2": [("by position", lazy.fates_by_position, ("when the sweep ran",)),
             ("swept on a copy", lazy.fates_swept_on_a_copy,
              ("your diagnosis wrote while it read", "EMQ.STALLED.CHECK"))],
    "04.3": [("connectors tried, the brand put back", lazy.wires_tried_then_put_back,
              ("your diagnosis wrote while it read", "SET")),
             ("wire 4 where the module is", lazy.wire_4_where_the_module_is, ("and the connectors did not",))],
    "05.3": [("every recovery call", lazy.every_recovery_call, ("and should have stayed so",))],
    "08.3": [("by position", lazy.lost_by_position, ("lost ids are missing from your answer",))],
    "10.1": [("by position", lazy.run_twice_by_position, ("of the ids",))],
    "10.2": [("by position", lazy.orphans_by_position, ("of the ids",)),
             ("the process the text named", lazy.orphans_of_the_named_process,
              ("of the ids held by a dead process are missing",))],
    "10.3": [("by position", lazy.released_by_position, ("of the ids",))],
}
LAZY_CASES = [(key, n) for key, routes in sorted(LAZY.items()) for n in range(len(routes))]


@pytest.fixture
def dealt_one_way(monkeypatch):
    """The checks deal their stories from one fixed seed: a route that guesses by position meets one arrangement."""
    import random

    from echomq_teach.course.checks import staging

    monkeypatch.setattr(staging, "chance", lambda: random.Random(1))


@pytest.mark.parametrize(("key", "n"), LAZY_CASES, ids=[f"{k}-{LAZY[k][n][0]}" for k, n in LAZY_CASES])
def test_a_lazy_route_fails_with_the_finding_that_says_why(key, n, conn, native_conn, dealt_one_way):
    _refused(key, *LAZY[key][n], conn, native_conn)


def test_a_copy_tried_on_a_node_started_before_the_check_is_refused(conn):
    # the scratch node a cell above started: nothing is written on the learner's node, nothing started inside
    from echomq_teach.nodes.local import LocalNode

    scratch = LocalNode()
    try:
        verdict = exercises.check("03.1", lazy.settle_tried_on(scratch), conn)
    finally:
        scratch.stop()
    assert not verdict.ok and "your diagnosis wrote while it read" in str(verdict), str(verdict)


def test_the_learners_trace_holds_none_of_the_checks_calls(conn):
    # a setup run on the learner's connector would leave its story in the trace (conn.last(n)): each step, each id
    seen = []
    conn.clear_trace()
    exercises.check("01.1", lambda c, q, job_ids: seen.append([e.line for e in c.trace]) or {}, conn)
    assert seen == [[]]


def test_the_checks_deal_their_stories_afresh():
    # two checks deal two ways: a story's rank among the ids is not fixed (what a guess by position relies on)
    from echomq_teach.course.checks import staging

    ranks = {tuple(staging.shuffled(list(range(6)), staging.chance())) for _ in range(20)}
    assert len(ranks) > 10
