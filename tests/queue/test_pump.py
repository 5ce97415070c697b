"""The Pump (EchoMQ.Pump): promotes due jobs of the queues it is given, on a beat, and nothing else."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import gone, state, wait_for, wait_until_due

from echomq_teach import Connector, jobs, snapshots
from echomq_teach.errors import BadInput
from echomq_teach.nodes.local import LocalNode
from echomq_teach.pump import Pump, main


def scheduled(conn: Connector, queue: str, n: int, delay_ms: int = 1) -> list[str]:
    """n jobs, each claimed once and retried onto the schedule set with ``delay_ms``."""
    out = []
    for i in range(n):
        job_id = jobs.enqueue(conn, queue, f"job {i}")
        got = jobs.claim(conn, queue, 30_000)
        assert got is not None and got.id == job_id
        assert jobs.retry(conn, queue, job_id, got.attempts, "fails once", delay_ms) == jobs.SCHEDULED
        out.append(job_id)
    return out


def test_a_beat_promotes_the_due_jobs_of_each_queue_and_leaves_the_rest(either: Connector, queue: str) -> None:
    a, b = queue + "-a", queue + "-b"
    due_a = scheduled(either, a, 3)
    due_b = scheduled(either, b, 1)
    later = scheduled(either, b, 1, delay_ms=60_000)
    wait_until_due(either, a, "schedule")
    wait_for(lambda: snapshots.snapshot(either, b).relative("schedule", due_b[0]) < 0, "b's first job due")
    pump = Pump(either, [a, b], limit=2)
    first = pump.tick()
    assert first[a] == due_a[:2]  # at most 2 a beat, the earliest due first
    assert first[b] == due_b
    second = pump.tick()
    assert second[a] == due_a[2:] and second[b] == []
    assert pump.promoted == {a: 3, b: 1} and pump.ticks == 2
    sa, sb = snapshots.snapshot(either, a), snapshots.snapshot(either, b)
    assert all(sa.where(j) == ["pending"] for j in due_a)
    assert sb.where(due_b[0]) == ["pending"] and sb.where(later[0]) == ["schedule"]


def test_the_pump_promotes_only(either: Connector, queue: str) -> None:
    # a lapsed lease stays in active (recovery is a reap's or a sweep's job) and pending is untouched
    lapsed = jobs.enqueue(either, queue, "held")
    jobs.enqueue(either, queue, "not yet claimed")
    held = jobs.claim(either, queue, 20)
    assert held is not None and held.id == lapsed
    wait_until_due(either, queue, "active")
    before = state(either, queue)
    assert Pump(either, [queue]).tick() == {queue: []}
    assert state(either, queue) == before


def test_on_its_thread_it_brings_a_retry_back_on_its_own(conn: Connector, queue: str) -> None:
    (job_id,) = scheduled(conn, queue, 1, delay_ms=50)
    pump = Pump(conn, [queue], interval_ms=10)
    pump.start()
    try:
        wait_for(lambda: snapshots.snapshot(conn, queue).where(job_id) == ["pending"], "the retry promoted", 10)
        # and it keeps its beat (on a loaded machine its first beat may come after the retry was due)
        wait_for(lambda: pump.ticks >= 2, "a second beat", 10)
    finally:
        pump.stop()
    assert pump.errors == [] and pump.promoted == {queue: 1} and pump.ticks >= 2
    again = jobs.claim(conn, queue, 30_000)
    assert again is not None and again.id == job_id and again.attempts == 2
    with pytest.raises(RuntimeError, match="started already"):
        pump.start()


@pytest.mark.parametrize(
    ("queues", "kw", "says"),
    [
        ([], {}, "non-empty list"),
        ("one", {}, "non-empty list"),
        (["q", "q"], {}, "named twice"),
        (["bad name"], {}, "queue"),
        (["q"], {"interval_ms": 0}, "interval_ms"),
        (["q"], {"limit": -1}, "limit"),
        (["q"], {"lost_link": "ignore"}, "lost_link"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(conn: Connector, queue: str, queues, kw, says) -> None:
    scheduled(conn, queue, 1)
    wait_until_due(conn, queue, "schedule")
    before = state(conn, queue)
    with pytest.raises(BadInput, match=says):
        Pump(conn, queues, **kw)
    assert state(conn, queue) == before


@pytest.mark.parametrize("lost_link", ["raise", "retry"])
def test_a_node_gone_ends_the_loop_or_is_counted(queue: str, lost_link: str) -> None:
    gone_node = LocalNode()
    c = gone_node.connector()
    pump = Pump(c, [queue], interval_ms=10, lost_link=lost_link)
    pump.start()
    wait_for(lambda: pump.ticks >= 1, "a first beat")
    gone_node.stop()
    if lost_link == "raise":  # the loop ends on its own, its error kept
        wait_for(lambda: pump.errors, "the loop's error")
        assert len(pump.errors) == 1 and pump.errors[0].startswith("pump: ConnectionError")
    else:  # the beats go on, each lost link counted
        wait_for(lambda: pump.lost_links >= 2, "lost links counted")
        assert pump.errors == []
    pump.stop()
    c.close()


def test_a_pump_process_promotes_then_stops_cleanly_on_sigterm(node, conn: Connector, queue: str) -> None:
    a, b = queue + "-a", queue + "-b"
    due = scheduled(conn, a, 2, delay_ms=200) + scheduled(conn, b, 1, delay_ms=200)
    # the node's URL, password and all, in the environment: ps shows a command line to every user
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "ECHOMQ_URL": node.url}
    proc = subprocess.Popen(
        [sys.executable, "-m", "echomq_teach.pump", "--interval-ms", "20", a, b],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(f"pump: promoting {a}, {b} every 20 ms")
        seen_by_ps = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode()
        assert "echomq_teach.pump" in seen_by_ps and node.password not in seen_by_ps
        wait_for(lambda: all(snapshots.snapshot(conn, q).where(j) == ["pending"]
                             for q, j in [(a, due[0]), (a, due[1]), (b, due[2])]), "three jobs promoted", 20)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert f"promoted {a} 2, {b} 1" in out and gone(proc.pid)


def test_the_command_refuses_bad_input_with_one_line(node, conn: Connector, queue: str, capsys,
                                                     monkeypatch) -> None:
    scheduled(conn, queue, 1)
    wait_until_due(conn, queue, "schedule")
    before = state(conn, queue)
    monkeypatch.delenv("ECHOMQ_URL", raising=False)
    assert main([queue]) == 2
    assert "set ECHOMQ_URL" in capsys.readouterr().err
    assert main(["--url", node.url, queue]) == 2  # the old way: refused, with where the URL goes now
    err = capsys.readouterr().err
    assert "goes in $ECHOMQ_URL, not on the command line" in err and node.password not in err
    monkeypatch.setenv("ECHOMQ_URL", "http://127.0.0.1:1")
    assert main([queue]) == 2
    assert "redis://" in capsys.readouterr().err
    monkeypatch.setenv("ECHOMQ_URL", node.url)
    assert main(["--interval-ms", "0", queue]) == 2
    assert "interval_ms" in capsys.readouterr().err
    assert main([queue, queue]) == 2
    assert "named twice" in capsys.readouterr().err
    assert state(conn, queue) == before
