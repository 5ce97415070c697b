"""The fold under SIGKILL: a driver process killed at each step loses nothing and archives nothing twice.

Each case records 45 settles (every tenth one dead), runs the driver as a real
process with slices of 10, halts it at one step of its second fold and kills
it with SIGKILL. At the crash, the floor and the stream must together hold
every settle, the floor each at most once, and the stream only entries that
are not yet durable on the floor or lie after its cursor. Five more settles
arrive while no driver runs; then a new driver process waits out the dead
one's lease and folds the rest. The direct count: every settle is on the floor
exactly once (and with the remote, in the bucket exactly once), and the stream
holds nothing already archived — here, nothing at all.

Both floors: the embedded SQLite file, and the same with a real SeaweedFS.
"""

from __future__ import annotations

import re
import signal

import pytest
from floor_support import driver_process, exactly_once, floor_settles, settle, stream_ids, stream_settles

from echomq_teach import floor
from echomq_teach.completions import StreamId

SLICE = 10
LEASE_MS = 1_500
EMBEDDED_STEPS = ["read", "write", "commit", "trim"]
REMOTE_STEPS = ["read", "write", "commit", "upload", "trim"]
# (rows on the floor, entries left in the stream) when the driver dies at that step of fold 2 (of 45)
AT_CRASH = {
    "read": (10, 35),  # fold 1 archived and trimmed; fold 2 read, nothing written
    "write": (10, 35),  # fold 2's transaction half written, never committed: rolled back
    "commit": (20, 35),  # fold 2 committed, not trimmed
    "upload": (20, 35),  # fold 2's object stored, not marked, not trimmed
    "trim": (20, 25),  # fold 2 trimmed
}
CASES = [("embedded", s) for s in EMBEDDED_STEPS] + [("remote", s) for s in REMOTE_STEPS]


@pytest.mark.parametrize(("kind", "step"), CASES, ids=[f"{k}-{s}" for k, s in CASES])
def test_a_driver_killed_at_a_step_loses_nothing_and_folds_nothing_twice(
    node, conn, queue, tmp_path, object_store, kind, step
):
    store = object_store if kind == "remote" else None
    prefix = f"crash-{queue}"
    path = tmp_path / "floor.sqlite3"
    recorded = settle(conn, queue, 45)
    stream = floor.completions_stream(queue)

    first = driver_process(
        node,
        queue,
        path,
        "--slice",
        str(SLICE),
        "--lease-ms",
        str(LEASE_MS),
        "--halt-at",
        f"{step}:2",
        store=store,
        prefix=prefix,
    )
    try:
        first.wait_for(f"halted at {step} of fold 2")
        first.kill()
    finally:
        first.stop()

    # at the crash: nothing lost, nothing twice, the stream holds only what the floor does not yet rely on
    on_floor = floor_settles(path, queue)
    in_stream = stream_settles(conn, queue)
    assert (len(on_floor), len(in_stream)) == AT_CRASH[step]
    assert set(on_floor) | set(in_stream) == set(recorded)
    assert len(set(on_floor)) == len(on_floor)
    with floor.open_floor(path, readonly=True) as f:
        cursor = f.cursor(stream)
        ids = [StreamId.parse(i) for i in stream_ids(conn, queue)]
        # a trim takes a prefix, and only one the floor holds
        gone = len(recorded) - len(in_stream)
        assert in_stream == recorded[gone:] and set(recorded[:gone]) <= set(on_floor)
        # what the stream still holds below the cursor is exactly what is on the floor but not yet trimmed
        below = [i for i in ids if i <= cursor]
        assert len(below) == len(on_floor) - gone
        if kind == "remote":
            planned = f.db.execute("SELECT COUNT(*), SUM(uploaded) FROM objects").fetchone()
            in_bucket = object_store.remote(prefix).objects(stream)
            assert planned[0] == len(on_floor) // SLICE
            # killed after the put, before the mark: the bucket is one object ahead of the index
            assert len(in_bucket) == planned[1] + (1 if step == "upload" else 0)

    recorded += settle(conn, queue, 5, start=45)  # settles go on while no driver runs

    second = driver_process(
        node,
        queue,
        path,
        "--slice",
        str(SLICE),
        "--lease-ms",
        str(LEASE_MS),
        "--wait-s",
        "10",
        store=store,
        prefix=prefix,
    )
    try:
        assert second.finish() == 0, second.stderr()
    finally:
        second.stop()

    exactly_once(floor_settles(path, queue), recorded)
    assert stream_settles(conn, queue) == [], "everything archived, so the stream holds nothing"
    # an upload that landed before the kill is found in the store and only marked, never written twice
    found = sum(int(re.search(r"\((\d+) found already stored\)", ln).group(1)) for ln in second.lines if "fold:" in ln)
    assert found == (1 if step == "upload" else 0), second.lines
    if kind == "remote":
        remote = object_store.remote(prefix)
        exactly_once([(s.job_id, s.outcome) for s in remote.settles(stream)], recorded)
        with floor.open_floor(path, readonly=True) as f:
            assert f.db.execute("SELECT COUNT(*) FROM objects WHERE uploaded = 0").fetchone()[0] == 0
            assert [r[0] for r in f.db.execute("SELECT name FROM objects ORDER BY name")] == remote.objects(stream)


def test_a_second_driver_is_refused_while_the_first_holds_the_stream(node, conn, queue, tmp_path):
    settle(conn, queue, 20)
    path = tmp_path / "floor.sqlite3"
    first = driver_process(node, queue, path, "--slice", "5", "--halt-at", "commit:2")
    try:
        first.wait_for("halted at commit of fold 2")
        before = floor_settles(path, queue), stream_ids(conn, queue)
        # another process, on another floor file even: one driver per stream, whatever the floor
        for other in (path, tmp_path / "other.sqlite3"):
            second = driver_process(node, queue, other, "--slice", "5")
            try:
                assert second.finish() == 1
                err = second.stderr()
            finally:
                second.stop()
            assert "another archive driver" in err and "refused" in err, err
        assert (floor_settles(path, queue), stream_ids(conn, queue)) == before
        assert not (tmp_path / "other.sqlite3").exists() or floor_settles(tmp_path / "other.sqlite3", queue) == []
    finally:
        first.stop()


def test_a_driver_paused_past_its_lease_wakes_fenced_and_writes_nothing(node, conn, queue, tmp_path):
    """SIGSTOP after reading a slice; another driver takes the stream over; SIGCONT: the stale commit is refused."""
    recorded = settle(conn, queue, 30)
    path = tmp_path / "floor.sqlite3"
    sleeper = driver_process(node, queue, path, "--slice", "10", "--lease-ms", "500", "--stop-at", "read:2")
    try:
        sleeper.wait_for("stopped at read of fold 2")
        # the sleeper's lease runs out while it is stopped; the next driver waits for that, then folds it all
        other = driver_process(node, queue, path, "--slice", "10", "--lease-ms", "500", "--wait-s", "10")
        try:
            assert other.finish() == 0, other.stderr()
        finally:
            other.stop()
        archived = floor_settles(path, queue)
        exactly_once(archived, recorded)
        sleeper.signal(signal.SIGCONT)
        sleeper.wait_for("woke at read of fold 2")
        assert sleeper.finish() == 1
        err = sleeper.stderr()
    finally:
        sleeper.stop()
    assert "older" in err and "refused" in err, err
    assert floor_settles(path, queue) == archived  # the stale slice added nothing
    assert stream_settles(conn, queue) == []
