"""The durable floor on real nodes: the fold and its trim, the file's settings, the lease, reads from the floor alone.

Each test records settles with a real Consumer (``record=True``) and folds
them with a real driver into a SQLite file of its own; the remote cases use the
session's real SeaweedFS.
"""

from __future__ import annotations

import hashlib
import io
import json
import time

import pytest
from conftest import wait_for
from floor_support import exactly_once, floor_settles, settle, stream_settles

from echomq_teach import floor, jobs, keyspace
from echomq_teach.completions import StreamId
from echomq_teach.floor import DriverBusy, Fenced, FloorError, reads
from echomq_teach.floor.embedded import select_sql
from echomq_teach.floor.remote import Remote
from echomq_teach.nodes.host import free_port
from echomq_teach.nodes.local import LocalNode


@pytest.fixture
def f(tmp_path):
    fl = floor.open_floor(tmp_path / "floor.sqlite3")
    yield fl
    fl.close()


# -- the fold ----------------------------------------------------------------------------------------------
def test_a_fold_archives_a_slice_then_trims_exactly_it(conn, queue, f):
    recorded = settle(conn, queue, 25)
    stream = floor.completions_stream(queue)
    driver = floor.Driver(conn, queue, f, slice_size=10)
    conn.clear_trace()
    one = driver.fold()
    assert (one.read, one.trimmed, one.stream_len, one.floor_rows) == (10, 10, 15, 10)
    lines = [e.line for e in conn.last(6)]
    xrange = next(ln for ln in lines if ln.startswith("XRANGE"))
    assert xrange == f"XRANGE {stream} (0-0 + COUNT 10"
    trim = next(e for e in conn.last(6) if e.script == "@floor_trim")
    assert trim.args[-3] == str(StreamId.parse(one.last).next())  # MINID: the entry after the slice's last
    # the trim comes after the write: the commit is in the trace's past when @floor_trim is sent
    assert lines.index(xrange) < [e.script for e in conn.last(6)].index("@floor_trim")
    assert f.cursor(stream) == StreamId.parse(one.last)
    two = driver.fold()
    assert xrange.replace("(0-0", f"({one.last}") == next(e.line for e in conn.last(6) if e.line.startswith("XRANGE"))
    report = driver.run(timeout=10)
    assert (two.read, report.folded, report.stopped_by) == (10, 5, "empty")
    exactly_once(floor_settles(f.path, queue), recorded)
    assert stream_settles(conn, queue) == []
    assert reads.counts(f, queue) == dict.fromkeys(jobs.OUTCOMES, 0) | {"completed": 23, "dead": 2}
    driver.stop()


def test_the_floor_is_one_sqlite_file_in_wal_mode_with_full_sync_and_indexed_reads(f):
    assert f.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert f.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    # the queries the reads send, planned on a floor with rows in it
    with f.transaction() as db:
        db.executemany(
            "INSERT INTO settles VALUES ('s', ?, 0, ?, ?, 1, 'r', NULL)",
            [(i, f"JOB{i}", "dead" if i % 10 == 0 else "completed") for i in range(2_000)],
        )
    plans = {
        "by job": (select_sql(reads.BY_JOB[0], reads.BY_JOB[1]), ("s", "JOB7")),
        "by outcome": (reads.COUNTS_SQL, ("s",)),
        "by time": (select_sql(reads.IN_RANGE), ("s", 0, 1)),
    }
    used = {k: " ".join(r[-1] for r in f.db.execute("EXPLAIN QUERY PLAN " + q, a)) for k, (q, a) in plans.items()}
    assert "SEARCH settles USING INDEX settles_by_job (stream=? AND job_id=?)" in used["by job"]
    assert "settles_by_outcome" in used["by outcome"]
    assert "USING PRIMARY KEY" in used["by time"]  # (stream, settled_ms, seq) is the key: a time range is a search


