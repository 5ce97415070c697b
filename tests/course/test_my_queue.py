"""Your own queue (``course/my_queue``): a folder grown stage by stage, each stage judged as the kit is judged.

- A fresh folder: every stage's check answers the starter's verdict (what a notebook stores) at once.
- The references: a folder holding every stage's reference up to one stage passes that stage (each once:
  probes, earlier stages' probes again, judged runs under a seeded nemesis; 10.4 prints its cost beside the
  kit's, and its faster beat costs fewer round trips a job than one that sweeps every beat).
- A folder with one stage's idea missing fails that stage (``wrong_answers/my_queue.py``): with the
  checker's counterexample where the history shows the fault, with the stage's own finding where it does
  not; the kit's scripts copied (as they are, and with one line fitted) fail too.
- The folder itself: a file is never overwritten by a starter, a loaded reference keeps the learner's file,
  an earlier stage's unwritten file is named with its reference.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from wrong_answers.my_queue import VARIANTS

from echomq_teach.course import exercises, my_queue, predictions, registry
from echomq_teach.course.my_queue.folder import starter_text
from echomq_teach.course.my_queue.stages import STAGES, files_upto
from echomq_teach.errors import BadInput

KEYS = [s.key for s in STAGES]


@pytest.fixture(autouse=True)
def _kept_02_1(predictions_folder):
    # a learner at the stages has kept 02.1: before that a failing stage holds its findings (they state its answer)
    predictions.commit("02.1", {"kept": "before the stages"})


def grown(tmp_path: Path, upto: str) -> my_queue.Folder:
    """A folder grown by the references of every stage up to ``upto``, in order, as a learner who skips
    each stage would grow it."""
    mine = my_queue.folder(tmp_path / "my_queue")
    for key in KEYS[: KEYS.index(upto) + 1]:
        mine.load_reference(key)
    return mine


def test_the_stages_are_exercises_of_the_registry_where_their_ideas_are_taught():
    assert KEYS == ["02.2", "03.3", "03.6", "03.7", "05.2", "10.4"]
    for s in STAGES:
        ex = registry.REGISTRY[s.key]
        assert ex.kind == "build" and ex.judge is not None and ex.title == s.title
        assert ex.solution == f"my_queue/{s.key.replace('.', '_')}"
    assert files_upto("10.4") == ("claim.lua", "renew.lua", "complete.lua", "retry.lua", "recover.lua", "beat.py")


@pytest.mark.parametrize("key", KEYS)
def test_a_fresh_folder_gets_the_starters_verdict_and_its_files(tmp_path, key):
    mine = my_queue.folder(tmp_path / "my_queue")
    verdict = exercises.check(key, mine)
    text = str(verdict)
    assert not verdict.ok and text.startswith(f"✗ {key}") and "still hold" in text and "starter" in text, text
    assert registry.REGISTRY[key].hint not in text and "Hint:" not in text
    assert verdict.shown == []
    # the starters came in: every file the stages up to this one ask for, each with its header
    for name in files_upto(key):
        body = (mine.path / name).read_text()
        assert "is not written yet" in body and ("KEYS:" in body or "def beat" in body)
    assert (mine.path / "README.md").read_text().count("|") > 20


def test_begin_never_overwrites_and_a_reference_keeps_yours(tmp_path):
    mine = my_queue.folder(tmp_path / "my_queue")
    mine.begin("02.2")
    (mine.path / "claim.lua").write_text("-- mine\nreturn {}\n")
    status = mine.begin("03.3")
    assert (mine.path / "claim.lua").read_text() == "-- mine\nreturn {}\n"
    assert "my_queue/claim.lua     written" in status and "my_queue/retry.lua     the starter" in status
    said = mine.load_reference("02.2")
    assert "claim.lua: the reference of 02.2 (yours kept in replaced/02_2/claim.lua)" in said
    assert (mine.path / "replaced" / "02_2" / "claim.lua").read_text() == "-- mine\nreturn {}\n"
    assert mine.written("claim.lua") and "ZPOPMIN" in (mine.path / "claim.lua").read_text()


def test_an_earlier_stage_left_unwritten_is_named_with_its_reference(tmp_path):
    mine = my_queue.folder(tmp_path / "my_queue")
    mine.load_reference("03.3")  # stage 2's files, stage 1's still the starter
    verdict = exercises.check("03.3", mine)
    text = str(verdict)
    assert not verdict.ok and "my_queue/claim.lua is not written yet (stage 02.2 asks for it" in text
    assert 'load_reference("02.2")' in text


def test_a_folder_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "my_queue").write_text("not a folder")
    with pytest.raises(BadInput, match="is a file"):
        my_queue.folder(tmp_path / "my_queue")
    with pytest.raises(BadInput, match="no stage of your queue"):
        my_queue.folder(tmp_path / "elsewhere").begin("02.1")


def test_run_options_wait_for_the_whole_queue(tmp_path):
    mine = grown(tmp_path, "05.2")
    mine.file("retry.lua").write_text(starter_text("retry.lua"))
    with pytest.raises(BadInput, match=r"not whole yet: my_queue/retry.lua \(stage 03.3\)") as err:
        mine.run_options()
    assert "still hold the starter" in str(err.value)
    mine.load_reference("03.3")
    options = mine.run_options()
    assert options["beat"].endswith("beat.py")
    assert sorted(options["scripts"].replaced) == ["claim", "complete", "retry", "stalled_check"]


# -- the references: each stage passes, judged runs and all ------------------------------------------------------
@pytest.mark.parametrize("key", KEYS)
def test_the_reference_queue_passes_each_stage(tmp_path, key):
    # each reference judged once in the suite (bench/bench_judges.py runs them five times under load)
    mine = grown(tmp_path, key)
    verdict = exercises.check(key, mine)
    if not verdict.judged:  # a worker the keeper could not restart on a loaded machine: no verdict, once more
        verdict = exercises.check(key, mine)
    assert verdict.ok, str(verdict)
    # loaded, never edited: the references pass, and the verdict, the progress and the live view say so
    own = {s.key for s in STAGES if s.key == key and s.files} or {"02.2", "03.3", "03.6", "05.2", "10.4"}
    assert set(verdict.reference) == own and str(verdict).startswith(f"✓ {key}"), str(verdict)
    assert "passes with the reference" in str(verdict) and "solved." not in str(verdict).splitlines()[0]
    assert key in exercises.progress().referenced and key not in exercises.progress().solved
    from echomq_teach.course import progress_report

    body = progress_report.payload(key, verdict)
    assert body["solved"] is False and body["reference"] is True
    if key == "10.4":  # then fast: its cost beside the kit's, after the verdict
        text = str(verdict)
        assert "your queue: 200 jobs in" in text and "the kit's  : 200 jobs in" in text
        assert re.search(r"round trips a job", text) and "jobs/s" in text
        # 10.4's reference beat sweeps every eighth busy beat; 03.7's, which sweeps every beat, costs 6 and more
        yours = re.search(r"your queue: .*?([0-9.]+) round trips a job", text)
        assert yours and float(yours.group(1)) < 6.0, text
        assert "(with 10.4's reference beat.py: the reference's figure, not yours)" in text, text


# -- one stage's idea missing, and the kit's scripts copied ------------------------------------------------------
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_queue_with_one_idea_missing_fails_its_stage(tmp_path, name):
    v = VARIANTS[name]
    mine = grown(tmp_path, v.stage)
    for file, text in v.files.items():
        (mine.path / file).write_text(text)
    verdict = exercises.check(v.stage, mine)
    text = str(verdict)
    assert not verdict.ok, (name, text)
    for said in v.says:
        assert said in text, (name, said, text)
    assert ("the checker says invalid" in text) == v.checker, (name, text)
    assert registry.REGISTRY[v.stage].hint not in text
    assert not re.search(r"failed on \d+ of", text), text  # refused by a probe: no seed's luck in it


def test_every_stage_has_a_copy_attempt_or_a_missing_idea():
    stages = {v.stage for v in VARIANTS.values()}
    assert stages == set(KEYS) - {"10.4"}
    copied = {v.stage for n, v in VARIANTS.items() if " copy: " in n}
    assert copied == {"02.2", "03.3", "03.6", "05.2"}  # the stages whose scripts the kit prints
    assert any(v.checker for v in VARIANTS.values() if v.stage == "03.3")


def test_a_counterexample_comes_with_the_runs_timeline(tmp_path):
    from matplotlib.figure import Figure

    v = VARIANTS["03.3 complete: no fence"]
    mine = grown(tmp_path, v.stage)
    for file, text in v.files.items():
        (mine.path / file).write_text(text)
    verdict = exercises.check(v.stage, mine)
    assert not verdict.ok and len(verdict.shown) == 1 and "timeline" not in str(verdict)
    figure = verdict.shown[0]()
    assert isinstance(figure, Figure) and figure.axes and "your queue" in figure.axes[0].get_title()


#: what the stages' first hints dictated, step by step (the lazy learners read the algorithm off them)
CODE_IN_A_HINT = ("ZPOPMIN", "HINCRBY", "ZADD", "HMGET", "ZREM", "ZRANGEBYSCORE", "LIMIT", "XADD", "DECR", "HLEN",
                  "DEL ", "ARGV[", "KEYS[", "2 ^", "budget.take()", "give_back()", "queue.promote()", "queue.recover()",
                  "every few beats")


@pytest.mark.parametrize("key", KEYS)
def test_a_stages_hint_points_at_the_idea_and_names_no_code(key):
    hint = registry.REGISTRY[key].hint
    assert hint.startswith("Hint:") and "?" in hint, hint  # it asks the question the idea answers
    assert [c for c in CODE_IN_A_HINT if c in hint] == [], hint


def test_a_judge_that_could_not_finish_says_what_stopped_it():
    # an error with no message (a bare assert's): the verdict names the error and the line it stopped at
    try:
        raise AssertionError
    except AssertionError as exc:
        said = exercises._stopped(exc)
    assert said.startswith("AssertionError at ") and "test_my_queue.py, line" in said, said
    assert said.endswith(": raise AssertionError"), said


# -- a judged run the judge's own machinery failed: no verdict, no try -------------------------------------------
def test_a_run_whose_keeper_failed_is_not_judged():
    from echomq_teach.course.judges.queue import judged_run
    from echomq_teach.course.judges.stage_recover import KeptRun
    from echomq_teach.lab.nemesis import Nemesis
    from echomq_teach.nodes.local import LocalNode
    from echomq_teach.nodes.process import ChildError

    class Unkept(KeptRun):
        """The keeper's refill fails as it did on a loaded machine (a worker not ready within 30 s)."""

        def kill(self, slot, replace=True):
            return super().kill(slot, replace=False)  # the keeper refills the slot, as after a poison

        def spawn(self, slot, **options):
            if self.all:
                raise ChildError("worker w0b was not ready within 30 s; the end of its log:\n(no log written)")
            return super().spawn(slot, **options)

    node = LocalNode()
    try:
        # jobs enough that the queue is not drained when the kill comes (else the run ends before the keeper looks)
        with Unkept(node, "keeper-fails", workers=1, lease_ms=2000, work_ms=200) as run:
            run.produce(30)
            with pytest.raises(registry.Unjudged, match=r"could not restart a worker \(ChildError: worker w0b"):
                judged_run(run, 7, Nemesis(seed=7, kinds=("kill",), count=1, gap_s=(0.1, 0.1)), 5.0, lambda h: False)
    finally:
        node.stop()


