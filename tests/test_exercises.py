"""The exercises: every reference solution passes its check; an unsolved starter gets a helpful "not yet"."""

from __future__ import annotations

import importlib.util
import inspect as pyinspect
from pathlib import Path

import pytest

from echomq_teach import exercises

SOLUTIONS = sorted((Path(__file__).resolve().parent.parent / "notebooks" / "solutions").glob("*.py"))


def _key(path: Path) -> str:
    major, minor = path.stem.split("_")[:2]
    return f"{major}.{minor}"


def _solution(path: Path):
    spec = importlib.util.spec_from_file_location(f"solution_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (fn,) = [f for _, f in pyinspect.getmembers(module, pyinspect.isfunction) if f.__module__ == module.__name__]
    return fn


def _on_request(key: str) -> bool:
    return exercises._REGISTRY[key].hint_on_request


def _conns(key: str, conn, native_conn):
    return (conn, native_conn) if key.startswith("04.") else (conn,)


def test_every_exercise_has_a_solution():
    assert sorted(_key(p) for p in SOLUTIONS) == sorted(exercises.titles())
    for major in ("01", "02", "03", "04", "05"):
        assert sum(k.startswith(major) for k in exercises.titles()) >= 2, f"notebook {major} needs two exercises"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_reference_solution_passes(path, conn, native_conn):
    key = _key(path)
    verdict = exercises.check(key, _solution(path), *_conns(key, conn, native_conn))
    assert verdict.ok, str(verdict)
    assert str(verdict).startswith(f"✓ {key}")


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_unsolved_starter_fails_helpfully(path, conn, native_conn):
    key = _key(path)
    params = list(pyinspect.signature(_solution(path)).parameters)

    # the notebook's starter: the same parameters, and a body that is not written yet
    def starter(*args):
        assert len(args) == len(params)
        raise NotImplementedError

    verdict = exercises.check(key, starter, *_conns(key, conn, native_conn))
    assert not verdict.ok
    text = str(verdict)
    assert text.startswith(f"✗ {key}") and "NotImplementedError" in text
    if _on_request(key):
        # what a stored output shows: not the hint, which the learner asks for after a try
        assert "Hint:" not in text and exercises.hint(key) not in text
        assert exercises.hint(key).startswith("Hint:")
    else:
        assert "Hint:" in text


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_do_nothing_answer_is_named_not_crashed(path, conn, native_conn):
    key = _key(path)
    verdict = exercises.check(key, lambda *args: None, *_conns(key, conn, native_conn))
    assert not verdict.ok
    # a finding that says what is wrong, beyond the hint
    assert len(verdict.findings) >= 2 and all(f.strip() for f in verdict.findings)
    assert ("Hint:" in str(verdict)) is not _on_request(key)


def test_a_learner_bug_is_reported_with_its_line(conn):
    def buggy(conn, queue):
        return 1 / 0

    verdict = exercises.check("01.1", buggy, conn)
    assert not verdict.ok and "ZeroDivisionError" in str(verdict) and "line" in str(verdict)


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
    assert "Hint:" in text


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