def test_reads_answer_from_the_floor_alone_after_the_node_is_gone(tmp_path):
    n = LocalNode()
    try:
        c = n.connector()
        recorded = settle(c, "orders", 30)
        t0 = int(c.client.xrange(floor.completions_stream("orders"), count=1)[0][0].split("-")[0])
        with floor.open_floor(tmp_path / "floor.sqlite3") as fl, floor.Driver(c, "orders", fl) as driver:
            driver.run(timeout=10)
        dead_one = next(j for j, o in recorded if o == "dead")
        c.close()
    finally:
        n.stop()
    assert not n.running
    with floor.open_floor(tmp_path / "floor.sqlite3", readonly=True) as fl:
        (s,) = reads.by_job(fl, "orders", dead_one)
        assert (s.outcome, s.error, s.result, s.attempts) == ("dead", "a tenth of the jobs fail", None, 1)
        everything = reads.in_range(fl, "orders", t0, t0 + 3_600_000)
        assert [(x.job_id, x.outcome) for x in everything] == recorded
        assert reads.in_range(fl, "orders", t0 - 10_000, t0) == []
        assert reads.counts(fl, "orders") == dict.fromkeys(jobs.OUTCOMES, 0) | {"completed": 27, "dead": 3}
        buckets = reads.throughput(fl, "orders", bucket_ms=50)
        assert sum(c["completed"] + c["dead"] for _, c in buckets) == 30
        assert [b for b, _ in buckets] == list(range(buckets[0][0], buckets[-1][0] + 50, 50))  # no gaps
        fig = reads.plot_throughput(fl, "orders", bucket_ms=50)
        assert [ln.get_label() for ln in fig.axes[0].get_lines()] == ["completed", "dead"]
        assert sum(fig.axes[0].get_lines()[0].get_ydata()) == 27
        assert reads.counts(fl, "nobody") == dict.fromkeys(jobs.OUTCOMES, 0)


def test_bytes_that_are_not_utf8_come_back_as_the_same_bytes(conn, queue, f, object_store):
    blob = b"\xff\xfe raw \x00 bytes"
    job = jobs.enqueue(conn, queue, "binary result")
    c = jobs.claim(conn, queue, 30_000)
    assert jobs.complete(conn, queue, job, c.attempts, blob, record=True) == jobs.OK
    f.remote = object_store.remote(f"bytes-{queue}")
    with floor.Driver(conn, queue, f) as driver:
        driver.run(timeout=10)
    (s,) = reads.by_job(f, queue, job)
    assert s.result == blob
    (r,) = list(f.remote.settles(floor.completions_stream(queue)))
    assert r == s


# -- one driver per stream; the fence ------------------------------------------------------------------------
def test_a_second_driver_is_refused_until_the_first_lets_go(conn, queue, f, tmp_path):
    settle(conn, queue, 5)
    first = floor.Driver(conn, queue, f, lease_ms=30_000)
    first.start()
    with floor.open_floor(tmp_path / "other.sqlite3") as other:
        for fl in (f, other):
            with pytest.raises(DriverBusy, match=r"holds the stream of queue .* for \d+ ms more"):
                floor.Driver(conn.fork(), queue, fl).start()
        assert other.count() == 0
    token = first.token
    assert first.stop() is True
    second = floor.Driver(conn.fork(), queue, f)
    assert second.start() == token + 1  # a new holder, a new token
    assert second.run(timeout=10).folded == 5
    second.stop()


#: the drivers' lease in the tests where it lapses: longer than a fold takes on a loaded machine, so it lapses only
#: where a test waits for it to (``lapsed``), never in the middle of a fold
LEASE_MS = 1_000


def lapsed(conn, queue) -> None:
    """Wait (bounded) until the queue's driver lease key has expired on the node: nobody renewed the lease."""
    key = keyspace.queue_key(queue, "floor:driver")  # @floor_lease's KEYS[1]
    wait_for(lambda: not conn.client.exists(key), "the driver's lease lapses", timeout=10)


