"""An archive driver as a real child process, for the notebook, the exercise checks and the tests.

``DriverProcess`` runs ``python -m echomq_teach.floor QUEUE --floor PATH …``
with the node (and the remote) in its environment, reads what it prints line
by line, and ends it by its PID: it is a ``nodes.process.Child``, so ``kill()``
is SIGKILL (no exit hook, the lease left behind) and ``stop()`` is SIGCONT,
SIGTERM, then SIGKILL. Its stderr goes to a log file in a private folder,
deleted when the handle is dropped. Every wait is bounded.
"""

from __future__ import annotations

import os
import queue as _queue
import shutil
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..nodes.process import Child

LINE_WAIT_S = 60.0
_REMOTE_VARS = ("ECHOMQ_FLOOR_S3_URL", "ECHOMQ_FLOOR_S3_ACCESS_KEY", "ECHOMQ_FLOOR_S3_SECRET_KEY")


def node_url(address: dict[str, Any]) -> str:
    """A ``redis://`` (or ``unix://``) URL for a connector's address, password included: for your own processes."""
    user = quote(str(address.get("username") or ""), safe="")
    password = quote(str(address.get("password") or ""), safe="")
    auth = f"{user}:{password}@" if user or password else ""
    if address.get("unix_socket_path"):
        return f"unix://{auth}{address['unix_socket_path']}"
    return f"redis://{auth}{address.get('host', '127.0.0.1')}:{address.get('port', 6379)}/0"


class DriverProcess(Child):
    """One ``python -m echomq_teach.floor`` process; ``args`` are its options (``--slice 10 --halt-at commit:2``)."""

    def __init__(
        self,
        address: dict[str, Any],
        queue: str,
        floor_path: str | os.PathLike[str],
        *args: str,
        remote_env: dict[str, str] | None = None,
    ) -> None:
        env = {k: v for k, v in os.environ.items() if k not in _REMOTE_VARS}
        env.update(ECHOMQ_URL=node_url(address), PYTHONUNBUFFERED="1", **(remote_env or {}))
        self.command = [sys.executable, "-m", "echomq_teach.floor", queue, "--floor", str(Path(floor_path)), *args]
        folder = Path(tempfile.mkdtemp(prefix="echomq-driver-"))
        self._finalizer = weakref.finalize(self, shutil.rmtree, folder, True)
        try:
            super().__init__(self.command, log=folder / "stderr.log", env=env, stdout_pipe=True, text=True,
                             what="the floor driver")
        except BaseException:
            self._finalizer()
            raise
        self.lines: list[str] = []
        self._eof = False
        self._q: _queue.Queue[str | None] = _queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def wait_for(self, text: str, timeout: float = LINE_WAIT_S) -> str:
        """The first new line containing ``text``; an error with what the driver said if it never comes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._q.get(timeout=0.05)
            except _queue.Empty:
                continue
            if line is None:
                self._eof = True
                break
            self.lines.append(line)
            if text in line:
                return line
        raise RuntimeError(f"the driver never said {text!r}; it said {self.lines}; stderr: {self.stderr()}")

    def finish(self, timeout: float = LINE_WAIT_S) -> int:
        """Wait (bounded) for the driver to end on its own; answers its exit code. Its lines are kept."""
        try:
            code = self.wait(timeout=timeout)
        finally:
            self.stop()
        while not self._eof:
            try:
                line = self._q.get(timeout=10.0)
            except _queue.Empty:
                break
            if line is None:
                self._eof = True
            else:
                self.lines.append(line)
        return code

    def stderr(self) -> str:
        """What the driver wrote to stderr, once it has ended."""
        if self.alive:
            return "(still running)"
        assert self.log is not None
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""
