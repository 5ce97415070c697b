"""Notebooks 07–09 (issue 20): each exercise's reference passes; wrong answers written for the purpose fail,
each with the finding that explains why; the builds are judged by the checker over several seeds."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import pytest
from wrong_answers import pass_the_nemesis as wrong_capstones

from echomq_teach.course import exercises, registry

SOLUTIONS = Path(__file__).resolve().parents[2] / "notebooks" / "solutions"


def _solution(stem: str):
    path = SOLUTIONS / f"{stem}.py"
    spec = importlib.util.spec_from_file_location(f"solution_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (fn,) = [f for _, f in inspect.getmembers(module, inspect.isfunction) if f.__module__ == module.__name__]
    return fn


def _fails_with(verdict, *says: str) -> str:
    assert not verdict.ok, str(verdict)
    text = str(verdict)
    for s in says:
        assert s in text, (s, text)
    return text


# -- 07.2 · the capstone: the provider and the nemesis inject the failures, not the learner's handler -----------
WRONG_CAPSTONES = {
    # the old loophole: never raise, one attempt; a timeout before the charge settles an order never charged
    # the provider's timeouts are in every run, whatever the seed: no seed passes the loophole by luck
    "never raises": (wrong_capstones.never_raises, ("the provider never took their customer's money",
                                                     "a provider timeout is not a charge", "failed on 3 of 3 seeds")),
    "not idempotent": (wrong_capstones.not_idempotent, ("charged more than once for one order",)),
    "one attempt": (wrong_capstones.one_attempt, ("jobs ended in dead",)),
    # every healthy handler (60 ms of work) outlives a 50 ms lease: read from the runs, on every seed
    "lease under the work": (wrong_capstones.lease_under_the_work, ("your lease is 50 ms, and the quickest of your "
                                                                    "handlers' runs", "failed on 3 of 3 seeds")),
    # copy attempts: the team's settings; the printed handler keyed by the job's id; the notebook's own runs
    "copy: the team's settings": (wrong_capstones.the_teams_settings, ("your lease is 50 ms",)),
    "copy: keyed by the job": (wrong_capstones.keyed_by_the_job, ("charged more than once for one order",
                                                                  "came in twice, as two jobs each",
                                                                  "failed on 3 of 3 seeds")),
    # charge_once keeps a record of its own and never asks the provider: the finding says so, not "a timeout"
    "copy: the notebook's runs": (wrong_capstones.the_notebooks_runs, ("without the payment provider ever being "
                                                                       "asked", "failed on 3 of 3 seeds")),
    # the work skipped (attack b), made instant, or left running past the completion: under the team's lease,
    # each order is refused as completed with its work not done, on every seed
    "skips the work": (wrong_capstones.skips_the_work, ("completed by a handler run that had not done the order's "
                                                        "60 ms of work", "failed on 3 of 3 seeds")),
    "work made instant": (wrong_capstones.work_made_instant, ("had not done the order's 60 ms of work",
                                                              "failed on 3 of 3 seeds")),
    "work left running": (wrong_capstones.work_left_running, ("had not done the order's 60 ms of work",
                                                              "failed on 3 of 3 seeds")),
    "work noted, not done": (wrong_capstones.work_noted_not_done, ("had not done the order's 60 ms of work",
                                                                   "failed on 3 of 3 seeds")),
}


@pytest.mark.parametrize("name", sorted(WRONG_CAPSTONES))
def test_a_wrong_capstone_fails_with_its_finding(name, conn):
    answer, says = WRONG_CAPSTONES[name]
    text = _fails_with(exercises.check("07.2", answer, conn), *says)
    assert registry.REGISTRY["07.2"].hint not in text



# -- 09.2 · a design for a short WAIT: probes on every kind of write, then failovers on a cluster of the judge's -------
from wrong_answers import keep_what_failover_loses as wrong_waits  # noqa: E402 - answers written to fail

DOWN = "confirmed 0 of 1 replicas (the replica held: it applied nothing"
BEHIND = "confirmed 0 of 1 replicas (its replica only behind"
WRONG_WAITS = {
    # each refused by a probe on a held replica (WAIT confirms 0 of 1, every time), before any failover; the
    # finding says what went wrong, never the code to write
    "trusts the settles": (wrong_waits.trusts_the_settles, (f"a completion whose WAIT 1 200 {DOWN}",
                                                            "your design told the worker its job is completed",
                                                            "it runs and completes a second time")),
    "resends everything": (wrong_waits.resends_everything, (f"a claim whose WAIT 1 200 {DOWN}",
                                                            "the second claim handed out another job")),
    "its own error": (wrong_waits.raises_its_own_error, ("your design raised RuntimeError",
                                                         "No caller reads that as an unknown outcome")),
    "a setting": (wrong_waits.a_setting, ("return your design, a function on_short_wait(short)",)),
    # copy attempts: the kit's own answer (count, answer all the same); WAIT 1 0 made a design
    "copy: as the kit answers": (wrong_waits.as_the_kit_answers, (f"an enqueue whose WAIT 1 200 {DOWN}",
                                                                  "your design told the producer its job is stored",
                                                                  "a failover now loses a job its producer was told")),
    "copy: wait as long as it takes": (wrong_waits.wait_as_long_as_it_takes, ("was still waiting 2 s later",
                                                                              "for ever")),
    # attack b: the old first finding's one line, for every write; and retry, sweep and promote trusted
    "Unconfirmed for all": (wrong_waits.unconfirmed_for_all, (f"an enqueue whose WAIT 1 200 {BEHIND}",
                                                              "left the producer an unknown outcome",
                                                              "no risk of applying it twice")),
    "trusts retry, sweep, promote": (wrong_waits.trusts_retry_sweep_promote, (
        f"a retry whose WAIT 1 200 {DOWN}", "told the worker its job is buried in dead",
        "a job whose end was reported runs again")),
    # ours: a second send whose WAIT is not read; the second send's answer (a refusal) handed on
    "sends again, then trusts": (wrong_waits.sends_again_then_trusts, (f"an enqueue whose WAIT 1 200 {DOWN}",
                                                                       "told the producer its job is stored")),
    "answers the second send": (wrong_waits.answers_the_second_send, (f"an enqueue whose WAIT 1 200 {BEHIND}",
                                                                      "the answer of a later send of the write, "
                                                                      "not the first send's")),
}


@pytest.mark.parametrize("name", sorted(WRONG_WAITS))
def test_a_wrong_design_fails_a_probe_with_its_finding(name):
    answer, says = WRONG_WAITS[name]
    text = _fails_with(exercises.check("09.2", answer), *says)
    assert registry.REGISTRY["09.2"].hint not in text
    assert "failed on" not in text  # refused by a probe: no failover's timing in it
    assert "raise" not in text.lower().replace("raised", "")  # a finding says what went wrong, not what to write


# -- 09.1 · predict the failover: a committed prediction, the run on a cluster the check starts ------------------
from wrong_answers import predict_the_failover as wrong_failovers  # noqa: E402 - answers written to fail

WRONG_FAILOVERS = {
    # a copy too: docs/cluster.md's held rows, where the hold outlasts the kill
    "as the held rows": (wrong_failovers.AS_THE_HELD_ROWS,
                         ("WAIT 1 100: verdict: you predicted 'invalid'; the run gave 'valid'.",
                          "WAIT 1 2000: burst enqueues answered: you predicted 0; the run gave 20.")),
    "short is unanswered": (wrong_failovers.SHORT_IS_UNANSWERED,
                            ("WAIT 1 100: burst enqueues answered: you predicted 0; the run gave 20.",
                             "WAIT 1 100: writes answered short: you predicted 'none'; the run gave 'some'.")),
}


@pytest.mark.parametrize("name", sorted(WRONG_FAILOVERS))
def test_a_wrong_failover_prediction_fails_with_its_finding(name, conn):
    answer, says = WRONG_FAILOVERS[name]
    text = _fails_with(exercises.check("09.1", answer, conn), *says)
    assert "WAIT 1 2000: verdict:" not in text  # the part predicted right is not named wrong


# -- 07.1, 08.1, 08.3 · two wrong answers each ------------------------------------------------------------------
from wrong_answers import durable_floor as wrong_floor  # noqa: E402 - answers written to fail
from wrong_answers import predict_the_crashes as wrong_crashes  # noqa: E402 - answers written to fail

WRONG_OTHERS = {
    "07.1 as charge": ("07.1", wrong_crashes.AS_CHARGE,
                       ("handler, then handled: you predicted {'handler runs': 2, 'charges': 1, 'settled with "
                        "token': 2}; the run gave {'handler runs': 3, 'charges': 3, 'settled with token': 3}.",)),
    "07.1 unseen settle": ("07.1", wrong_crashes.UNSEEN_SETTLE_RUNS_AGAIN,
                           ("handled, then settle-sent: you predicted {'handler runs': 3, 'charges': 3, 'settled "
                            "with token': 3}; the run gave {'handler runs': 2, 'charges': 2, 'settled with token': "
                            "2}.",)),
    "08.1 write taken for a commit": ("08.1", wrong_floor.WRITE_TAKEN_FOR_COMMIT,
                                      ("floor, when the second driver is killed: you predicted 35; the run gave "
                                       "30.",)),
    "08.1 folded again": ("08.1", wrong_floor.FOLDS_AGAIN,
                          ("floor, once the third driver is done: you predicted 45; the run gave 35.",)),
    "08.3 stream only": ("08.3", wrong_floor.stream_only, ("of the ids you named were not lost: they are on the "
                                                            "floor or in the stream",)),
    "08.3 floor only": ("08.3", wrong_floor.floor_only, ("of the ids you named were not lost",)),
    "08.3 the last five": ("08.3", wrong_floor.the_last_five, ("of the ids you named were not lost",
                                                               "lost ids are missing from your answer")),
}


@pytest.mark.parametrize("name", sorted(WRONG_OTHERS))
def test_a_wrong_answer_fails_with_its_finding(name, conn):
    key, answer, says = WRONG_OTHERS[name]
    text = _fails_with(exercises.check(key, answer, conn), *says)
    assert registry.REGISTRY[key].hint not in text


# -- 08.2 · a fold step killed by SIGKILL after every commit and trim of every fold ------------------------------------
from wrong_answers import survive_every_kill as wrong_folds  # noqa: E402 - answers written to fail

WRONG_FOLDS = {
    # trimmed before the commit: killed between the two, the slice is in neither place, in every fold
    "trim first": (wrong_folds.trim_first, ("right after step 2 (trim of fold 1, the notifier having read all of 25): "
                                            "the checker, reading the floor and the stream as one archive, says "
                                            "invalid (unrecorded", "failed on 3 of 6 kills")),
    # read from the stream's start: what the notifier still needs stays in the stream, and is committed again
    "from the start": (wrong_folds.from_the_start, ("committed again settles the floor already holds",
                                                    "line 7 of your fold step")),
    "for the notifier alone": (wrong_folds.for_the_notifier_alone, ("with no kill (the notifier having read 15 of "
                                                                    "25)", "says invalid (unrecorded")),
    # the copy attempt: the fold as 08 lists its steps, the trim bounded by the floor alone
    "copy: the notebook's steps": (wrong_folds.for_the_floor_alone, ("with no kill (the notifier having read 15 of "
                                                                     "25): 10 settles the shop's notifier had not "
                                                                     "read yet were trimmed",
                                                                     "it may lose only what both have read")),
    # attack b: the whole stream in one slice, trimmed first; and the bound kept per read, not per fold
    "one big slice": (wrong_folds.one_big_slice_trimmed_first, ("kit.read asked for 1000 settles: a fold takes one "
                                                                "slice of at most 10", "line 3 of your fold step")),
    "two slices in one commit": (wrong_folds.two_slices_in_one_commit, ("kit.commit was handed 20 settles",)),
    # the last slice committed and never trimmed: the run with the notifier caught up finds what both still hold
    "stops before the last trim": (wrong_folds.stops_before_the_last_trim, ("with no kill (the notifier having "
                                                                            "read all of 25): 5 entries the floor "
                                                                            "holds and the notifier has read",)),
    # wrong only in the last, partial fold: the kills land there too
    "trims first in the last fold": (wrong_folds.trims_first_in_the_last_fold, ("(trim of fold 3, the notifier "
                                                                                "having read all of 25)",
                                                                                "says invalid (unrecorded 5)",
                                                                                "failed on 1 of 6 kills")),
    # ours: the trim, or the whole fold, written around the kit, so that no kill lands between its writes
    "a trim around the kit": (wrong_folds.around_the_kit, ("with no kill (the notifier having read 15 of 25)",
                                                           "changed other than through the kit",
                                                           "line 7 of your fold step")),
    # ours: the last finding's "did not trim" mended by one trim at the end: each fold must trim what it began with
    "trims only at the end": (wrong_folds.trims_only_at_the_end, ("with no kill (the notifier having read 15 of "
                                                                  "25): after fold 2 the stream still held 10 "
                                                                  "settles that the floor already held",)),
    "a fold past the kit": (wrong_folds.past_the_kit, ("changed other than through the kit (entries, rows: 25, 0 "
                                                       "after the kit's last step, now 15, 10)",)),
}


@pytest.mark.parametrize("name", sorted(WRONG_FOLDS))
def test_a_wrong_fold_fails_with_its_finding(name):
    answer, says = WRONG_FOLDS[name]
    text = _fails_with(exercises.check("08.2", answer), *says)
    assert registry.REGISTRY["08.2"].hint not in text


def test_a_fold_that_raises_is_a_finding_naming_its_line():
    def broken():
        def fold_step(kit):
            return kit.read(kit.cursor(), 10)[0].nothing

        return fold_step

    text = _fails_with(exercises.check("08.2", broken), "with no kill (the notifier having read 15 of 25): the "
                       "runner's fold failed",
                       "AttributeError", "line 2 of your fold step")
    assert "Traceback" not in text


# -- the tables above cover every exercise of 07-09, twice at least; each of the three has a build --------------
def test_every_exercise_of_07_to_09_has_two_wrong_answers_and_each_notebook_a_build():
    tested = (
        ["07.2"] * len(WRONG_CAPSTONES) + ["09.2"] * len(WRONG_WAITS) + ["09.1"] * len(WRONG_FAILOVERS)
        + [key for key, _, _ in WRONG_OTHERS.values()] + ["08.2"] * len(WRONG_FOLDS)
    )
    mine = sorted(k for k in registry.REGISTRY if k[:2] in ("07", "08", "09"))
    assert mine == sorted(set(tested))
    assert all(tested.count(k) >= 2 for k in mine), {k: tested.count(k) for k in mine}
    for nb in ("07", "08", "09"):
        assert any(e.kind == "build" for k, e in registry.REGISTRY.items() if k.startswith(nb)), nb


# -- the late builds' hints point at the rule and where to look, never at the code ------------------------------
CODE_IN_A_HINT = {
    # what the old hints dictated: the three settings and the key; the fold line by line; the one raise
    "07.2": ("lease_ms", "max_attempts", "job.payload", "key=", "60 ms", "raise"),
    "08.2": ("kit.cursor()", "kit.trim_below()", "kit.notified()", ".next()", "min(", "since"),
    "09.2": ("Unconfirmed", "again()", "raise", "return short.reply"),
}


@pytest.mark.parametrize("key", sorted(CODE_IN_A_HINT))
def test_a_late_builds_hint_names_no_code(key):
    hint = registry.REGISTRY[key].hint
    assert hint.startswith("Hint:")
    assert [c for c in CODE_IN_A_HINT[key] if c in hint] == []
