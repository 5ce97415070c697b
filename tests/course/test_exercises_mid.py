"""Notebooks 04–06: each exercise's reference passes (test_exercises.py runs it) and plausible wrong answers
fail, each with the finding that explains why; the 05.5 build is judged by the checker over several seeds."""

from __future__ import annotations

import pytest
from wrong_answers import fan_in as wrong_fan_ins

from echomq_teach.course import exercises, registry

# -- 05.5: the fan-in, written as Lua, judged on flows under kills ------------------------------------------
WRONG_FAN_INS = {
    # no fence: the zombie the nemesis freezes completes its child late, after another worker did
    "no fence": (wrong_fan_ins.NO_FENCE, ("the checker says invalid (", "fence violations",
                                          "the fence should have answered stale", "of 3 seeds")),
    # the counter read before it is counted down: the last child sees 1, no parent is ever released
    "read before decr": (wrong_fan_ins.READ_BEFORE_DECR, ("parents were never released", "still awaiting_children")),
    # the release not tied to the count: a parent runs with its children still pending
    "every child releases": (wrong_fan_ins.EVERY_CHILD_RELEASES, ("was released early", "children had not "
                                                                   "completed")),
    "runtime": (wrong_fan_ins.RUNTIME, ("line 9 of your script", "parents_left")),
}


@pytest.mark.parametrize("name", sorted(WRONG_FAN_INS))
def test_a_wrong_fan_in_fails_with_its_finding(name):
    source, says = WRONG_FAN_INS[name]
    verdict = exercises.check("05.5", lambda: source)
    assert not verdict.ok
    text = str(verdict)
    for s in says:
        assert s in text, (name, text)
    assert registry.REGISTRY["05.5"].hint not in text


def test_the_unfenced_fan_in_fails_on_every_seed():
    # the judge's schedule freezes a worker that holds a child on every seed: the zombie is never luck
    verdict = exercises.check("05.5", lambda: wrong_fan_ins.NO_FENCE)
    assert "failed on 3 of 3 seeds" in str(verdict), str(verdict)


def test_a_fan_in_that_does_not_compile_names_its_line():
    # the if is never closed: the node says so where the source ends, line 4
    verdict = exercises.check("05.5", lambda: "local left = redis.call('DECR', KEYS[3])\nif left then\nreturn 1\n")
    assert not verdict.ok and "your script does not compile: line 4 of your script" in str(verdict), str(verdict)
