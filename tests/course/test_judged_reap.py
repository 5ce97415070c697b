"""03.3 · your own reap: a build judged by the checker under worker kills, on a node of the judge's own.

The reference passes; each wrong answer fails with the finding that names why: the checker's
counterexample (a job stranded, a job handed out twice), or the dry run's (no limit, the wrong clock,
no deadline read), or the node's compile error with its line."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from wrong_answers import your_own_reap as wrong

from echomq_teach.course import exercises, registry
from echomq_teach.course.judges import frame, reap
from echomq_teach.course.registry import Findings

SOLUTION = Path(__file__).resolve().parents[2] / "notebooks" / "solutions" / "03_3_your_own_reap.py"


def _reference() -> str:
    spec = importlib.util.spec_from_file_location("solution_03_5", SOLUTION)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.your_own_reap()


WRONG = {
    # the checker's findings: the judged run under kills is what catches these two
    "resets attempts": (wrong.RESETS_ATTEMPTS, ("the checker says invalid (double handouts", "token 1) and again by",
                                                "reap →", "of 3 seeds")),
    "loses the job": (wrong.LOSES_THE_JOB, ("the checker says invalid (", "stranded", "reap →", "of 3 seeds")),
    # the judge's own: a lease moved back before it could have lapsed, by the node's clock
    "early margin": (wrong.EARLY_MARGIN, ("before they could have lapsed", "ms lease, was reaped", "of 3 seeds")),
    # the dry run's: known answers on a queue of three lapsed leases and one live one
    "no limit": (wrong.NO_LIMIT, ("moved 3 leases in one call handed a limit of 2",)),
    "seconds clock": (wrong.SECONDS_CLOCK, ("the earliest deadlines first; your reap moved nothing",)),
    "every lease": (wrong.EVERY_LEASE, ("whose lease runs for another minute by the server's clock",)),
    "syntax": (wrong.SYNTAX, ("your script does not compile: line 8 of your script", "'end' expected")),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_reap_fails_with_its_finding(name):
    source, says = WRONG[name]
    verdict = exercises.check("03.3", lambda: source)
    assert not verdict.ok
    text = str(verdict)
    for s in says:
        assert s in text, (name, text)
    assert registry.REGISTRY["03.3"].hint not in text


def test_the_reference_reap_passes_on_its_seeds_and_recovers_the_kills():
    found = Findings()
    recovered: dict[int, int] = {}
    seeds = [11, 22, 33]
    frame.judge_script(_reference(), found, dry_run=reap._reap_dry_run,
                       one_seed=lambda n, sha, seed, f: reap._one_reap_seed(n, sha, seed, f, recovered),
                       seeds=seeds, n_seeds=3, join_s=120)
    assert not found.items, found.items
    # the kills hit jobs, and every one was brought back
    assert sorted(recovered) == seeds and sum(recovered.values()) >= 1, recovered


def test_a_runtime_error_in_the_run_is_a_finding_naming_the_line():
    # compiles, passes nothing: the error comes from the node at the first call, with its line
    source = wrong.HEADER + "local n = tonumber(ARGV[1]) + nothing_here\nreturn {}\n"
    verdict = exercises.check("03.3", lambda: source)
    assert not verdict.ok
    assert "line 3 of your script" in str(verdict) and "nothing_here" in str(verdict), str(verdict)


def test_the_reap_judge_leaves_the_learners_node_alone(conn):
    before = conn.client.dbsize()
    assert exercises.check("03.3", _reference, conn).ok
    assert conn.client.dbsize() == before
