"""A worker process: claims, runs a handler, settles, and records every call (EchoMQ.Consumer in a pool).

    python -m echomq_teach.lab.worker QUEUE --name w1 --history DIR [options]

The node's address comes in ``$ECHOMQ_ADDRESS`` (JSON: a node's or a
cluster's), never on the command line, which every user of the machine can
read. The worker is shaped like a consumer of a ``Pool``: claim, handler,
settle, with no promote and no recovery leg — the run's metronome, in the
process that started the workers, calls those. Each call is recorded in
``DIR/<name>.jsonl`` (``echomq_teach.lab.history``), and each handler run is two
notes, ``run`` and ``ran``.

A lost link (the node restarted, the client was killed) abandons the beat: the
call that was in flight is recorded with no answer, and the next beat opens a
new link. SIGTERM ends the worker after its current beat.

``--batch K`` (a single node only) claims up to K jobs per call, as a Pool's
consumer with ``batch=K`` does (``jobs.claim_many``), runs their handlers one
after another, then sends every settle in one round trip; the history holds
each claim and each settle as its own call.

``--crash-at`` kills the worker with SIGKILL, on its ``--crash-on``-th claim
(counted job by job, also in a batch), at one point between its round trips:

* ``claimed`` — the claim's answer was read; nothing else happened;
* ``handler`` — halfway through the handler's work (``Context.work``);
* ``handled`` — the handler returned; the settle was not sent;
* ``settle-sent`` — the settle went out and its answer is back on the socket, unread.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from .. import consumer, jobs
from ..cluster_connector import reconnect
from ..connector import Connector
from ..shortcuts import NATIVE_READS, PIPELINE, Lane
from .handlers import Context
from .history import Recorder, ServerClock

CRASH_POINTS = ("claimed", "handler", "handled", "settle-sent")
_SETTLE_COMMANDS = ("EVALSHA", "EMQ.COMPLETE", "EMQ.FAIL")


def client_name(worker: str) -> str:
    """The name a worker's links carry in CLIENT LIST."""
    return f"emq-worker-{worker}"


