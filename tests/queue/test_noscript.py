"""EVALSHA survives SCRIPT FLUSH: a NOSCRIPT answer reloads the script and retries once."""

from __future__ import annotations

import pytest
import redis

from echomq_teach import Connector, jobs, scripts, snapshots


def test_claim_survives_script_flush_and_the_trace_shows_the_retry(conn: Connector, queue: str, node) -> None:
    jobs.enqueue(conn, queue, "before")
    jobs.claim(conn, queue, 30_000)  # @claim2 is now loaded and remembered by this connector
    sha = scripts.load("claim2").sha
    raw = node.client()
    try:
        raw.script_flush()
        assert raw.script_exists(sha) == [False]
        # a raw EVALSHA now fails: the cache really is empty
        with pytest.raises(redis.exceptions.NoScriptError):
            raw.evalsha(sha, 0)
        job_id = jobs.enqueue(conn, queue, "after")
        conn.clear_trace()
        got = jobs.claim(conn, queue, 30_000)
        assert got == jobs.Claimed(job_id, "after", 1)
        assert raw.script_exists(sha) == [True]
    finally:
        raw.close()
    pause_read, refused, load, retried = conn.last(4)
    assert pause_read.line == f"EXISTS emq:{{{queue}}}:paused"
    # the refused EVALSHA, the reload, and the retry that answered
    assert refused.script == "@claim2" and refused.error
    assert isinstance(refused.reply, redis.exceptions.NoScriptError)
    assert load.args[:2] == ["SCRIPT", "LOAD"] and load.args[2] == scripts.load("claim2").source
    assert load.reply == sha
    assert retried.script == "@claim2" and not retried.error
    assert retried.line == refused.line
    assert retried.reply == [job_id, "after", 1]
    assert len(conn.trace) == 4


def test_every_script_survives_a_flush(conn: Connector, queue: str, node) -> None:
    job_id = jobs.enqueue(conn, queue, "w")
    got = jobs.claim(conn, queue, 30_000)
    raw = node.client()
    try:
        raw.script_flush()
    finally:
        raw.close()
    # @complete was never loaded, @enqueue was: both paths must work after the flush
    assert jobs.complete(conn, queue, job_id, got.attempts) == jobs.OK
    assert jobs.enqueue(conn, queue, "again")
    assert [e.script for e in conn.trace if e.error] == ["@enqueue"]


def test_a_second_connector_also_recovers(conn: Connector, queue: str, node) -> None:
    other = conn.fork()
    try:
        jobs.enqueue(other, queue, "x")
        raw = node.client()
        raw.script_flush()
        raw.close()
        jobs.enqueue(conn, queue, "y")  # conn reloads @enqueue for the node
        # the node has @enqueue again, so the fork's EVALSHA simply answers
        other.clear_trace()
        jobs.enqueue(other, queue, "z")
        assert [e.error for e in other.trace] == [False]
        # flush again after the fork has loaded @snapshot: it hits NOSCRIPT, reloads and answers
        snapshots.snapshot(other, queue)
        raw = node.client()
        raw.script_flush()
        raw.close()
        other.clear_trace()
        assert len(snapshots.snapshot(other, queue).pending) == 3
        assert [e.error for e in other.trace] == [True, False, False]
    finally:
        other.close()
