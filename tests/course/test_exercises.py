"""The exercises: every reference solution passes its check; an unsolved starter gets a "not yet" that
names what is missing and never the answer; hints come only on request, after a try."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import pytest

from echomq_teach.course import exercises

SOLUTIONS = sorted((Path(__file__).resolve().parents[2] / "notebooks" / "solutions").glob("*.py"))


def _key(path: Path) -> str:
    major, minor = path.stem.split("_")[:2]
    return f"{major}.{minor}"


def _solution(path: Path):
    spec = importlib.util.spec_from_file_location(f"solution_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (fn,) = [f for _, f in inspect.getmembers(module, inspect.isfunction) if f.__module__ == module.__name__]
    return fn


def _conns(key: str, conn, native_conn):
    return (conn, native_conn) if key.startswith("04.") else (conn,)


def test_every_exercise_has_a_solution():
    assert sorted(_key(p) for p in SOLUTIONS) == sorted(exercises.titles())
    for major in ("01", "02", "03", "04", "05"):
        assert sum(k.startswith(major) for k in exercises.titles()) >= 3, f"notebook {major} needs three exercises"
    for path in SOLUTIONS:
        assert exercises._REGISTRY[_key(path)].solution == path.name  # the exercise names its solution's file


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_reference_solution_passes(path, conn, native_conn):
    key = _key(path)
    verdict = exercises.check(key, _solution(path), *_conns(key, conn, native_conn))
    assert verdict.ok, str(verdict)
    assert str(verdict).startswith(f"✓ {key}")


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_unsolved_starter_fails_without_the_answer(path, conn, native_conn):
    key = _key(path)
    params = list(inspect.signature(_solution(path)).parameters)

    # the notebook's starter: the same parameters, and a body that is not written yet
    def starter(*args):
        assert len(args) == len(params)
        raise NotImplementedError

    exercises._TRIED.discard(key)
    assert exercises.hint(key) == exercises.NO_HINT_YET  # no hint before a try
    verdict = exercises.check(key, starter, *_conns(key, conn, native_conn))
    assert not verdict.ok
    text = str(verdict)
    assert text.startswith(f"✗ {key}") and "NotImplementedError" in text
    # what a stored output shows: where the hint is, not the hint
    assert "Hint:" not in text and exercises._REGISTRY[key].hint not in text and f'exercises.hint("{key}")' in text
    assert exercises.hint(key) == exercises.NO_HINT_YET  # the bare starter is not a try
    tried = exercises.check(key, lambda *args: None, *_conns(key, conn, native_conn))
    assert not tried.ok and f'exercises.hint("{key}")' in str(tried)
    assert exercises.hint(key).startswith("Hint:")  # after a try that did not pass, on request


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

    verdict = exercises.check("01.1", buggy, conn)
    assert not verdict.ok and "ZeroDivisionError" in str(verdict) and "line" in str(verdict)


def test_a_wrong_prediction_is_told_what_the_run_gave(conn):
    verdict = exercises.check(
        "03.3", lambda c, q, j: {"where after each round": ["pending"] * 3, "stalled count at the end": 3}, conn
    )
    assert not verdict.ok
    assert any("the run gave ['pending', 'pending', 'dead']" in f for f in verdict.findings), verdict.findings
    assert not any("stalled count" in f for f in verdict.findings)  # the right part is not named wrong


def test_a_hint_for_an_unknown_exercise_names_the_known_ones():
    with pytest.raises(KeyError, match="01.1"):
        exercises.hint("99.9")


# -- review defect (issue 13 item 7): a check that itself fails is a finding, never a crash ----------------
def test_a_check_that_fails_on_what_the_learner_left_is_a_finding(conn):
    from echomq_teach import keyspace

    def spoils_the_set(conn, queue):
        # a plain SET where pending should be: the check's own snapshot is refused (WRONGTYPE)
        conn.call("SET", keyspace.queue_key(queue, "pending"), "three jobs")

    verdict = exercises.check("01.1", spoils_the_set, conn)
    assert not verdict.ok
    text = str(verdict)
    assert "the check could not read your queue" in text and "WRONGTYPE" in text, text


def test_a_check_that_trips_on_a_half_written_row_is_a_finding(conn):
    from echomq_teach import keyspace

    def buries_without_a_row(conn, queue, job_id):
        # the id in dead, its row deleted: the check finds it there and then has no row to read
        conn.call("ZADD", keyspace.queue_key(queue, "dead"), 1, job_id)
        conn.call("ZREM", keyspace.queue_key(queue, "pending"), job_id)
        conn.call("DEL", keyspace.job_key(queue, job_id))

    verdict = exercises.check("03.1", buries_without_a_row, conn)
    assert not verdict.ok
    assert "the check could not read your queue" in str(verdict) and "KeyError" in str(verdict), str(verdict)