def test_a_driver_that_lost_its_lease_is_fenced_at_the_floor_and_at_the_trim(conn, queue, f):
    recorded = settle(conn, queue, 30)
    stream = floor.completions_stream(queue)
    # a lease a loaded machine's fold cannot outlast; then the driver "pauses" until its lease key expires
    late = floor.Driver(conn, queue, f, slice_size=10, lease_ms=LEASE_MS)
    late.fold()
    lapsed(conn, queue)
    taker = floor.Driver(conn.fork(), queue, f, slice_size=10)
    taker.fold()
    # the late driver's next fold cannot renew: the lease is the taker's
    with pytest.raises(DriverBusy):
        late.fold()
    # nor can its writes land when they skip the lease: the floor knows a newer token, the trim checks the lease
    cursor = f.cursor(stream)
    slice_ = late._next_slice()
    before = f.dump(), conn.client.xlen(stream)
    with pytest.raises(Fenced, match="older"):
        f.commit(stream, cursor, slice_, late.token)
    with pytest.raises(Fenced, match="no longer this driver's"):
        late.lease.trim(stream, str(f.trim_below(stream)), str(cursor))
    assert (f.dump(), conn.client.xlen(stream)) == before
    taker.run(timeout=10)
    exactly_once(floor_settles(f.path, queue), recorded)
    taker.stop()
    assert late.stop() is False  # nothing of its own to give back


def test_a_lapsed_lease_nobody_took_is_taken_again_with_a_newer_token(conn, queue, f):
    settle(conn, queue, 4)
    driver = floor.Driver(conn, queue, f, slice_size=2, lease_ms=LEASE_MS)
    driver.fold()
    old = driver.token
    lapsed(conn, queue)
    driver.fold()
    assert driver.token == old + 1 and f.token(floor.completions_stream(queue)) == driver.token
    driver.stop()


def test_a_node_restarted_without_persistence_loses_the_stream_not_the_floor(tmp_path):
    n = LocalNode()
    try:
        c = n.connector()
        first = settle(c, "q", 12)
        with floor.open_floor(tmp_path / "floor.sqlite3") as fl:
            d = floor.Driver(c, "q", fl, slice_size=10)
            d.fold()  # ten archived; two only in memory
            token = d.token
            c.close()
            n.restart(forget=True)
            c = n.connector()
            assert c.client.exists(floor.completions_stream("q")) == 0
            d2 = floor.Driver(c, "q", fl)
            with pytest.raises(floor.BadStream, match=r"the floor holds its settles up to \d+-\d+; a node restarted"):
                d2.start()
            later = settle(c, "q", 3, start=12)
            assert d2.start() > token  # the node's fence counter restarted at 0; the floor's token wins
            d2.run(timeout=10)
            exactly_once(floor_settles(fl.path, "q"), first[:10] + later)
            d2.stop()
        c.close()
    finally:
        n.stop()


def test_a_stream_made_again_with_lower_ids_is_never_trimmed(conn, queue, f):
    settle(conn, queue, 3)
    stream = floor.completions_stream(queue)
    d = floor.Driver(conn, queue, f)
    d.run(timeout=10)
    conn.client.delete(stream)
    conn.client.xadd(stream, {"id": "JOBold", "outcome": "completed", "attempts": "1", "result": "r"}, id="1-1")
    with pytest.raises(floor.BadStream, match="ids below the floor's cursor"):
        d.fold()
    assert conn.client.xlen(stream) == 1 and f.count() == 3
    d.stop()


# -- the remote -------------------------------------------------------------------------------------------------
def _first_id(name: str) -> StreamId:
    ms, seq = name.rsplit("/", 1)[1].split("_")[0].split("-")
    return StreamId(int(ms), int(seq))