def load_handler(spec: str) -> Callable[..., Any]:
    """``module:function`` → the function, or one clear error naming what is missing."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise SystemExit(f"worker: --handler must be module:function, got {spec!r}")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise SystemExit(f"worker: cannot load handler {spec!r}: {exc}") from exc
    if not callable(fn):
        raise SystemExit(f"worker: handler {spec!r} is not callable")
    return fn


class Worker:
    """The loop of one worker process (the ``Run`` in ``faults`` starts and stops these by PID)."""

    def __init__(self, conn: Connector, queue: str, rec: Recorder, handler: Callable[..., Any],
                 args: argparse.Namespace) -> None:
        self.conn, self.queue, self.rec, self.handler, self.args = conn, queue, rec, handler, args
        self.claims = 0
        self.stopping = False
        self.ctx = Context(conn, queue, rec.worker, args.work_ms, rec=rec)
        self._arm_settle = False
        if args.crash_at == "settle-sent":
            self._hook_settle()
        # a batch worker claims and settles on a lane, as a Pool's consumer does
        self.lane = Lane(conn, queue, frozenset({NATIVE_READS, PIPELINE}), lease_ms=args.lease_ms,
                         retry_delay_ms=args.retry_delay_ms, max_attempts=args.max_attempts,
                         record=args.record) if args.batch > 1 else None

    # -- crash points ----------------------------------------------------------------------------
    def _due(self, point: str) -> bool:
        return self.args.crash_at == point and self.claims == self.args.crash_on

    def crash(self, point: str, job: jobs.Claimed) -> None:
        """Die here, now, by SIGKILL: no exit hook, no settle, the lease left to lapse."""
        self.rec.note("crash", job=job.id, token=job.attempts, point=point)
        os.kill(os.getpid(), signal.SIGKILL)

    def _hook_settle(self) -> None:
        client = self.conn.client
        read = client.parse_response

        def parse_then_maybe_die(connection: Any, command_name: str, **options: Any) -> Any:
            if self._arm_settle and str(command_name).upper() in _SETTLE_COMMANDS:
                # the settle is on its way: wait (bounded) until its answer is on the socket, then die unread
                connection.can_read(timeout=5)
                self.crash("settle-sent", self._settling)
            return read(connection, command_name, **options)

        client.parse_response = parse_then_maybe_die  # type: ignore[method-assign]

    # -- one beat ---------------------------------------------------------------------------------
    def work(self, job: jobs.Claimed) -> Any:
        """One claimed job through its handler, with the crash points on the way; the handler's answer."""
        self.claims += 1
        if self._due("claimed"):
            self.crash("claimed", job)
        if self._due("handler"):
            self.ctx.midway = lambda: self.crash("handler", job)
        self.rec.note("run", job=job.id, token=job.attempts)
        try:
            result = self.handler(job, self.ctx)
        except Exception as exc:  # noqa: BLE001 - a handler's crash is an {:error, reason}
            result = consumer.Error(f"{type(exc).__name__}: {exc}")
        self.ctx.midway = None
        failed = isinstance(result, consumer.Error)
        self.rec.note("ran", job=job.id, token=job.attempts, outcome="error" if failed else "value")
        if self._due("handled"):
            self.crash("handled", job)
        return result

    def beat(self) -> bool:
        """Claim one job (or a batch), run the handler, settle. False when nothing was pending."""
        if self.lane is not None:
            return self.batch_beat(self.lane)
        a = self.args
        job = self.rec.claim(self.conn, self.queue, a.lease_ms)
        if job is None:
            return False
        result = self.work(job)
        failed = isinstance(result, consumer.Error)
        self._settling, self._arm_settle = job, self._due("settle-sent")
        try:
            if failed:
                self.rec.retry(self.conn, self.queue, job.id, job.attempts, result.reason, a.retry_delay_ms,
                               a.max_attempts, record=a.record)
            else:
                value = "" if result is None else result
                value = value if isinstance(value, (str, bytes)) else str(value)
                self.rec.complete(self.conn, self.queue, job.id, job.attempts, value, record=a.record)
        finally:
            self._arm_settle = False
        return True

    def batch_beat(self, lane: Lane) -> bool:
        """Claim up to ``--batch`` jobs in one call, run each handler in turn, send the settles in one round trip."""
        lane.parents.clear()  # nothing is in hand between beats: a lost beat's parents go with it
        claimed_at = time.monotonic()
        got = self.rec.claim_many(lane, self.args.batch)
        if not got:
            return False
        answers: list[tuple[jobs.Claimed, bool, str | bytes]] = []
        for job in got:
            if answers and time.monotonic() - claimed_at >= self.args.lease_ms / 2000:
                # the lease guard, as a Pool's consumer keeps it: half the leases gone, what is done settles now
                self.rec.settle_many(lane, answers)
                answers = []
            result = self.work(job)
            if isinstance(result, consumer.Error):
                answers.append((job, False, result.reason))
            else:
                value = "" if result is None else result
                answers.append((job, True, value if isinstance(value, (str, bytes)) else str(value)))
        self.rec.settle_many(lane, answers)
        return True

    def run(self) -> int:
        deadline = time.monotonic() + self.args.timeout
        while not self.stopping and time.monotonic() < deadline:
            try:
                worked = self.beat()
            except consumer.LINK_ERRORS:
                worked = False  # the call in flight is recorded with no answer; the next beat reconnects
            except Exception as exc:  # noqa: BLE001 - a refusal (a full node …) is recorded; keep beating
                print(f"{self.rec.worker}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                worked = False
            if not worked:
                time.sleep(self.args.idle_ms / 1000)
        return 0


def connect_when_up(address: dict[str, Any], wire: int, timeout: float = 20.0,
                    wait: tuple[int, int] | None = None) -> tuple[Connector, ServerClock]:
    """A connector and the node's clock; a worker started while its node restarts waits for it (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = reconnect(address, wire=wire, wait=wait)
            return conn, ServerClock(conn)
        except consumer.LINK_ERRORS:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def parse_wait(text: str) -> tuple[int, int]:
    """``"1,500"`` → ``(1, 500)``: WAIT's numreplicas and timeout in ms."""
    n, _, ms = text.partition(",")
    try:
        return int(n), int(ms)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--wait must be N,MS (two integers), got {text!r}") from None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m echomq_teach.lab.worker", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("queue")
    ap.add_argument("--name", required=True, help="the worker's name: its history file and its client name")
    ap.add_argument("--history", required=True, help="the run's history folder")
    ap.add_argument("--wire", type=int, default=4, choices=(4, 6))
    ap.add_argument("--lease-ms", type=int, default=1000)
    ap.add_argument("--max-attempts", type=int, default=jobs.DEFAULT_MAX_ATTEMPTS)
    ap.add_argument("--retry-delay-ms", type=int, default=100)
    ap.add_argument("--handler", default="echomq_teach.lab.handlers:work", help="module:function")
    ap.add_argument("--handler-path", default="", help="a folder to import the handler's module from")
    ap.add_argument("--work-ms", type=int, default=2)
    ap.add_argument("--no-record", dest="record", action="store_false",
                    help="do not add settles to the completions stream")
    ap.add_argument("--crash-at", choices=CRASH_POINTS)
    ap.add_argument("--crash-on", type=int, default=1, help="the claim (1st, 2nd, …) to crash on")
    ap.add_argument("--batch", type=int, default=1,
                    help="jobs per claim call (1 to 1000; more than 1 on a single node only, not with settle-sent)")
    ap.add_argument("--wait", type=parse_wait, default=None, metavar="N,MS",
                    help="on a cluster: WAIT N MS after every write (N replicas acknowledged, or MS passed)")
    ap.add_argument("--idle-ms", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=300.0, help="a bound: the worker ends after this many seconds")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    raw = os.environ.get("ECHOMQ_ADDRESS")
    if not raw:
        print("worker: $ECHOMQ_ADDRESS (the node's address, JSON) is not set", file=sys.stderr)
        return 2
    address = json.loads(raw)
    if "startup_nodes" in address:
        address["startup_nodes"] = [tuple(n) for n in address["startup_nodes"]]
    if args.handler_path:
        sys.path.insert(0, args.handler_path)
    handler = load_handler(args.handler)
    jobs.positive_int("--lease-ms", args.lease_ms)
    jobs.positive_int("--max-attempts", args.max_attempts)
    jobs.positive_int("--retry-delay-ms", args.retry_delay_ms)
    jobs.check_batch(args.batch)
    if args.batch > 1 and ("startup_nodes" in address or args.crash_at == "settle-sent"):
        print("worker: --batch > 1 needs a single node, and no --crash-at settle-sent", file=sys.stderr)
        return 2
    # named on every link it opens, so that a fault can find this worker in CLIENT LIST and drop it
    address["client_name"] = client_name(args.name)
    conn, clock = connect_when_up(address, args.wire, wait=args.wait)
    rec = Recorder(args.history, args.name, clock)
    worker = Worker(conn, args.queue, rec, handler, args)

    def stop(_sig: int, _frame: Any) -> None:
        worker.stopping = True

    signal.signal(signal.SIGTERM, stop)
    rec.note("start", pid=os.getpid())
    try:
        return worker.run()
    finally:
        # a cluster connector with wait= counts the writes that fewer replicas than asked acknowledged
        rec.note("stop", wait_short=getattr(conn, "wait_short", None))
        rec.close()
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
