"""A case model's worker process: the model's beat in a loop, every call recorded.

    python -m echomq_teach.lab.models.worker CASE QUEUE --name w0 --history DIR [options]

``lab.models.trial`` starts it as a ``nodes.process.Child`` (tied: it dies with
the process that started it) and the nemesis reaches it by its PID. The node's
address comes in ``$ECHOMQ_ADDRESS`` (JSON), as for the lab's own worker. A
lost link abandons the beat (the call in flight stays without an answer) and
the next beat goes on; SIGTERM ends the worker after its beat.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from types import SimpleNamespace
from typing import Any

from ...connector import LINK_ERRORS, make_client
from ..history import Recorder, ServerClock
from .base import Model, run_payload


class ModelWorker:
    """What a model's ``beat`` is handed: the client, the recorder, the name, and the way to run a job."""

    def __init__(self, model: Model, r: Any, rec: Recorder, name: str, folder: str) -> None:
        self.model, self.r, self.rec, self.name, self.folder = model, r, rec, name, folder
        self.stopping = False

    def run(self, job: str, payload: str, token: int) -> bool:
        """The handler, in this process: its start and end are notes in the history."""
        self.rec.note("run", job=job, token=token)
        ok = run_payload(payload)
        self.rec.note("ran", job=job, token=token, outcome="value" if ok else "error")
        return ok

    def child_file(self) -> str:
        """Where a worker that runs handlers in a child process writes the child's PID (for the nemesis)."""
        return os.path.join(self.folder, f"{self.name}.child")


def main(argv: list[str] | None = None) -> int:
    from . import model_for

    ap = argparse.ArgumentParser(prog="python -m echomq_teach.lab.models.worker")
    ap.add_argument("case")
    ap.add_argument("queue")
    ap.add_argument("--name", required=True)
    ap.add_argument("--history", required=True)
    ap.add_argument("--lease-ms", type=int, default=1000)
    ap.add_argument("--idle-ms", type=int, default=5)
    ap.add_argument("--params", default="{}", help="the model's parameters, JSON")
    ap.add_argument("--timeout", type=float, default=120.0)
    a = ap.parse_args(argv)
    raw = os.environ.get("ECHOMQ_ADDRESS")
    if not raw:
        print("model worker: $ECHOMQ_ADDRESS is not set", file=sys.stderr)
        return 2
    address = dict(json.loads(raw), client_name=f"emq-worker-{a.name}")
    r = make_client(address)
    model = model_for(a.case, a.queue, a.lease_ms, **json.loads(a.params))
    rec = Recorder(a.history, a.name, ServerClock(SimpleNamespace(client=r)))
    w = ModelWorker(model, r, rec, a.name, a.history)

    def stop(_sig: int, _frame: Any) -> None:
        w.stopping = True

    signal.signal(signal.SIGTERM, stop)
    rec.note("start", pid=os.getpid())
    deadline = time.monotonic() + a.timeout
    try:
        model.on_start(w)
        while not w.stopping and time.monotonic() < deadline:
            try:
                worked = model.beat(w)
            except LINK_ERRORS:
                worked = False
            except Exception as exc:  # noqa: BLE001 - a refusal is recorded; keep beating
                print(f"{a.name}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                worked = False
            if not worked:
                time.sleep(a.idle_ms / 1000)
    finally:
        rec.note("stop")
        rec.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
