"""What every case model shares: its keys, its record of endings, the checker's view of its state, the work.

A model is a small class with the calls of another queue's worker, written on
a real node from a public report's description: ``fetch`` (hand a job out),
``ack`` (its ending), ``fail`` (a handler's error), ``sweep`` (the recovery
step the metronome calls) and ``final`` (what the node holds, in the four sets
the checker reads). ``beat`` is one turn of a worker, recorded call by call in
the run's history exactly as the lab's own worker records this queue's calls,
so that one checker judges both.

Every key of a model carries the queue's hashtag (``case:{q}:…``): the kit's
node runs in cluster mode, alone, and a script may only touch one slot.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from ...completions import Settle, StreamId
from ..checker import FinalState

#: how long a job of a case workload works, unless its payload says otherwise
WORK_MS = 5


def run_payload(payload: str) -> bool:
    """The work a case job stands for, read from its payload: True when it succeeded.

    ``"work 40"`` sleeps 40 ms; ``"fail"`` is a handler error; ``"poison"``
    kills the process that runs it (SIGKILL, as the OOM killer would).
    """
    kind, _, arg = (payload or "").partition(" ")
    if kind == "poison":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "fail":
        return False
    time.sleep((int(arg) if arg.isdigit() else WORK_MS) / 1000)
    return True


def case_handler(job: Any, ctx: Any) -> Any:
    """The same work as a handler of this queue's lab worker (``module:function`` for a ``Run``)."""
    from ...consumer import Error

    return "done" if run_payload(job.payload) else Error("the payload asked to fail")


class Model:
    """The calls a case model answers; subclasses hold one report's mechanism."""

    #: the case's short name (the registry's key)
    name = ""
    #: how the history names the sweep: "reap" (puts jobs back) or "stalled"
    sweep_op = "reap"
    #: "worker": a kill ends the worker process; "child": it ends the process running the handler
    kill_target = "worker"
    #: seconds to wait after the workers stop before the final state is read (a heartbeat's TTL)
    settle_after_stop = 0.0

    def __init__(self, queue: str, lease_ms: int = 1000, **params: Any) -> None:
        self.queue = queue
        self.lease_ms = lease_ms
        self.params = params

    def key(self, suffix: str) -> str:
        return f"case:{{{self.queue}}}:{suffix}"

    # -- the lab's bookkeeping, which no model reads back ----------------------------------
    def delivery(self, r: Any, job: str) -> int:
        """One more hand-out of ``job``: the number the history shows as its token."""
        return int(r.hincrby(self.key("deliveries"), job, 1))

    def record(self, r: Any, job: str, outcome: str, token: int | None) -> None:
        """An ending written where the checker reads endings (a pipeline or a client)."""
        r.xadd(self.key("endings"), {"id": job, "outcome": outcome, "attempts": "" if token is None else str(token)})

    def endings(self, r: Any) -> list[Settle]:
        out = []
        for sid, f in r.xrange(self.key("endings")):
            tok = f.get("attempts", "")
            # an ending the model wrote without a token keeps none (the checker reads it as unknown)
            out.append(Settle(StreamId.parse(sid), f.get("id", ""), f.get("outcome", ""),
                              int(tok) if tok.isdigit() else None))  # type: ignore[arg-type]
        return out

    def drop(self, r: Any) -> None:
        """Delete every key of this model's queue (SCAN by its prefix)."""
        keys = list(r.scan_iter(match=self.key("*"), count=500))
        for i in range(0, len(keys), 200):
            r.delete(*keys[i:i + 200])

    # -- the calls a subclass writes ---------------------------------------------------------
    def enqueue(self, r: Any, job: str, payload: str) -> None:
        raise NotImplementedError

    def enqueue_flow(self, r: Any, parent: tuple[str, str], children: list[tuple[str, str]]) -> None:
        raise NotImplementedError(f"case {self.name!r} has no flows")

    def fetch(self, r: Any, worker: str) -> tuple[str, str, int] | None:
        raise NotImplementedError

    def ack(self, r: Any, worker: str, job: str, token: int) -> str:
        raise NotImplementedError

    def fail(self, r: Any, worker: str, job: str, token: int) -> str:
        """A handler error: the job ends in dead (the workloads retry nothing)."""
        self.record(r, job, "dead", token)
        return "dead"

    def sweep(self, r: Any) -> list[str]:
        """The recovery step the metronome calls; the ids it put back. None by default."""
        return []

    def on_start(self, w: Any) -> None:
        """What a worker process does once, when it starts."""

    def final(self, r: Any) -> FinalState:
        raise NotImplementedError

    # -- one turn of a worker -----------------------------------------------------------------
    def beat(self, w: Any) -> bool:
        """Fetch, run, settle, each call recorded; False when nothing was there to fetch."""
        got = w.rec.call("claim", lambda: self.fetch(w.r, w.name), shape=_claim_fields,
                         extra={"lease_ms": self.lease_ms})
        if got is None:
            return False
        job, payload, token = got
        ok = w.run(job, payload, token)
        self.settle(w, job, token, ok)
        return True

    def settle(self, w: Any, job: str, token: int, ok: bool) -> None:
        if ok:
            w.rec.call("complete", lambda: self.ack(w.r, w.name, job, token), job=job, token=token)
        else:
            w.rec.call("retry", lambda: self.fail(w.r, w.name, job, token), job=job, token=token)


def _claim_fields(reply: Any) -> dict[str, Any]:
    return {"job": reply[0], "token": reply[2]} if reply else {}


def state(sets: dict[str, set[str]], rows: dict[str, dict[str, str]], stream: list[Settle],
          counters: set[str] | None = None) -> FinalState:
    """A FinalState from a model's own storage, with the four set names the checker knows."""
    full = {s: set(sets.get(s, ())) for s in ("pending", "active", "schedule", "dead")}
    return FinalState(full, rows, stream, counters or set())


def split(entry: str) -> tuple[str, str]:
    """A list entry ``id|payload`` (the list-based models keep a message whole) → (id, payload)."""
    job, _, payload = entry.partition("|")
    return job, payload
