"""What the floor tests share: settles recorded on a real node, a driver run as a real process, direct counts.

``settle(conn, queue, n)`` runs a recording Consumer over ``n`` jobs (every
tenth one dies), so the stream holds ``n`` entries of both outcomes.
``DriverProcess`` runs ``python -m echomq_teach.floor`` with the node (and
the remote) in its environment, reads its lines, and is always stopped by PID.
``exactly_once`` is the direct count: every recorded settle is on the floor
once, and nothing else is.
"""

from __future__ import annotations

import collections
import os
import queue as _queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import terminate

from echomq_teach import floor, jobs
from echomq_teach.consumer import Consumer, Error

LINE_WAIT_S = 60  # a bound on waiting for a driver's line, never a speed check


def settle(conn, queue: str, n: int, start: int = 0) -> list[tuple[str, str]]:
    """Enqueue and settle ``n`` jobs with ``record=True``; answers [(job id, outcome)] in stream order."""
    for i in range(start, start + n):
        jobs.enqueue(conn, queue, f"job {i}")
    worker = Consumer(
        conn,
        queue,
        lambda j: Error("tenth") if j.payload.endswith("9") else f"done {j.payload}",
        record=True,
        max_attempts=1,
    )
    report = worker.run(max_jobs=n, timeout=60)
    assert report.settled == n, report
    return stream_settles(conn, queue)[-n:]


def stream_settles(conn, queue: str) -> list[tuple[str, str]]:
    """(job id, outcome) of every settle the stream holds, in stream order (a foreign entry is left out)."""
    entries = conn.client.xrange(floor.completions_stream(queue))
    return [(fields["id"], fields["outcome"]) for _, fields in entries if "id" in fields]


def stream_ids(conn, queue: str) -> list[str]:
    return [eid for eid, _ in conn.client.xrange(floor.completions_stream(queue))]


def floor_settles(path: Path, queue: str) -> list[tuple[str, str]]:
    with floor.open_floor(path, readonly=True) as f:
        return [(s.job_id, s.outcome) for s in f.settles(floor.completions_stream(queue))]


def exactly_once(found: list[tuple[str, str]], want: list[tuple[str, str]]) -> None:
    """The direct count: each wanted settle appears once in ``found``, and ``found`` holds nothing else."""
    counts = collections.Counter(found)
    twice = {k: v for k, v in counts.items() if v > 1}
    assert not twice, f"archived more than once: {twice}"
    missing = set(want) - set(counts)
    assert not missing, f"lost: {sorted(missing)[:5]} ({len(missing)} in all)"
    extra = set(counts) - set(want)
    assert not extra, f"unexpected: {sorted(extra)[:5]}"
    assert len(found) == len(want)


class DriverProcess:
    """``python -m echomq_teach.floor QUEUE --floor PATH …`` as a child process, its stdout read line by line."""

    def __init__(self, node, queue: str, path: Path, *args: str, store=None, prefix: str = "floor") -> None:
        env = dict(os.environ, ECHOMQ_URL=node.url, PYTHONUNBUFFERED="1")
        for k in ("ECHOMQ_FLOOR_S3_URL", "ECHOMQ_FLOOR_S3_ACCESS_KEY", "ECHOMQ_FLOOR_S3_SECRET_KEY"):
            env.pop(k, None)
        if store is not None:
            env.update(store.env(prefix))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "echomq_teach.floor", queue, "--floor", str(path), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        self._q: _queue.Queue[str | None] = _queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def wait_for(self, text: str, timeout: float = LINE_WAIT_S) -> str:
        """The first line containing ``text``; fails with what the driver said if it never comes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._q.get(timeout=0.1)
            except _queue.Empty:
                continue
            if line is None:
                break
            self.lines.append(line)
            if text in line:
                return line
        raise AssertionError(f"the driver never said {text!r}; it said {self.lines}; stderr: {self.stderr()}")

    def stderr(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return "(still running)"
        return self.proc.stderr.read()

    def finish(self, timeout: float = LINE_WAIT_S) -> int:
        """Wait for the driver to exit on its own; answers its exit code."""
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            terminate(self.proc)

    def kill(self) -> None:
        """SIGKILL: no exit hook, no lease given back, nothing flushed."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a stopped process cannot act on SIGTERM
        terminate(self.proc)
