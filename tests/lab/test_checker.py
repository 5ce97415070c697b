"""The checker can fail: made-up histories with a lost job, a double settle, a fence violation … are
each reported; a race of the naive claim on a real node is found out, and @claim2's is not."""

from __future__ import annotations

import os
import time

import pytest

from echomq_teach import jobs
from echomq_teach.completions import Settle, StreamId
from echomq_teach.lab import races
from echomq_teach.lab.checker import INVALID, INVARIANTS, Facts, FinalState, check
from echomq_teach.lab.history import History, Op, Recorder, ServerClock

SETS = ("pending", "active", "schedule", "dead")


class Story:
    """A made-up history, op by op, with the node's clock as a counter of ms."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.t = 1_000.0
        self.n = 0

    def call(self, worker: str, op: str, *, job: str | None = None, token: int | None = None, reply=None,
             answered: bool = True) -> Op:
        self.n += 1
        self.t += 10
        o = Op(worker, self.n, op, self.t, self.t + 2 if answered else None, "answer" if answered else "send",
               job, token, reply)
        self.ops.append(o)
        self.t += 2
        return o

    def enqueue(self, job: str) -> Op:
        return self.call("producer", "enqueue", job=job, reply=job)

    def claim(self, worker: str, job: str, token: int) -> Op:
        return self.call(worker, "claim", job=job, token=token, reply=[job, "p", token])

    def complete(self, worker: str, job: str, token: int, reply: str = "ok") -> Op:
        return self.call(worker, "complete", job=job, token=token, reply=reply)

    def reap(self, *released: str) -> Op:
        return self.call("metronome", "reap", reply=list(released))

    def run(self, worker: str, job: str, token: int) -> None:
        self.n += 1
        self.ops.append(Op(worker, self.n, "run", self.t, self.t, "note", job, token))

    def history(self) -> History:
        return History.of(self.ops)


def final(stream: list[tuple[str, str, int]] = (), **sets: list[str]) -> FinalState:
    rows = {j: {"state": s} for s, js in sets.items() for j in js}
    settles = [Settle(StreamId(5_000 + i, 0), j, outcome, token, result="r" if outcome == "completed" else None,
                      error=None if outcome == "completed" else "e") for i, (j, outcome, token) in enumerate(stream)]
    return FinalState({s: set(sets.get(s, [])) for s in SETS}, rows, settles)


def clean() -> tuple[Story, list[tuple[str, str, int]]]:
    """Two jobs; one worker's lease lapses, the job is reaped and completed by another, whose late
    settle is refused: everything the checker expects under faults, and nothing wrong."""
    s = Story()
    s.enqueue("A")
    s.enqueue("B")
    s.claim("w1", "A", 1)
    s.run("w1", "A", 1)
    s.reap("A")
    s.claim("w2", "A", 2)
    s.run("w2", "A", 2)
    s.complete("w2", "A", 2)
    s.complete("w1", "A", 1, reply="stale")
    s.claim("w1", "B", 1)
    s.run("w1", "B", 1)
    s.complete("w1", "B", 1)
    return s, [("A", "completed", 2), ("B", "completed", 1)]


def test_a_clean_run_under_faults_is_valid_and_counts_what_is_expected():
    s, stream = clean()
    r = check(s.history(), final(stream))
    assert r.valid and r.verdict == "valid", r.summary()
    assert r.counts() == dict.fromkeys(INVALID, 0)
    assert (r.enqueued, r.settled, r.completed, r.dead) == (2, 2, 2, 0)
    assert r.recovered == ["A"] and r.stale_refused == 1
    assert r.handler_runs == {"A": 2, "B": 1} and r.runs_histogram() == {1: 1, 2: 1}
    assert "verdict: valid" in r.summary()


def test_a_lost_job_is_reported():
    s, stream = clean()
    s.enqueue("C")  # acknowledged, then nothing: no settle, no set, no row
    r = check(s.history(), final(stream))
    assert not r.valid and r.lost == ["C"]
    assert "lost: C" in r.summary()


def test_a_job_still_in_a_set_is_unfinished_not_lost():
    s, stream = clean()
    s.enqueue("C")
    r = check(s.history(), final(stream, pending=["C"]))
    assert r.valid and r.lost == [] and r.unfinished == ["C"]


def test_an_unrecorded_completion_with_no_answer_may_have_run_and_is_no_loss():
    # a worker killed while its completion was on the wire: the row is gone, and an unrecorded run has no
    # stream to say so; a recording run's completion writes its entry in the same step, so there it is a loss
    s = Story()
    s.enqueue("C")
    s.claim("w1", "C", 1)
    s.call("w1", "complete", job="C", token=1, answered=False)
    assert check(s.history(), final(), recorded=False).valid
    assert check(s.history(), final(), recorded=True).lost == ["C"]


def test_a_double_settle_is_reported():
    s, stream = clean()
    r = check(s.history(), final(stream + [("B", "completed", 1)]))  # B's settle recorded twice
    assert not r.valid and r.settled_twice == ["B"]


def test_a_reprocessed_job_may_settle_once_per_life():
    s, stream = clean()
    s.call("operator", "reprocess", job="B", reply="ok")
    s.claim("w1", "B", 2)
    s.complete("w1", "B", 2)
    r = check(s.history(), final(stream + [("B", "completed", 2)]))
    assert r.valid and r.settled_twice == []


def test_a_fence_violation_is_reported():
    s, stream = clean()
    s.enqueue("Z")
    s.claim("w1", "Z", 1)
    s.reap("Z")
    s.claim("w2", "Z", 2)
    s.complete("w1", "Z", 1, reply="ok")  # the old holder's settle accepted after the new claim
    r = check(s.history(), final(stream + [("Z", "completed", 1)]))
    assert not r.valid
    [f] = r.fence_violations
    assert f.job == "Z" and "w1" in f.detail and "token 2" in f.detail
    assert "fence_violations: Z" in r.summary()


def test_a_zombies_lease_extension_is_a_fence_violation():
    # issue 20 (02.2): a renewal is held to the fence as a settle is; a refused one ("stale") is fine
    s, stream = clean()
    s.enqueue("X")
    s.claim("w1", "X", 1)
    s.call("w1", "extend", job="X", token=1, reply="ok")  # its own lease, while it holds it: fine
    s.reap("X")
    s.claim("w2", "X", 2)
    s.call("w1", "extend", job="X", token=1, reply="stale")  # refused: fine
    s.complete("w2", "X", 2)
    ok = check(s.history(), final(stream + [("X", "completed", 2)]))
    assert ok.valid, ok.summary()
    s.call("w1", "extend", job="X", token=1, reply="ok")  # accepted after w2's claim: the zombie renewed it
    r = check(s.history(), final(stream + [("X", "completed", 2)]))
    [f] = r.fence_violations
    assert f.job == "X" and "w1's lease extension with token 1" in f.detail and "w2" in f.detail


def test_a_put_stamped_a_few_ms_after_the_claim_it_made_possible_still_explains_it():
    # seen under load: each process stamps the node's clock by its own estimate, and the metronome's promote
    # came out 3.4 ms after the worker's claim of the job it promoted; beyond the slack it is a finding again
    def story(promote_after_ms: float) -> History:
        ops = [Op("producer", 1, "enqueue", 1000.0, 1001.0, "answer", "A", None, "A"),
               Op("w1", 2, "claim", 1010.0, 1011.0, "answer", "A", 1, ["A", "p", 1]),
               Op("w1", 3, "retry", 1020.0, 1021.0, "answer", "A", 1, "scheduled"),
               Op("w2", 4, "claim", 1080.0, 1082.0, "answer", "A", 2, ["A", "p", 2]),
               Op("metronome", 5, "promote", 1082.0 + promote_after_ms, 1083.0 + promote_after_ms, "answer",
                  None, None, ["A"]),
               Op("w2", 6, "complete", 1150.0, 1151.0, "answer", "A", 2, "ok")]
        return History.of(ops)

    assert check(story(3.4), final([("A", "completed", 2)])).double_handouts == []
    assert [f.job for f in check(story(30.0), final([("A", "completed", 2)])).double_handouts] == ["A"]


def test_a_settle_by_a_worker_that_never_claimed_is_a_fence_violation():
    s, stream = clean()
    s.enqueue("Y")
    s.claim("w1", "Y", 1)
    s.complete("w9", "Y", 1)
    r = check(s.history(), final(stream + [("Y", "completed", 1)]))
    assert [f.job for f in r.fence_violations] == ["Y"]


def test_a_double_hand_out_is_reported_and_a_release_between_explains_a_second_claim():
    s = Story()
    s.enqueue("A")
    s.claim("w1", "A", 1)
    s.claim("w2", "A", 2)  # nothing put A back between the two claims
    s.complete("w2", "A", 2)
    r = check(s.history(), final([("A", "completed", 2)]))
    assert [f.job for f in r.double_handouts] == ["A"]
    # the same two claims with a reap between them are how recovery looks
    s = Story()
    s.enqueue("A")
    s.claim("w1", "A", 1)
    s.reap("A")
    s.claim("w2", "A", 2)
    s.complete("w2", "A", 2)
    assert check(s.history(), final([("A", "completed", 2)])).valid


def test_a_recovery_call_with_no_answer_may_explain_a_second_claim():
    s = Story()
    s.enqueue("A")
    s.claim("w1", "A", 1)
    s.call("metronome", "reap", answered=False)  # its link went away: it may have put A back
    s.claim("w2", "A", 2)
    s.complete("w2", "A", 2)
    r = check(s.history(), final([("A", "completed", 2)]))
    assert r.valid and r.indeterminate["reap"] == 1 and r.notes


def test_unexpected_stranded_and_unrecorded_are_reported():
    s, stream = clean()
    s.enqueue("R")
    s.enqueue("U")
    s.claim("w1", "U", 1)
    s.complete("w1", "U", 1)  # the node said ok, but the stream has no entry for it
    end = final(stream + [("X", "completed", 1)])  # X: settled, never enqueued
    end.rows["R"] = {"state": "pending"}  # R: a row in no set
    r = check(s.history(), end)
    assert r.unexpected == ["X"]
    assert r.jobs_of("stranded") == ["R"]
    assert r.jobs_of("unrecorded") == ["U"]
    assert not r.valid


def test_a_settle_whose_answer_was_lost_is_known_from_the_stream():
    s = Story()
    s.enqueue("A")
    s.claim("w1", "A", 1)
    s.call("w1", "complete", job="A", token=1, answered=False)
    r = check(s.history(), final([("A", "completed", 1)]))
    assert r.valid and r.settled == 1 and r.indeterminate["complete"] == 1


def test_a_recorder_writes_what_history_reads(node, tmp_path, queue):
    conn = node.connector()
    try:
        rec = Recorder(tmp_path, "w1", ServerClock(conn))
        job = rec.enqueue(conn, queue, "x")
        got = rec.claim(conn, queue, 30_000)
        rec.note("run", job=got.id, token=got.attempts)
        assert rec.complete(conn, queue, got.id, got.attempts, "done", record=True) == jobs.OK
        assert rec.complete(conn, queue, got.id, got.attempts, "again", record=True) == jobs.STALE
        with pytest.raises(jobs.BadInput):
            rec.call("claim", lambda: jobs.claim(conn, queue, 0))
        rec.close()
        h = History.read(tmp_path)
        assert [(o.op, o.at) for o in h.ops] == [
            ("enqueue", "answer"), ("claim", "answer"), ("run", "note"), ("complete", "answer"),
            ("complete", "answer"), ("claim", "refused")]
        claim = h.calls("claim")[0]
        assert (claim.job, claim.token) == (job, 1) and claim.sent <= claim.answered
        assert h.calls("complete")[1].reply == "stale"
        # stamped on the node's clock: within the calls' own span of TIME
        sec, usec = conn.client.time()
        assert h.start <= h.end <= sec * 1000 + usec / 1000 + 5
        assert check(h, FinalState.read(conn, queue)).valid
    finally:
        conn.close()


def test_a_recorder_refuses_a_name_that_is_not_a_file_name(tmp_path, node):
    conn = node.connector()
    try:
        for bad in ("", "../x", "a/b", ".hidden"):
            with pytest.raises(jobs.BadInput):
                Recorder(tmp_path, bad, ServerClock(conn))
        assert list(tmp_path.iterdir()) == []
    finally:
        conn.close()


# -- on a real node -----------------------------------------------------------------------------
RACE_JOBS = int(os.environ.get("ECHOMQ_RACE_JOBS", "150"))


def test_the_naive_claim_raced_by_8_threads_hands_jobs_to_two_workers(node, tmp_path, queue):
    conn = node.connector()
    try:
        races.produce(conn, queue, tmp_path, RACE_JOBS)
        races.race(conn, queue, tmp_path, claim=races.naive_claim, threads=8)
        r = races.judge(conn, queue, tmp_path)
        assert not r.valid and r.double_handouts, r.summary()
        # the fence stops most second holders' settles; one whose HINCRBY came after the first holder's
        # settle deleted the row makes a new row at attempts 1, and settles the job a second time
        assert r.lost == [] and r.stale_refused > 0
        assert all(f.job in {d.job for d in r.double_handouts} for f in r.of("settled_twice"))
        assert r.handler_runs.most_common(1)[0][1] > 1
    finally:
        conn.close()


def test_the_same_race_on_claim2_finds_nothing(either, tmp_path, queue):
    races.produce(either, queue, tmp_path, RACE_JOBS)
    races.race(either, queue, tmp_path, claim=jobs.claim, threads=8)
    r = races.judge(either, queue, tmp_path)
    assert r.valid, r.summary()
    assert (r.enqueued, r.settled, r.stale_refused) == (RACE_JOBS, RACE_JOBS, 0)
    assert set(r.handler_runs.values()) == {1}


def test_an_unfenced_complete_lets_a_late_worker_settle_a_job_someone_else_holds(node, tmp_path, queue):
    conn = node.connector()
    try:
        [job] = races.produce(conn, queue, tmp_path, 1)
        clock = ServerClock(conn)
        a, b, m = (Recorder(tmp_path, w, clock) for w in ("A", "B", "metronome"))
        first = a.claim(conn, queue, 30)
        time.sleep(0.06)  # past A's lease
        assert m.reap(conn, queue) == [job]
        second = b.claim(conn, queue, 30_000)
        assert second.attempts == 2
        a.call("complete", lambda: races.naive_complete(conn, queue, job, first.attempts), job=job,
               token=first.attempts)
        for r in (a, b, m):
            r.close()
        rep = races.judge(conn, queue, tmp_path)
        assert [f.job for f in rep.fence_violations] == [job], rep.summary()
    finally:
        conn.close()


def test_a_claim_recorded_late_by_a_frozen_worker_is_ordered_by_its_token():
    # w2's claim took effect at once, but w2 was frozen before it wrote the answer down: its answer is
    # stamped after w3's claim. The token (1 < 2) says which came first; the reap between explains w3's.
    s = Story()
    s.enqueue("A")
    x = s.claim("w2", "A", 1)
    s.reap("A")
    y = s.claim("w3", "A", 2)
    s.complete("w3", "A", 2)
    x.answered = y.answered + 500  # the freeze, between the reply and its line
    s.complete("w2", "A", 1, reply="stale")
    assert check(s.history(), final([("A", "completed", 2)])).valid


def test_two_claims_with_one_token_in_one_life_are_a_double_hand_out():
    # a claim made of separate round trips can recreate a deleted row at attempts 1: the same token twice
    s = Story()
    s.enqueue("A")
    s.claim("w1", "A", 1)
    s.reap("A")  # even a release between does not explain a token handed out twice
    s.claim("w2", "A", 1)
    s.complete("w2", "A", 1)
    assert [f.job for f in check(s.history(), final([("A", "completed", 1)])).double_handouts] == ["A"]


def test_an_id_enqueued_again_starts_a_new_life_at_token_1():
    s = Story()
    s.enqueue("A")
    s.claim("w1", "A", 1)
    s.complete("w1", "A", 1)
    s.enqueue("A")  # the row was deleted; the same id lands again
    s.claim("w2", "A", 1)
    s.complete("w2", "A", 1)
    r = check(s.history(), final([("A", "completed", 1), ("A", "completed", 1)]))
    assert r.double_handouts == []  # each life's claim had its enqueue before it
    assert r.valid and r.settled_twice == []  # one settle in each life


# -- every ending is an entry (issue 21): burials, a parent's death, an operator's remove -------------------
def buried_twice(s: Story, job: str = "S") -> None:
    """``job`` claimed by two workers that both died; the second sweep buries it."""
    s.enqueue(job)
    s.claim("w1", job, 1)
    s.call("metronome", "stalled", reply={"requeued": [job], "dead": []})
    s.claim("w2", job, 2)
    s.call("metronome", "stalled", reply={"requeued": [], "dead": [job]})


def test_a_burial_the_stream_holds_is_an_ending_counted_dead():
    s, stream = clean()
    buried_twice(s)
    r = check(s.history(), final(stream + [("S", "stalled", 2)], dead=["S"]))
    assert r.valid, r.summary()
    assert (r.settled, r.completed, r.dead) == (3, 2, 1)


def test_a_burial_missing_from_a_recorded_stream_is_unrecorded():
    s, stream = clean()
    buried_twice(s)
    r = check(s.history(), final(stream, dead=["S"]))
    assert r.jobs_of("unrecorded") == ["S"] and not r.valid
    assert "stall sweep answered" in r.of("unrecorded")[0].detail
    # a run that does not record has nothing to miss: the sweep's answer and the dead set count it
    r = check(s.history(), final(stream, dead=["S"]), recorded=False)
    assert r.valid and r.dead == 1 and r.settled == 3


def test_a_burial_in_an_earlier_life_is_still_owed_its_entry():
    s, stream = clean()
    buried_twice(s)
    s.call("operator", "reprocess", job="S", reply="ok")
    s.claim("w1", "S", 3)
    s.call("w1", "retry", job="S", token=3, reply="dead")
    # the stream holds the second life's death only: the dead set is satisfied, the sweep's answer is not
    r = check(s.history(), final(stream + [("S", "dead", 3)], dead=["S"]))
    assert r.jobs_of("unrecorded") == ["S"]
    r = check(s.history(), final(stream + [("S", "stalled", 2), ("S", "dead", 3)], dead=["S"]))
    assert r.valid, r.summary()


def test_a_job_in_dead_with_no_death_on_a_recorded_stream_is_unrecorded():
    # a flow parent failed by its child's death: no call of the history names it, the dead set does
    s, stream = clean()
    s.enqueue("P")
    r = check(s.history(), final(stream, dead=["P"]))
    assert r.jobs_of("unrecorded") == ["P"]
    assert "no death" in r.of("unrecorded")[0].detail
    r = check(s.history(), final(stream + [("P", "child_failed", 0)], dead=["P"]))
    assert r.valid and r.dead == 1


def test_a_removed_job_is_an_ending_not_a_loss():
    s, stream = clean()
    s.enqueue("X")
    r = check(s.history(), final(stream + [("X", "removed", 0)]))
    assert r.valid and r.lost == [] and r.removed == 1 and r.settled == 3
    assert "removed 1" in r.summary()
    # removed without a record: the job is gone without a trace, which is what "lost" says
    assert check(s.history(), final(stream)).lost == ["X"]


# -- each invariant on its own ------------------------------------------------------------------------
def _breaks(kind: str) -> tuple[History, FinalState, str]:
    """A run that breaks the invariant ``kind`` for one job (and that job)."""
    s, stream = clean()
    end = final(stream)
    if kind == "lost":
        s.enqueue("C")
        return s.history(), end, "C"
    if kind == "settled_twice":
        return s.history(), final(stream + [("B", "completed", 1)]), "B"
    if kind == "unexpected":
        return s.history(), final(stream + [("X", "completed", 1)]), "X"
    if kind == "stranded":
        s.enqueue("R")
        end.rows["R"] = {"state": "pending"}
        return s.history(), end, "R"
    if kind == "double_handouts":
        s.enqueue("D")
        s.claim("w1", "D", 1)
        s.claim("w2", "D", 2)
        s.complete("w2", "D", 2)
        return s.history(), final(stream + [("D", "completed", 2)]), "D"
    if kind == "fence_violations":
        s.enqueue("Z")
        s.claim("w1", "Z", 1)
        s.reap("Z")
        s.claim("w2", "Z", 2)
        s.complete("w1", "Z", 1)
        return s.history(), final(stream + [("Z", "completed", 1)]), "Z"
    assert kind == "unrecorded"
    s.enqueue("U")
    s.claim("w1", "U", 1)
    s.complete("w1", "U", 1)
    return s.history(), end, "U"


def test_every_invariant_has_its_function_in_the_reports_order():
    # the checker's seven first, in the report's order; after them, what lab.models judges beside it
    assert INVALID[: len(INVARIANTS)] == tuple(INVARIANTS) and set(INVALID) - set(INVARIANTS) == {"released_early"}


@pytest.mark.parametrize("kind", list(INVARIANTS))
def test_each_invariant_finds_its_own_break_and_nothing_in_a_clean_run(kind):
    s, stream = clean()
    assert INVARIANTS[kind](Facts.of(s.history(), final(stream))) == []
    history, end, job = _breaks(kind)
    found = INVARIANTS[kind](Facts.of(history, end))
    assert [f.job for f in found] == [job] and {f.kind for f in found} == {kind}
    # check composes the same finding into its report, and the report is invalid
    report = check(history, end)
    assert [str(f) for f in report.of(kind)] == [str(f) for f in found] and not report.valid


def test_an_unrecorded_run_owes_no_entries():
    history, end, _ = _breaks("unrecorded")
    assert INVARIANTS["unrecorded"](Facts.of(history, end, recorded=False)) == []
    assert check(history, end, recorded=False).valid
