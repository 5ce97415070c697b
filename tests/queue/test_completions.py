"""The completions stream's one parser: every entry a recording queue writes reads back; any other shape is refused."""

from __future__ import annotations

import pytest

from echomq_teach import completions, jobs
from echomq_teach.connector import Connector
from echomq_teach.errors import BadStream


def test_read_all_pages_through_every_ending_in_order(conn: Connector, queue: str) -> None:
    ids = [jobs.enqueue(conn, queue, f"p{i}") for i in range(5)]
    for i in range(5):
        c = jobs.claim(conn, queue, 30_000)
        assert c is not None
        if i % 2:
            jobs.complete(conn, queue, c.id, c.attempts, f"r{i}", record=True)
        else:
            jobs.retry(conn, queue, c.id, c.attempts, f"e{i}", 1, 1, record=True)
    got = completions.read_all(conn, queue, page=2)  # three pages: 2, 2, 1
    assert [s.job_id for s in got] == ids
    assert [s.outcome for s in got] == ["dead", "completed", "dead", "completed", "dead"]
    assert [s.result or s.error for s in got] == ["e0", "r1", "e2", "r3", "e4"]
    assert all(s.attempts == 1 for s in got) and got == sorted(got, key=lambda s: s.stream_id)
    assert completions.read_all(conn, queue) == got


def test_an_entry_of_another_shape_is_refused_by_name(conn: Connector, queue: str) -> None:
    stream = completions.completions_stream(queue)
    conn.client.xadd(stream, {"id": "a", "outcome": "completed", "attempts": "1", "result": "x"})
    eid = conn.client.xadd(stream, {"someone": "else's"})
    with pytest.raises(BadStream, match=f"entry {eid} of .*stream:completions has outcome None"):
        completions.read_all(conn, queue)