def test_each_slice_is_one_immutable_object_named_in_stream_order(conn, queue, f, object_store):
    recorded = settle(conn, queue, 25)
    stream = floor.completions_stream(queue)
    f.remote = object_store.remote(f"names-{queue}")
    with floor.Driver(conn, queue, f, slice_size=10) as d:
        d.run(timeout=10)
    names = f.remote.objects(stream)
    assert len(names) == 3 and names == sorted(names)
    archived = f.settles(stream)
    assert [_first_id(n) for n in names] == [archived[i].stream_id for i in (0, 10, 20)]
    c = f.remote.client()
    body = c.get_object(f.remote.bucket, names[0]).read()
    lines = [json.loads(x) for x in body.decode().splitlines()]
    assert [(x["job_id"], x["outcome"]) for x in lines] == recorded[:10]
    assert c.stat_object(f.remote.bucket, names[0]).metadata["x-amz-meta-sha256"] == hashlib.sha256(body).hexdigest()
    exactly_once([(s.job_id, s.outcome) for s in f.remote.settles(stream)], recorded)


def test_a_store_that_goes_away_keeps_the_slice_in_the_stream_until_it_is_back(conn, queue, f, object_store):
    recorded = settle(conn, queue, 20)
    stream = floor.completions_stream(queue)
    good = object_store.remote(f"away-{queue}")
    f.remote = good
    d = floor.Driver(conn, queue, f, slice_size=10)
    d.fold()
    f.remote = Remote(f"127.0.0.1:{free_port()}", good.bucket, good.access_key, good.secret_key, good.prefix)
    with pytest.raises(FloorError, match="it stays planned; the next fold uploads it"):
        d.fold()
    # the slice is committed on the floor, but the stream keeps it: only an uploaded slice is trimmed
    assert f.count(stream) == 20 and conn.client.xlen(stream) == 10
    f.remote = good
    again = d.fold()
    assert (again.read, len(again.uploaded), again.trimmed, again.stream_len) == (0, 1, 10, 0)
    exactly_once([(s.job_id, s.outcome) for s in good.settles(stream)], recorded)
    d.stop()


def test_an_object_already_there_with_other_bytes_is_not_overwritten(conn, queue, f, object_store):
    settle(conn, queue, 5)
    stream = floor.completions_stream(queue)
    f.remote = object_store.remote(f"clash-{queue}")
    d = floor.Driver(conn, queue, f, slice_size=5)
    # the slice's object name follows from its ids: plant a stranger under it before the driver folds
    cursor = f.cursor(stream)
    slice_ = d._next_slice()
    name = f.remote.name(stream, slice_[0].stream_id, slice_[-1].stream_id)
    f.remote.client().put_object(f.remote.bucket, name, io.BytesIO(b"someone else's\n"), 15)
    d.start()
    with pytest.raises(FloorError, match="already in the store with other content"):
        d.fold()
    assert f.remote.client().get_object(f.remote.bucket, name).read() == b"someone else's\n"
    assert conn.client.xlen(stream) == 5 and f.cursor(stream) != cursor
    d.stop()


def test_a_fold_that_outlasts_its_lease_still_trims_when_nobody_took_the_stream(conn, queue, f):
    """A slow commit or upload: the lease lapses mid-fold; the driver takes it again (newer token) and trims."""
    settle(conn, queue, 10)
    d = floor.Driver(
        conn, queue, f, lease_ms=LEASE_MS, on_step=lambda step, n: lapsed(conn, queue) if step == "commit" else None
    )
    fold = d.fold()
    assert (fold.read, fold.trimmed, fold.stream_len) == (10, 10, 0)
    assert d.token == 2 and f.token(floor.completions_stream(queue)) == 2
    d.stop()


