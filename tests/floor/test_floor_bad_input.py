"""Bad input to the floor: one clear error naming the problem, and nothing written anywhere.

"Nothing written" is checked by comparing before and after: the floor's tables
(or the folder, when there must be no floor file at all), every key of the
queue on the node (the stream, the lease, the fence counter) by DUMP, and with
a remote the bucket's object list.
"""

from __future__ import annotations

import sqlite3

import pytest
from floor_support import driver_process, settle

from echomq_teach import BadInput, floor
from echomq_teach.floor import BadStream, FloorError
from echomq_teach.keyspace import queue_key
from echomq_teach.nodes.host import free_port


def node_state(conn, queue: str) -> dict[str, bytes | None]:
    """Every key of the queue, dumped: a lease or a fence counter written by a refused driver shows here."""
    raw = conn.client
    keys = sorted(raw.scan_iter(match=queue_key(queue, "*").replace("{", "\\{").replace("}", "\\}"), count=1000))
    return {k: raw.execute_command("DUMP", k, NEVER_DECODE=True) for k in keys}


def floor_state(path) -> object:
    if not path.exists():
        return ("no file", sorted(p.name for p in path.parent.iterdir()))
    with floor.open_floor(path, readonly=True) as f:
        return f.dump()


@pytest.fixture
def floor_path(tmp_path):
    path = tmp_path / "floor.sqlite3"
    floor.open_floor(path).close()  # an empty floor, made before the refusal is tried
    return path


def refused(conn, queue, path, call, exc, match):
    before = node_state(conn, queue), floor_state(path)
    with pytest.raises(exc, match=match):
        call()
    assert (node_state(conn, queue), floor_state(path)) == before


def _start(conn, queue, path, **kw):
    f = floor.open_floor(path)
    try:
        return floor.Driver(conn, queue, f, **kw).start()
    finally:
        f.close()


# -- the stream ------------------------------------------------------------------------------------------
def test_a_missing_stream_is_refused(conn, queue, floor_path):
    refused(
        conn,
        queue,
        floor_path,
        lambda: _start(conn, queue, floor_path),
        BadStream,
        r"no stream at emq:\{.*\}:stream:completions: nothing was ever recorded on it",
    )


def test_a_key_of_another_type_is_refused(conn, queue, floor_path):
    conn.client.hset(floor.completions_stream(queue), "not", "a stream")
    refused(conn, queue, floor_path, lambda: _start(conn, queue, floor_path), BadStream, "is a hash, not a stream")


FOREIGN = [
    ({"foo": "bar"}, "outcome None, not one of completed, dead, stalled, child_failed, removed"),
    ({"id": "JOB1", "outcome": "finished", "attempts": "1", "result": "x"}, "outcome 'finished'"),
    ({"id": "JOB1", "outcome": "completed", "attempts": "1"}, r"has fields \['attempts', 'id', 'outcome'\]"),
    ({"id": "JOB1", "outcome": "dead", "attempts": "1", "error": "e", "extra": "?"}, "a dead settle has exactly"),
    ({"id": "JOB1", "outcome": "completed", "attempts": "0", "result": ""}, "attempts '0'"),
    ({"id": "JOB1", "outcome": "stalled", "attempts": "2", "result": "x"}, "a stalled settle has exactly"),
    ({"id": "JOB1", "outcome": "removed", "attempts": "-1", "error": "e"}, "attempts '-1': a count of claims"),
    ({"id": "JOB1", "outcome": "completed", "attempts": "one", "result": ""}, "attempts 'one'"),
    ({"id": "a:b", "outcome": "completed", "attempts": "1", "result": ""}, "no braces, colons, spaces or control"),
]


@pytest.mark.parametrize(("fields", "match"), FOREIGN, ids=[m[:24] for _, m in FOREIGN])
def test_a_stream_of_another_shape_is_refused(conn, queue, floor_path, fields, match):
    conn.client.xadd(floor.completions_stream(queue), fields)
    refused(conn, queue, floor_path, lambda: _start(conn, queue, floor_path), BadStream, match)


def test_a_foreign_entry_later_in_the_stream_refuses_its_whole_slice(conn, queue, floor_path):
    settle(conn, queue, 10)
    conn.client.xadd(floor.completions_stream(queue), {"someone": "else's"})
    settle(conn, queue, 5, start=10)
    with floor.open_floor(floor_path) as f:
        driver = floor.Driver(conn, queue, f, slice_size=10)
        assert driver.fold().read == 10  # the first slice is a completions slice: archived and trimmed
        refused(conn, queue, floor_path, driver.fold, BadStream, r"entry \d+-\d+ of emq:\{.*\}:stream:completions")
        assert f.count() == 10 and conn.client.xlen(floor.completions_stream(queue)) == 6
        driver.stop()


