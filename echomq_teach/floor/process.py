"""An archive driver as a real child process, for the notebook, the exercise checks and the tests.

``DriverProcess`` runs ``python -m echomq_teach.floor QUEUE --floor PATH …``
with the node (and the remote) in its environment, reads what it prints line
by line, and ends it by its PID: ``kill()`` is SIGKILL (no exit hook, the
lease left behind), ``stop()`` is SIGTERM then SIGKILL. Every wait is bounded.
"""

from __future__ import annotations

import os
import queue as _queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..nodes.local import launcher

LINE_WAIT_S = 60.0
STOP_WAIT_S = 10.0
_REMOTE_VARS = ("ECHOMQ_FLOOR_S3_URL", "ECHOMQ_FLOOR_S3_ACCESS_KEY", "ECHOMQ_FLOOR_S3_SECRET_KEY")


def node_url(address: dict[str, Any]) -> str:
    """A ``redis://`` (or ``unix://``) URL for a connector's address, password included: for your own processes."""
    user = quote(str(address.get("username") or ""), safe="")
    password = quote(str(address.get("password") or ""), safe="")
    auth = f"{user}:{password}@" if user or password else ""
    if address.get("unix_socket_path"):
        return f"unix://{auth}{address['unix_socket_path']}"
    return f"redis://{auth}{address.get('host', '127.0.0.1')}:{address.get('port', 6379)}/0"


class DriverProcess:
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
        # forked by the kit's launcher thread, so a driver dies with the kernel that started it
        self.proc = launcher.popen(
            self.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL
        )
        self.lines: list[str] = []
        self._eof = False
        self._q: _queue.Queue[str | None] = _queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    @property
    def pid(self) -> int:
        return self.proc.pid

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
            code = self.proc.wait(timeout=timeout)
        finally:
            self.stop()
        while not self._eof:
            try:
                line = self._q.get(timeout=STOP_WAIT_S)
            except _queue.Empty:
                break
            if line is None:
                self._eof = True
            else:
                self.lines.append(line)
        return code

    def stderr(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return "(still running)"
        if not hasattr(self, "_stderr"):
            self._stderr = self.proc.stderr.read()
        return self._stderr

    def kill(self) -> None:
        """SIGKILL to its PID: it runs no exit hook and gives no lease back."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=STOP_WAIT_S)

    def stop(self) -> None:
        """SIGTERM to its PID (SIGCONT first, should it be stopped), then SIGKILL if it will not go."""
        if self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGCONT)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
