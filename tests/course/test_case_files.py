"""Notebook 10's diagnose exercises: each wrong answer fails with the finding that says why; the setups
leave only the case model's keys, under the fresh queue's hashtag, none with a TTL."""

from __future__ import annotations

import pytest
from wrong_answers.case_files import WRONG

from echomq_teach.course import exercises, registry


def test_notebook_10_has_three_diagnose_exercises() -> None:
    tens = {k: e for k, e in registry.REGISTRY.items() if k.startswith("10.")}
    # 10.4 is a stage of your own queue (a build); the case files are the three diagnoses
    assert {k for k, e in tens.items() if e.kind == "diagnose"} == {"10.1", "10.2", "10.3"}
    assert {e.notebook for e in tens.values()} == {"10-case-files"}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_diagnosis_fails_with_its_finding(conn, name: str) -> None:
    key, answer, says = WRONG[name]
    verdict = exercises.check(key, answer, conn)
    assert not verdict.ok, (name, str(verdict))
    text = str(verdict)
    for s in says:
        assert s in text, (name, text)
    assert registry.REGISTRY[key].hint not in text


@pytest.mark.parametrize("key", ["10.1", "10.2", "10.3"])
def test_the_setup_writes_only_under_its_queue(conn, key: str) -> None:
    before = set(conn.client.keys("*"))
    seen = []

    def look(c, q, *a):  # what the learner's function finds: the setup's keys, as they stand while it reads
        seen.append((q, set(c.client.keys("*")) - before, [k for k in c.client.keys("*") if c.client.pttl(k) != -1]))
        return set()

    exercises.check(key, look, conn)
    ((queue, added, lapsing),) = seen
    assert added and all(k.startswith(f"case:{{{queue}}}:") for k in added), added
    # nothing left to lapse by itself while the learner reads
    assert [k for k in lapsing if k in added] == []
    assert set(conn.client.keys("*")) == before  # and the check took its keys away when it was done