def test_an_unjudged_run_is_no_verdict_no_try_and_no_report(monkeypatch):
    import dataclasses

    from echomq_teach.course import progress_report

    def judge(answer, f):
        raise registry.Unjudged("seed 7: the judge could not restart a worker (ChildError: not ready)")

    monkeypatch.setitem(registry.REGISTRY, "03.7", dataclasses.replace(registry.REGISTRY["03.7"], judge=judge))
    reported = []
    monkeypatch.setattr(progress_report, "report", lambda key, verdict: reported.append(key))
    tried = set(registry.TRIED)
    verdict = exercises.check("03.7", lambda: None)
    text = str(verdict)
    assert not verdict.ok and not verdict.judged and text.startswith("? 03.7") and "could not be judged" in text
    assert "no try was counted" in text and "Check again" in text and "solved" not in text
    assert registry.TRIED == tried and "03.7" not in registry.SOLVED and reported == []


def test_a_beat_that_sweeps_only_on_its_first_beats_fails_the_late_lapse(tmp_path):
    # the attack's beat: it promotes and recovers on its first five beats in each process only. A killed worker's
    # slot is refilled, and a fresh process's first beats recovered for the others; the late freeze finds workers
    # long started, and none of them recovers (one seed: the finding comes from the run, not a probe)
    from echomq_teach.course.judges.stages import judge_stage

    mine = grown(tmp_path, "03.7")
    beat = (mine.path / "beat.py").read_text()
    head = "def beat(queue, handle, budget):\n"
    assert beat.count(head) == 1 and "    queue.promote()\n    queue.recover()\n" in beat
    beat = beat.replace("    queue.promote()\n    queue.recover()\n",
                        "    BEATS[0] += 1\n    if BEATS[0] <= 5:\n        queue.promote()\n        queue.recover()\n")
    (mine.path / "beat.py").write_text("BEATS = [0]\n\n\n" + beat)
    for _ in range(2):  # a worker the keeper could not restart on a loaded machine is no verdict: once more
        f = registry.Findings()
        try:
            judge_stage("03.7", mine, f, seeds=[7])
            break
        except registry.Unjudged:
            continue
    text = "\n".join(f.items)
    # the late freeze finds it; or, when the first lapses come after a fresh process's first beats, the run does
    assert ("late in the run" in text and "none recovered it" in text) or re.search(
        r"no recovery call ran in the [0-9.]+ s from then to the run's end, though \d+ ran before it", text), text


def test_a_loaded_reference_is_known_by_its_content_until_edited(tmp_path):
    mine = grown(tmp_path, "03.3")
    assert mine.reference_in("claim.lua") == "02.2" and mine.references_for("03.3") == ["03.3"]
    assert "02.2's reference" in mine.status()
    retry = mine.path / "retry.lua"
    retry.write_text(retry.read_text() + "-- mine now\n")  # one of 03.3's files edited: the stage is the learner's
    assert mine.reference_in("retry.lua") is None and mine.references_for("03.3") == []
    assert mine.references_for("02.2") == ["02.2"]
    (mine.path / ".references.json").write_text("{not json")  # a record unreadable counts nothing as a reference
    assert mine.references_for("02.2") == []
