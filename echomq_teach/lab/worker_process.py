"""A worker process of a fault run: ``python -m echomq_teach.lab.worker`` as a ``Child`` of the kit.

``WorkerProcess`` is the kit's one child process (``nodes.process.Child``) with
a worker's name and slot: started from the launcher thread (it dies with the
kernel that started it), its ``WorkerOptions`` handed over as JSON, the node's
address in its environment; ``wait_ready`` waits until it recorded its start,
and ``kill`` / ``freeze`` / ``thaw`` / ``stop`` reach it by its PID.
``handler_source`` and ``write_handler`` carry a handler defined in a notebook
cell to the workers as a module in the run's folder.
"""

from __future__ import annotations

import inspect as pyinspect
import json
import os
import signal
import sys
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..nodes.process import Child
from .worker import WorkerOptions

READY_WAIT_S = 30.0
STOP_WAIT_S = 10.0


def handler_source(fn: Callable[..., Any]) -> tuple[str, str]:
    """A handler function's name and its source, for worker processes to import.

    Worker processes cannot be handed a function object, only a name to
    import: a handler defined in a notebook cell travels as its source.
    """
    name = getattr(fn, "__name__", "")
    if not name.isidentifier():
        raise BadInput("a handler passed as a function must be a def with a name (not a lambda)")
    try:
        return name, textwrap.dedent(pyinspect.getsource(fn))
    except (OSError, TypeError) as exc:
        raise BadInput(f"the source of handler {name!r} cannot be read, so no worker can import it: {exc}") from exc


def write_handler(name: str, source: str, folder: Path) -> str:
    """The handler's source as a module in ``folder``; answers its ``module:function``."""
    module = f"run_handler_{name}"
    header = ("# written by echomq_teach.lab.worker_process for this run's workers\n"
              "from echomq_teach.consumer import Error\n\n")
    (folder / f"{module}.py").write_text(header + source)
    return f"{module}:{name}"


class WorkerProcess(Child):
    """One worker process of a run, known by its PID; ``options`` are what it was told."""

    def __init__(self, options: WorkerOptions, slot: int, address: dict[str, Any]) -> None:
        self.name, self.slot, self.options = options.name, slot, options
        self.command = [sys.executable, "-m", "echomq_teach.lab.worker", options.to_json()]
        env = dict(os.environ, ECHOMQ_ADDRESS=json.dumps(address), PYTHONUNBUFFERED="1")
        folder = Path(options.history)
        self._history = folder / f"{options.name}.jsonl"
        super().__init__(self.command, log=folder / f"{options.name}.log", env=env, what=f"worker {options.name}")

    def _started(self) -> bool:
        try:
            return '"op":"start"' in self._history.read_text()
        except OSError:
            return False

    def wait_ready(self, timeout: float = READY_WAIT_S) -> None:  # type: ignore[override]
        """Until the worker has connected and recorded its start; its log's tail in the error if it never does."""
        super().wait_ready(self._started, timeout)

    def log_tail(self, lines: int = 10) -> str:
        return self.tail(lines)

    def stop(self, grace: float = STOP_WAIT_S) -> int:
        """SIGCONT (should it be frozen) and SIGTERM: it ends after its beat; SIGKILL if it will not go."""
        return super().stop(grace)


def stop_all(procs: Iterable[Child]) -> None:
    """Stop each by its PID; one that fails to stop is SIGKILLed, and the next is still stopped."""
    for p in procs:
        try:
            p.stop()
        except Exception:  # noqa: BLE001 - the next one must still be stopped
            p.signal(signal.SIGKILL)