def test_the_driver_process_says_it_once_and_exits_1(node, conn, queue, floor_path):
    before = node_state(conn, queue), floor_state(floor_path)
    p = driver_process(node, queue, floor_path)
    try:
        assert p.finish() == 1
        err = p.stderr()
    finally:
        p.stop()
    assert err.count("\n") == 1 and err.startswith("floor: no stream at"), err
    assert (node_state(conn, queue), floor_state(floor_path)) == before


# -- arguments ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kw", "match"),
    [({"slice_size": 0}, "slice_size"), ({"slice_size": 2.5}, "slice_size"), ({"lease_ms": -1}, "lease_ms")],
)
def test_bad_driver_arguments_are_refused_before_any_call(conn, queue, floor_path, kw, match):
    settle(conn, queue, 3)
    conn.clear_trace()
    with floor.open_floor(floor_path) as f:
        refused(conn, queue, floor_path, lambda: floor.Driver(conn, queue, f, **kw), BadInput, match)
    assert list(conn.trace) == []


def test_a_read_only_floor_cannot_drive(conn, queue, floor_path):
    settle(conn, queue, 3)
    with floor.open_floor(floor_path, readonly=True) as f:
        refused(conn, queue, floor_path, lambda: floor.Driver(conn, queue, f), BadInput, "read-only")


# -- the floor path ------------------------------------------------------------------------------------------
def _unwritable(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("I am a file")
    a_dir = tmp_path / "a-dir"
    a_dir.mkdir()
    return [
        (tmp_path / "missing" / "floor.sqlite3", "does not exist"),
        (a_file / "floor.sqlite3", "is not a folder"),
        (a_dir, "it is a directory"),
    ]


def test_an_unwritable_floor_path_is_refused_and_nothing_is_made(tmp_path):
    for path, match in _unwritable(tmp_path):
        before = sorted(str(p) for p in tmp_path.rglob("*")), (tmp_path / "a-file").read_bytes()
        with pytest.raises(FloorError, match=f"cannot write the floor at {path}: .*{match}"):
            floor.open_floor(path)
        assert (sorted(str(p) for p in tmp_path.rglob("*")), (tmp_path / "a-file").read_bytes()) == before


def test_a_file_that_is_not_a_floor_is_refused_untouched(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_bytes(b"these are my notes, not a database\n" * 200)
    other = tmp_path / "app.sqlite3"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t (x)")
    db.execute("INSERT INTO t VALUES (1)")
    db.commit()
    db.close()
    for path, match in ((text, "is not a floor file"), (other, "is a SQLite file but not a floor")):
        before = path.read_bytes(), sorted(p.name for p in tmp_path.iterdir())
        with pytest.raises(FloorError, match=match):
            floor.open_floor(path)
        assert (path.read_bytes(), sorted(p.name for p in tmp_path.iterdir())) == before


# -- the remote ----------------------------------------------------------------------------------------------------
def test_an_unreachable_remote_is_refused_before_the_floor_is_made(tmp_path):
    closed = floor.Remote(f"127.0.0.1:{free_port()}", "floor", "key", "secret")
    path = tmp_path / "floor.sqlite3"
    with pytest.raises(FloorError, match=r"the object store at http://127\.0\.0\.1:\d+/floor/floor failed to answer"):
        floor.open_floor(path, remote=closed)
    assert list(tmp_path.iterdir()) == []


def test_a_remote_with_wrong_credentials_or_no_bucket_is_refused(tmp_path, object_store):
    good = object_store.remote(f"bad-{tmp_path.name}")
    before = good.client().list_buckets(), list(good.client().list_objects(good.bucket, recursive=True))
    cases = [
        (floor.Remote(good.endpoint, good.bucket, good.access_key, "not the secret"), "SignatureDoesNotMatch"),
        (floor.Remote(good.endpoint, good.bucket, "nobody", "nothing"), "failed to answer"),
        (
            floor.Remote(good.endpoint, "no-such-bucket", good.access_key, good.secret_key),
            "has no bucket 'no-such-bucket'",
        ),
    ]
    for remote, match in cases:
        with pytest.raises(FloorError, match=match):
            floor.open_floor(tmp_path / "floor.sqlite3", remote=remote)
        assert list(tmp_path.iterdir()) == []
    assert (good.client().list_buckets(), list(good.client().list_objects(good.bucket, recursive=True))) == before


def test_a_remote_url_of_another_shape_is_refused():
    for url in ("127.0.0.1:8333/floor", "ftp://127.0.0.1/floor", "http://127.0.0.1:8333/"):
        with pytest.raises(FloorError, match="must look like http://host:port/bucket"):
            floor.Remote.from_url(url, "k", "s")
