"""The exercises: every reference solution passes its check; an unsolved starter gets a "not yet" that
names what is missing and never the answer; hints come only on request, after a try."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import pytest

from echomq_teach.course import exercises, predictions, registry

SOLUTIONS = sorted((Path(__file__).resolve().parents[2] / "notebooks" / "solutions").glob("*.py"))
#: the stages of your own queue: a reference folder each (their checks are in test_my_queue.py)
STAGES = sorted(p for p in (SOLUTIONS[0].parent / "my_queue").iterdir() if p.is_dir())


def _key(path: Path) -> str:
    major, minor = path.stem.split("_")[:2]
    return f"{major}.{minor}"


def _solution(path: Path):
    """A reference solution: the function of a diagnose, repair or build; a prediction's answer, as data."""
    spec = importlib.util.spec_from_file_location(f"solution_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if registry.REGISTRY[_key(path)].kind == "predict":
        (answer,) = [v for k, v in vars(module).items() if not k.startswith("_") and isinstance(v, (dict, list))]
        return answer
    (fn,) = [f for _, f in inspect.getmembers(module, inspect.isfunction) if f.__module__ == module.__name__]
    return fn


NOT_PREDICTIONS = [p for p in SOLUTIONS if registry.REGISTRY[_key(p)].kind != "predict"]
PREDICTIONS = [p for p in SOLUTIONS if registry.REGISTRY[_key(p)].kind == "predict"]


def _conns(key: str, conn, native_conn):
    return (conn, native_conn) if key.startswith("04.") else (conn,)


def test_every_exercise_has_a_solution():
    assert sorted(_key(p) for p in SOLUTIONS + STAGES) == sorted(exercises.titles())
    for major in ("01", "02", "03", "04", "05"):
        assert sum(k.startswith(major) for k in exercises.titles()) >= 3, f"notebook {major} needs three exercises"
    for path in SOLUTIONS:
        assert registry.REGISTRY[_key(path)].solution == path.name  # the exercise names its solution's file
    for path in STAGES:
        assert registry.REGISTRY[_key(path)].solution == f"my_queue/{path.name}"  # a stage names its folder


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_reference_solution_passes(path, conn, native_conn):
    # the one run of each reference in the suite (bench/bench_judges.py runs the builds' five times under load)
    key = _key(path)
    conns = _conns(key, conn, native_conn)
    before = [set(c.client.keys("*")) for c in conns]
    verdict = exercises.check(key, _solution(path), *conns)
    assert verdict.ok, str(verdict)
    assert str(verdict).startswith(f"✓ {key}")
    # every check takes away what it made on the learner's node (a classroom's shared node would pile them up); a
    # build is judged on a node of its judge's own, or on queues it drops
    assert [set(c.client.keys("*")) for c in conns] == before


@pytest.mark.parametrize("path", NOT_PREDICTIONS, ids=lambda p: p.stem)
def test_unsolved_starter_fails_without_the_answer(path, conn, native_conn):
    key = _key(path)
    params = list(inspect.signature(_solution(path)).parameters)

    # the notebook's starter: the same parameters, and a body that is not written yet
    def starter(*args):
        assert len(args) == len(params)
        raise NotImplementedError

    registry.TRIED.discard(key)
    assert exercises.hint(key) == exercises.NO_HINT_YET  # no hint before a try
    verdict = exercises.check(key, starter, *_conns(key, conn, native_conn))
    assert not verdict.ok
    text = str(verdict)
    assert text.startswith(f"✗ {key}") and "NotImplementedError" in text
    # what a stored output shows: where the hint is, not the hint
    assert "Hint:" not in text and registry.REGISTRY[key].hint not in text and f'exercises.hint("{key}")' in text
    assert exercises.hint(key) == exercises.NO_HINT_YET  # the bare starter is not a try
    tried = exercises.check(key, lambda *args: None, *_conns(key, conn, native_conn))
    assert not tried.ok and f'exercises.hint("{key}")' in str(tried)
    assert exercises.hint(key).startswith("Hint:")  # after a try that did not pass, on request


def _kept(folder: Path) -> list[str]:
    """What a check left in the predictions folder and its seal: nothing, before a prediction is kept."""
    return sorted(str(p.relative_to(folder.parent)) for where in (folder, folder.with_name(folder.name + ".seal"))
                  if where.exists() for p in where.rglob("*") if p.name != "lock")


@pytest.mark.parametrize("path", PREDICTIONS, ids=lambda p: p.stem)
def test_a_prediction_keeps_nothing_and_earns_no_hint_until_its_form_is_right(path, conn, native_conn,
                                                                            predictions_folder):
    key = _key(path)
    ex = registry.REGISTRY[key]
    conns = _conns(key, conn, native_conn)
    registry.TRIED.discard(key)
    assert exercises.hint(key) == exercises.NO_HINT_BEFORE_PREDICTING
    # the notebook's starter: the form with a `...` for each answer; not a try
    starter = exercises.check(key, ex.form.starter(), *conns)
    assert not starter.ok and "still holds `...`" in str(starter) and 'exercises.hint("' not in str(starter)
    # a function (it could run the scenario), and answers of the wrong form: refused, naming the form expected
    for wrong in (lambda: _solution(path), None, "ok", 3.5):
        verdict = exercises.check(key, wrong, *conns)
        text = str(verdict)
        assert not verdict.ok and "nothing was kept" in text, text
        assert "the run gave" not in text and "why:" not in text and 'exercises.hint("' not in text, text
        assert ex.form.describe() in text, text
    assert _kept(predictions_folder) == []  # nothing written
    assert exercises.hint(key) == exercises.NO_HINT_BEFORE_PREDICTING
    # a prediction of the right form is kept: the run shows, and the hint is there on request
    assert exercises.check(key, _solution(path), *conns).ok
    assert predictions.committed(key) is not None
    assert exercises.hint(key).startswith("Hint:")


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_do_nothing_answer_is_named_not_crashed(path, conn, native_conn):
    key = _key(path)
    verdict = exercises.check(key, lambda *args: None, *_conns(key, conn, native_conn))
    assert not verdict.ok
    # a finding that says what is not yet true, then the pointer to the hint
    assert len(verdict.findings) >= 2 and all(f.strip() for f in verdict.findings)
    assert "Hint:" not in str(verdict)


def test_a_learner_bug_is_reported_with_its_line(conn):
    def buggy(conn, queue):
        return 1 / 0

    verdict = exercises.check("01.2", buggy, conn)
    assert not verdict.ok and "ZeroDivisionError" in str(verdict) and "line" in str(verdict)


def test_a_wrong_prediction_is_told_what_the_run_gave(conn):
    verdict = exercises.check("03.4", WRONG_SWEEP, conn)
    assert not verdict.ok
    assert any("the run gave ['pending', 'pending', 'pending', 'pending', 'dead']" in f for f in verdict.findings), (
        verdict.findings)
    assert not any(f.startswith("stalled count") for f in verdict.findings)  # the right part is not named wrong


def test_a_hint_for_an_unknown_exercise_names_the_known_ones():
    with pytest.raises(KeyError, match="01.2"):
        exercises.hint("99.9")


# -- review defect (issue 13 item 7): a check that itself fails is a finding, never a crash ----------------
def test_a_check_that_fails_on_what_the_learner_left_is_a_finding(conn):
    from echomq_teach import keyspace

    def spoils_the_set(conn, queue):
        # a plain SET where pending should be: the check's own snapshot is refused (WRONGTYPE)
        conn.call("SET", keyspace.queue_key(queue, "pending"), "three jobs")

    verdict = exercises.check("01.2", spoils_the_set, conn)
    assert not verdict.ok
    text = str(verdict)
    assert "the check could not read your queue" in text and "WRONGTYPE" in text, text


def test_a_check_that_trips_on_a_half_written_row_is_a_finding(conn):
    from echomq_teach import keyspace

    def spoils_the_counter(conn, queue, parents):
        # a parent's counter written as a word: the check's own read of :dependencies trips on it
        for parent in parents:
            conn.call("SET", keyspace.job_key(queue, parent, "dependencies"), "many")
        return {}

    verdict = exercises.check("05.3", spoils_the_counter, conn)
    assert not verdict.ok
    text = str(verdict)
    assert "the check could not read your queue" in text and "invalid literal" in text, text


# -- issue 20: every exercise says what it is; predictions are committed ---------------------------------
def test_the_catalog_names_every_exercise_with_its_kind_and_notebook():
    cat = exercises.catalog()
    assert [e.key for e in cat] == sorted(exercises.titles())
    for e in cat:
        assert e.kind in registry.KINDS, e
        assert e.notebook == registry.NOTEBOOKS[e.key[:2]] and e.notebook.startswith(e.key[:2])
    text = str(cat)
    assert "02.1" in text and "predict" in text and "02-claim-and-lease" in text
    with pytest.raises(ValueError, match="kind must be one of"):
        registry.exercise("02.99", "nothing", "Hint: none", kind="transcribe")(lambda *a: None)
    assert "02.99" not in registry.REGISTRY  # refused: nothing registered


def test_every_prediction_is_answered_with_data():
    predicts = [k for k, e in registry.REGISTRY.items() if e.kind == "predict"]
    assert len(predicts) >= 7 and len(PREDICTIONS) == len(predicts)
    for path in PREDICTIONS:
        answer = _solution(path)
        assert not callable(answer) and registry.REGISTRY[_key(path)].form.problem(answer) is None, path.name


def test_progress_tells_solved_tried_and_hinted(conn):
    for s in (registry.SOLVED, registry.TRIED, registry.HINTED):
        s.difference_update({"01.2", "01.4"})
    exercises.check("01.2", lambda c, q: None, conn)
    assert exercises.hint("01.2").startswith("Hint:")
    exercises.check("01.4", _solution(next(p for p in SOLUTIONS if _key(p) == "01.4")), conn)
    p = exercises.progress()
    assert "01.2" in p.tried and "01.2" in p.hinted and "01.2" not in p.solved
    assert "01.4" in p.solved and "01.4" not in p.tried
    assert "01.2" in str(p) and "hint asked" in str(p)


WRONG_SWEEP = {"where after each round": ["pending"] * 5, "stalled count at the end": 3}
RIGHT_SWEEP = {"where after each round": ["pending", "pending", "pending", "pending", "dead"],
               "stalled count at the end": 3}


def test_the_first_prediction_is_kept_and_graded(conn, predictions_folder):
    first = exercises.check("03.4", WRONG_SWEEP, conn)
    assert not first.ok
    kept = predictions_folder / "03.4.json"
    assert kept.is_file()
    # the run and its explanation come after the prediction is kept
    assert any("the run gave ['pending', 'pending', 'pending', 'pending', 'dead']" in f for f in first.findings)
    assert any(f.startswith("why: ") for f in first.findings)
    # a second try copies the run's answer: the first prediction is still the one graded, shown beside it
    second = exercises.check("03.4", RIGHT_SWEEP, conn)
    assert not second.ok
    text = str(second)
    assert "graded: your first prediction" in text and "not graded" in text
    assert "['pending', 'pending', 'pending', 'pending', 'pending']" in text
    assert predictions.committed("03.4").answer == WRONG_SWEEP


def test_a_kept_prediction_outlives_the_kernel(conn, predictions_folder):
    import os
    import subprocess
    import sys

    assert exercises.check("03.4", RIGHT_SWEEP, conn).ok
    # another process (a restarted kernel) finds it, in the folder its environment names as it starts
    out = subprocess.run(
        [sys.executable, "-c", "from echomq_teach.course import predictions as p; print(p.committed('03.4').answer)"],
        capture_output=True, text=True, timeout=60, check=True,
        env={**os.environ, predictions.PREDICTIONS_ENV: str(predictions_folder)},
    )
    assert "dead" in out.stdout


def test_the_learners_own_folder_is_the_jupyter_data_folder(tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != predictions.PREDICTIONS_ENV}
    env["JUPYTER_DATA_DIR"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", "from echomq_teach.course import predictions as p; print(p.folder())"],
                         capture_output=True, text=True, timeout=60, check=True, env=env)
    assert out.stdout.strip() == str(tmp_path / "echomq-teach" / "predictions")

