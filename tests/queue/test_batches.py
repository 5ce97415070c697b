"""jobs.enqueue_many: a batch of @enqueue calls in one pipeline, on both executors."""

from __future__ import annotations

import pytest
from conftest import state

from echomq_teach import jobs, snapshots
from echomq_teach.errors import BadInput, DuplicateJob


def test_a_batch_lands_like_one_enqueue_after_another(either, queue):
    ids = jobs.enqueue_many(either, queue, [f"p{i}" for i in range(50)])
    snap = snapshots.snapshot(either, queue)
    assert snap.pending == ids  # mint order is pending order
    assert [snap.rows[i]["payload"] for i in ids] == [f"p{i}" for i in range(50)]
    assert {snap.rows[i]["state"] for i in ids} == {"pending"}
    # one round trip, each call its own traced EVALSHA of @enqueue
    assert [e.script for e in either.last(51)[:-1]] == ["@enqueue"] * 50


def test_a_duplicate_in_a_batch_is_refused_alone(either, queue):
    jobs.enqueue(either, queue, "first", job_id="dup")
    out = jobs.enqueue_many(either, queue, ["a", "b", "c"], job_ids=["x1", "dup", "x2"])
    assert out[0] == "x1" and out[2] == "x2" and isinstance(out[1], DuplicateJob)
    snap = snapshots.snapshot(either, queue)
    assert snap.pending == ["dup", "x1", "x2"] and snap.rows["dup"]["payload"] == "first"


def test_bad_input_in_a_batch_sends_nothing(either, queue):
    jobs.enqueue(either, queue, "there")
    before = state(either, queue)
    sent = len(either.trace)
    for kwargs, words in (
        ({"payloads": ["ok", 7]}, "payload"),
        ({"payloads": "ab"}, "list"),
        ({"payloads": ["a", "b"], "job_ids": ["same", "same"]}, "twice"),
        ({"payloads": ["a"], "job_ids": ["a b"]}, "job id"),
        ({"payloads": ["a"], "job_ids": []}, "as long as"),
    ):
        with pytest.raises(BadInput, match=words):
            jobs.enqueue_many(either, queue, **kwargs)
    with pytest.raises(BadInput, match="queue name"):
        jobs.enqueue_many(either, "no spaces", ["a"])
    assert len(either.trace) == sent and state(either, queue) == before


def test_a_flushed_script_cache_is_reloaded_and_the_batch_sent_again(either, queue):
    jobs.enqueue(either, queue, "loads the script")
    either.client.script_flush()
    ids = jobs.enqueue_many(either, queue, ["a", "b"])
    assert len(snapshots.snapshot(either, queue).pending) == 3 and all(isinstance(i, str) for i in ids)
    lines = [e.line.split()[0] + (" NOSCRIPT" if e.error else "") for e in either.last(6)[:-1]]
    assert lines == ["EVALSHA NOSCRIPT", "EVALSHA NOSCRIPT", "SCRIPT", "EVALSHA", "EVALSHA"]
