"""03.3 · your own reap, bounded: a build judged by the checker under a kill, a zombie and a poison job, on a node
of the judge's own.

The reference passes; each wrong answer and each copy attempt fails with the finding that names why, refused by
the dry run (the queue-state check, the gap probe, known answers) before any judged run, but one: a reap that
takes healthy leases early is caught by the judged run on every seed (each of its jobs is reaped mid-work)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from wrong_answers import your_own_reap as wrong

from echomq_teach.course import exercises, registry

SOLUTION = Path(__file__).resolve().parents[2] / "notebooks" / "solutions" / "03_3_your_own_reap.py"


def _reference() -> str:
    spec = importlib.util.spec_from_file_location("solution_03_3", SOLUTION)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.your_own_reap()


CAP = "lapsed on its attempt 3 of 3 (max_attempts, ARGV[2])"
WRONG = {
    # the queue-state check: moved back, its row still 'active' (the dead worker's settle would pass the fence)
    "state left active": (wrong.STATE_LEFT_ACTIVE, ("misplaced:", "its row says 'active'", "it is in pending")),
    "loses the job": (wrong.LOSES_THE_JOB, ("misplaced:", "its row says 'pending'", "it is in no set")),
    "resets attempts": (wrong.RESETS_ATTEMPTS, ("its attempts should stay 1", "it is '0'")),
    "no limit": (wrong.NO_LIMIT, ("handed a limit of 2 (ARGV[1]) also moved",)),
    "seconds clock": (wrong.SECONDS_CLOCK, ("moved nothing, though three leases lapsed",)),
    "every lease": (wrong.EVERY_LEASE, ("should answer", "your reap answered")),
    "unrecorded burial": (wrong.UNRECORDED_BURIAL, (CAP, "the stream holds 0 entries for it")),
    "stalls counted": (wrong.STALLS_COUNTED, (CAP, "your reap left it in pending")),
    "syntax": (wrong.SYNTAX, ("your script does not compile: line 9 of your script", "'end' expected")),
    # copy attempts: notebook 03's @reap and @stalled_check, as they are and fitted to the exercise
    "copy: @reap": (wrong.reap_as_it_is(), ("misplaced:", "in no set")),
    "copy: @reap fitted": (wrong.reap_fitted(), (CAP, "your reap left it in pending")),
    "copy: @stalled_check": (wrong.stalled_check_as_it_is(), ("EMQARG record must be 0 or 1",)),
    "copy: @stalled_check fitted": (wrong.stalled_check_fitted(), (CAP, "your reap left it in pending")),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_reap_fails_the_dry_run_with_its_finding(name):
    source, says = WRONG[name]
    verdict = exercises.check("03.3", lambda: source)
    assert not verdict.ok
    text = str(verdict)
    for s in says:
        assert s in text, (name, text)
    assert not re.search(r"failed on \d+ of", text)  # refused before any judged run: no seed's luck in it
    assert registry.REGISTRY["03.3"].hint not in text


def test_a_reap_that_takes_healthy_leases_early_fails_every_seed():
    # leases due within 500 ms taken for lapsed: every job of the run is reaped mid-work, so every seed finds it
    verdict = exercises.check("03.3", lambda: wrong.EARLY_MARGIN)
    text = str(verdict)
    assert not verdict.ok and "before they could have lapsed" in text and "failed on 3 of 3 seeds" in text, text


def test_a_runtime_error_is_a_finding_naming_the_line():
    # compiles, passes nothing: the error comes from the node at the first call, with its line
    source = wrong.HEADER + "local n = tonumber(ARGV[1]) + nothing_here\nreturn {{}, {}}\n"
    verdict = exercises.check("03.3", lambda: source)
    assert not verdict.ok
    assert "line 4 of your script" in str(verdict) and "nothing_here" in str(verdict), str(verdict)

