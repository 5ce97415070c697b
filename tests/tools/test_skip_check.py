"""The unexpected-skip check fails a session, names the test and its reason, and honours the allow-list."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

HERE = Path(__file__).resolve().parent

INNER_CONFTEST = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
from skip_check import pytest_addoption, pytest_configure  # noqa: F401
"""

INNER_TESTS = """
import pytest

def test_runs():
    assert True

def test_skips_here():
    pytest.skip("no frobnicator on this machine")
"""


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_inner=INNER_TESTS)
    return pytester


def test_an_unlisted_skip_fails_the_session_and_is_named(inner, monkeypatch, tmp_path):
    monkeypatch.setattr("skip_check.ALLOW_LIST", tmp_path / "none.txt")
    result = inner.runpytest_inprocess("--strict-skips", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*UNEXPECTED SKIP test_inner.py::test_skips_here: no frobnicator on this machine*"])


def test_a_listed_skip_passes(inner, monkeypatch, tmp_path):
    allow = tmp_path / "allow.txt"
    allow.write_text("# why\ntest_inner.py::test_skips_* | no frobnicator\n")
    monkeypatch.setattr("skip_check.ALLOW_LIST", allow)
    result = inner.runpytest_inprocess("--strict-skips", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    assert "UNEXPECTED SKIP" not in result.stdout.str()


def test_a_listed_test_with_another_reason_still_fails(inner, monkeypatch, tmp_path):
    allow = tmp_path / "allow.txt"
    allow.write_text("test_inner.py::test_skips_here | no widget\n")
    monkeypatch.setattr("skip_check.ALLOW_LIST", allow)
    assert inner.runpytest_inprocess("--strict-skips", "-p", "no:cacheprovider").ret == pytest.ExitCode.TESTS_FAILED


def test_without_the_flag_a_skip_is_only_a_skip(inner, monkeypatch, tmp_path):
    monkeypatch.setattr("skip_check.ALLOW_LIST", tmp_path / "none.txt")
    assert inner.runpytest_inprocess("-p", "no:cacheprovider").ret == pytest.ExitCode.OK


def test_the_allow_list_parses():
    from skip_check import allow_list

    for pattern, words in allow_list():
        assert pattern and words