# -- every ending, archived (issue 21) ---------------------------------------------------------------------------
def _every_ending(conn, queue) -> dict[str, str]:
    """One job per outcome on a recording queue; answers outcome -> job id."""
    from echomq_teach import flows, stalled

    done = jobs.enqueue(conn, queue, "done")
    c = jobs.claim(conn, queue, 30_000)
    jobs.complete(conn, queue, done, c.attempts, "r", record=True)
    dead = jobs.enqueue(conn, queue, "dies")
    c = jobs.claim(conn, queue, 30_000)
    jobs.retry(conn, queue, dead, c.attempts, "fatal", 1_000, 1, record=True)
    # a flow child crashes twice under the counted sweep: buried (stalled), its parent failed (child_failed)
    flow = flows.add(conn, queue, "parent", ["child"])
    for _ in range(2):
        assert jobs.claim(conn, queue, 5).id == flow.child_ids[0]
        time.sleep(0.02)
        stalled.check(conn, queue, 1, record=True)
    gone = jobs.enqueue(conn, queue, "removed")
    jobs.remove(conn, queue, gone, record=True)
    return {"completed": done, "dead": dead, "stalled": flow.child_ids[0], "child_failed": flow.parent_id,
            "removed": gone}


def test_the_floor_archives_every_ending(either, queue, tmp_path):
    made = _every_ending(either, queue)
    with floor.open_floor(tmp_path / "floor.sqlite3") as fl, floor.Driver(either, queue, fl) as driver:
        assert driver.run(timeout=10).folded == 5
        assert reads.counts(fl, queue) == dict.fromkeys(jobs.OUTCOMES, 1)
        for outcome, job_id in made.items():
            (s,) = reads.by_job(fl, queue, job_id)
            assert s.outcome == outcome
        (parent,) = reads.by_job(fl, queue, made["child_failed"])
        assert (parent.error, parent.attempts, parent.result) == (f"child {made['stalled']} failed: stalled", 0, None)
        (removed,) = reads.by_job(fl, queue, made["removed"])
        assert (removed.error, removed.attempts) == ("removed while pending", 0)
        fig = reads.plot_throughput(fl, queue)  # closed by conftest's no_figure_left_open, as every test's
        assert [ln.get_label() for ln in fig.axes[0].get_lines()] == list(jobs.OUTCOMES)


def test_a_version_1_floor_is_read_as_it_is_and_moved_up_when_written(tmp_path):
    import sqlite3

    from echomq_teach.floor import embedded

    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    # the version 1 schema: the settles table admitted completed and dead only
    v1 = embedded.SCHEMA.replace(", ".join(f"'{o}'" for o in jobs.OUTCOMES), "'completed', 'dead'")
    db.executescript(v1)
    db.execute("INSERT INTO settles VALUES ('emq:{old}:stream:completions', 5, 0, 'JOB1', 'dead', 1, NULL, 'e')")
    db.execute(f"PRAGMA application_id={embedded.APPLICATION_ID}")
    db.execute("PRAGMA user_version=1")
    db.commit()
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO settles VALUES ('s', 6, 0, 'JOB2', 'stalled', 1, NULL, 'stalled')")
    db.close()
    with floor.open_floor(path, readonly=True) as fl:
        assert reads.counts(fl, "old")["dead"] == 1
        assert fl.db.execute("PRAGMA user_version").fetchone()[0] == 1  # a reader changes nothing
    with floor.open_floor(path) as fl:
        assert fl.db.execute("PRAGMA user_version").fetchone()[0] == embedded.SCHEMA_VERSION == 2
        assert [s.job_id for s in reads.by_job(fl, "old", "JOB1")] == ["JOB1"]
        with fl.transaction() as tx:
            tx.execute("INSERT INTO settles VALUES ('emq:{old}:stream:completions', 6, 0, 'JOB2', 'stalled', 1, "
                       "NULL, 'stalled')")
        assert reads.counts(fl, "old") == dict.fromkeys(jobs.OUTCOMES, 0) | {"dead": 1, "stalled": 1}
        indexes = sorted(r[0] for r in fl.db.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                                      "AND tbl_name = 'settles' AND sql IS NOT NULL"))
        assert indexes == ["settles_by_job", "settles_by_outcome"]
