"""Unexpected skips fail the run: every skip must be on the allow-list in ``tests/expected_skips.txt``.

A test that should run on the CI machine (Debian 12, root, a private Docker
engine, chromium) must not skip quietly. With ``--strict-skips`` (tools/test.sh
passes it) or ``$CI`` set, each skip is checked at the end of the session
against the allow-list; one that is not listed turns the session into a
failure, with a message naming the test and its skip reason.

Allow-list lines: ``<node id pattern> | <words the skip reason contains>``,
where the pattern is an fnmatch pattern over pytest's node id; ``#`` starts a
comment. ``tests/conftest.py`` imports the two hooks that register the check.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest

ALLOW_LIST = Path(__file__).with_name("expected_skips.txt")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--strict-skips",
        action="store_true",
        default=False,
        help="fail the session on a skip that tests/expected_skips.txt does not list (also when $CI is set)",
    )


def allow_list(path: Path | None = None) -> list[tuple[str, str]]:
    """(node id pattern, reason words) pairs from the allow-list file."""
    path = path or ALLOW_LIST
    out: list[tuple[str, str]] = []
    if not path.exists():
        return out
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        pattern, sep, words = (part.strip() for part in line.partition("|"))
        if not sep or not pattern or not words:
            raise pytest.UsageError(f"{path}:{lineno}: expected '<node id pattern> | <reason words>'")
        out.append((pattern, words))
    return out


def expected(nodeid: str, reason: str, allowed: list[tuple[str, str]]) -> bool:
    return any(fnmatch.fnmatchcase(nodeid, pat) and words in reason for pat, words in allowed)


def _reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


class SkipCheck:
    """The skips of one session, checked at its end (one instance per pytest run)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.skips: list[tuple[str, str]] = []
        self.unexpected: list[tuple[str, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skips.append((report.nodeid, _reason(report)))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        strict = self.config.getoption("--strict-skips") or os.environ.get("CI")
        if not strict or not self.skips:
            return
        allowed = allow_list(ALLOW_LIST)
        self.unexpected = [(n, r) for n, r in self.skips if not expected(n, r, allowed)]
        if self.unexpected and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        if not self.unexpected:
            return
        terminalreporter.section("unexpected skips", sep="=", red=True, bold=True)
        for nodeid, reason in self.unexpected:
            terminalreporter.write_line(f"UNEXPECTED SKIP {nodeid}: {reason}", red=True)
        terminalreporter.write_line(
            f"{len(self.unexpected)} test(s) skipped that should run on this machine; make them run, or list "
            f"them with their reason in {ALLOW_LIST.name} if they truly cannot"
        )


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SkipCheck(config), "echomq-skip-check")
