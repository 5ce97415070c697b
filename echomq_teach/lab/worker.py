"""A worker process: claims, runs a handler, settles, and records every call (EchoMQ.Consumer in a pool).

    python -m echomq_teach.lab.worker '{"queue": "q", "name": "w1", "history": "DIR", ...}'

Its one argument is a ``WorkerOptions`` as JSON: the options are written once,
here, and the ``Run`` that starts the worker fills in the same dataclass. The
node's address comes in ``$ECHOMQ_ADDRESS`` (JSON: a node's or a cluster's),
never on the command line, which every user of the machine can read.

The worker is shaped like a consumer of a ``Pool``: claim, handler, settle,
with no promote and no recovery leg — the run's metronome, in the process
that started the workers, calls those. Each call is recorded in
``DIR/<name>.jsonl`` (``echomq_teach.lab.history``), and each handler run is two
notes, ``run`` and ``ran``.

A lost link (the node restarted, the client was killed) abandons the beat: the
call that was in flight is recorded with no answer, and the next beat opens a
new link. SIGTERM ends the worker after its current beat.

``batch`` K (a single node only) claims up to K jobs per call, as a Pool's
consumer with ``batch=K`` does (``jobs.claim_many``), runs their handlers one
after another, then sends every settle in one round trip; the history holds
each claim and each settle as its own call.

``crash_at`` kills the worker with SIGKILL, on its ``crash_on``-th claim
(counted job by job, also in a batch), at one point between its round trips:

* ``claimed`` — the claim's answer was read; nothing else happened;
* ``handler`` — halfway through the handler's work (``Context.work``);
* ``handled`` — the handler returned; the settle was not sent;
* ``settle-sent`` — the settle went out and its answer is back on the socket, unread.

``scripts`` names another Lua file in a transition's place (a learner's own
``claim``, say: ``transitions.ScriptSet``); the worker's connector runs it for
every call of that transition, with the kit's keys and arguments, on either
wire. ``beat`` names a beat of your own (``lab.own_beat``) that the worker
calls in the place of its own: it promotes, recovers, claims within its
``budget``, and settles, each call recorded as the worker's own are.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import connector, consumer, jobs
from ..cluster_connector import reconnect
from ..connector import Connector
from ..errors import BadInput
from ..shortcuts import NATIVE_READS, PIPELINE, Lane
from ..transitions import KIT, ScriptSet
from .handlers import Context
from .history import Recorder, ServerClock
from .own_beat import Calls, OwnBeat, handle_with, share_of

CRASH_POINTS = ("claimed", "handler", "handled", "settle-sent")
_SETTLE_COMMANDS = ("EVALSHA", "EMQ.COMPLETE", "EMQ.FAIL")


def client_name(worker: str) -> str:
    """The name a worker's links carry in CLIENT LIST."""
    return f"emq-worker-{worker}"


@dataclass(frozen=True)
class WorkerOptions:
    """Everything a worker process is told (bar the node's address), written once for both sides.

    The ``Run`` fills one in per worker and hands it over as JSON
    (``to_json``); the worker reads it back (``from_json``), checked.
    """

    queue: str
    name: str  # its history file and its client name
    history: str  # the run's history folder
    wire: int = 4
    lease_ms: int = 1000
    max_attempts: int = jobs.DEFAULT_MAX_ATTEMPTS
    retry_delay_ms: int = 100
    handler: str = "echomq_teach.lab.handlers:work"  # module:function
    handler_path: str | None = None  # a folder to import the handler's module from
    work_ms: int = 2
    idle_ms: int = 5  # the sleep after a claim that found nothing pending
    record: bool = True  # settles go to the completions stream
    timeout: float = 300.0  # a bound: the worker ends after this many seconds
    wait: tuple[int, int] | None = None  # on a cluster: WAIT numreplicas timeout_ms after every write
    batch: int = 1  # jobs per claim call (more than 1 on a single node only)
    crash_at: str | None = None  # one of CRASH_POINTS
    crash_on: int = 1  # the claim (1st, 2nd, …) to crash on
    #: on a cluster with ``wait``: ``module:function`` that decides what a write WAIT confirmed short answers
    #: (``cluster_connector.ShortWait``), imported from the run's folder (a judged build's design)
    on_short_wait: str | None = None
    #: another script in a transition's place, as a Lua file by transition (``transitions.ScriptSet.files``):
    #: every call of that transition this worker makes runs it, on either wire
    scripts: dict[str, str] | None = None
    #: ``module:function``, imported from the run's folder: a beat of your own in the place of this worker's
    #: (``lab.own_beat``: ``beat(queue, handle, budget)``, promote and recovery its own)
    beat: str | None = None
    #: the jobs a beat of your own may claim in this worker's life (``consumer.Budget``); None: no bound
    budget: int | None = None

    def check(self) -> WorkerOptions:
        """The options as they are, or a ``BadInput`` naming the first one that is wrong."""
        if self.wire not in (4, 6):
            raise BadInput(f"wire must be 4 or 6, got {self.wire!r}")
        for name in ("lease_ms", "max_attempts", "retry_delay_ms", "idle_ms", "crash_on"):
            jobs.positive_int(name, getattr(self, name))
        jobs.non_negative_int("work_ms", self.work_ms)
        jobs.check_batch(self.batch)
        if not isinstance(self.handler, str) or ":" not in self.handler:
            raise BadInput(f"handler must be 'module:function', got {self.handler!r}")
        if not isinstance(self.timeout, (int, float)) or self.timeout <= 0:
            raise BadInput("timeout must be a positive number of seconds: every worker is bounded")
        if self.crash_at is not None and self.crash_at not in CRASH_POINTS:
            raise BadInput(f"crash_at must be one of {CRASH_POINTS}, got {self.crash_at!r}")
        if self.crash_at == "settle-sent" and self.batch > 1:
            raise BadInput("crash_at 'settle-sent' is for one-job workers: a batch's settles share one round trip")
        if self.wait is not None and (len(self.wait) != 2 or not all(isinstance(v, int) for v in self.wait)):
            raise BadInput(f"wait must be (numreplicas, timeout_ms), two integers, got {self.wait!r}")
        if self.on_short_wait is not None and (self.wait is None or ":" not in str(self.on_short_wait)):
            raise BadInput(f"on_short_wait must be 'module:function', with a wait, got {self.on_short_wait!r}")
        if self.beat is not None and ":" not in str(self.beat):
            raise BadInput(f"beat must be 'module:function', got {self.beat!r}")
        if self.budget is not None:
            jobs.positive_int("budget", self.budget)
        self.script_set()  # every transition known, every file there and a script
        return self

    def script_set(self) -> ScriptSet:
        """The scripts this worker runs: the kit's, with ``scripts`` in their transitions' places."""
        return KIT if self.scripts is None else ScriptSet.from_files(self.scripts)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> WorkerOptions:
        """The options a ``to_json`` wrote, checked; an unknown or missing field is named."""
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadInput(f"the worker's options are not JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise BadInput(f"the worker's options must be a JSON object, got {type(raw).__name__}")
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(raw) - fields)
        if unknown:
            raise BadInput(f"unknown worker options {unknown}: the options are {sorted(fields)}")
        if raw.get("wait") is not None:
            raw["wait"] = tuple(raw["wait"])
        try:
            return cls(**raw).check()
        except TypeError as exc:  # a required field missing
            raise BadInput(f"the worker's options are incomplete: {exc}") from None


def load_handler(spec: str) -> Callable[..., Any]:
    """``module:function`` → the function, or one clear error naming what is missing."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise SystemExit(f"worker: handler must be module:function, got {spec!r}")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise SystemExit(f"worker: cannot load handler {spec!r}: {exc}") from exc
    if not callable(fn):
        raise SystemExit(f"worker: handler {spec!r} is not callable")
    return fn


class Worker:
    """The loop of one worker process (a ``lab.run.Run`` starts and stops these by PID)."""

    def __init__(self, conn: Connector, queue: str, rec: Recorder, handler: Callable[..., Any],
                 options: WorkerOptions) -> None:
        self.conn, self.queue, self.rec, self.handler, self.options = conn, queue, rec, handler, options
        self.claims = 0
        self.stopping = False
        self.ctx = Context(conn, queue, rec.worker, options.work_ms, rec=rec)
        self._arm_settle = False
        if options.crash_at == "settle-sent":
            self._hook_settle()
        # a batch worker claims and settles on a lane, as a Pool's consumer does
        self.lane = Lane(conn, queue, frozenset({NATIVE_READS, PIPELINE}), lease_ms=options.lease_ms,
                         retry_delay_ms=options.retry_delay_ms, max_attempts=options.max_attempts,
                         record=options.record) if options.batch > 1 else None
        #: a beat of your own (``options.beat``), its calls, its handler and its budget; None: the worker's own
        self.own: OwnBeat | None = load_handler(options.beat) if options.beat else None
        self.calls = Calls(conn, queue, rec, lease_ms=options.lease_ms, retry_delay_ms=options.retry_delay_ms,
                           max_attempts=options.max_attempts, record=options.record)
        self.share = share_of(options.budget)

    # -- crash points ----------------------------------------------------------------------------
    def _due(self, point: str) -> bool:
        return self.options.crash_at == point and self.claims == self.options.crash_on

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
        self.ctx.job = job
        result = consumer.run_handler(self.handler, job, self.ctx)  # a crash is an {:error, reason}
        self.ctx.midway, self.ctx.job = None, None
        failed = isinstance(result, consumer.Error)
        self.rec.note("ran", job=job.id, token=job.attempts, outcome="error" if failed else "value")
        if self._due("handled"):
            self.crash("handled", job)
        return result

    def beat(self) -> bool:
        """Claim one job (or a batch), run the handler, settle. False when nothing was pending."""
        if self.own is not None:
            return self.own_beat(self.own)
        if self.lane is not None:
            return self.batch_beat(self.lane)
        a = self.options
        job = self.rec.claim(self.conn, self.queue, a.lease_ms)
        if job is None:
            return False
        ok, value = consumer.settle_args(self.work(job))
        self._settling, self._arm_settle = job, self._due("settle-sent")
        try:
            if not ok:
                self.rec.retry(self.conn, self.queue, job.id, job.attempts, str(value), a.retry_delay_ms,
                               a.max_attempts, record=a.record)
            else:
                self.rec.complete(self.conn, self.queue, job.id, job.attempts, value, record=a.record)
        finally:
            self._arm_settle = False
        return True

    def own_beat(self, own: OwnBeat) -> bool:
        """One beat of your own (``lab.own_beat``); False when it claimed nothing. Its error is noted in the
        history (``beat-error``) and the worker beats again, as it does after a refusal."""
        try:
            return own(self.calls, handle_with(self.work), self.share) is not None
        except connector.LINK_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - the learner's bug: recorded where the judge reads it
            self.rec.note("beat-error", error=f"{type(exc).__name__}: {exc}"[:300])
            return False

    def batch_beat(self, lane: Lane) -> bool:
        """Claim up to ``batch`` jobs in one call, run each handler in turn, send the settles in one round trip."""
        lane.parents.clear()  # nothing is in hand between beats: a lost beat's parents go with it
        claimed_at = time.monotonic()
        got = self.rec.claim_many(lane, self.options.batch)
        if not got:
            return False
        answers: list[tuple[jobs.Claimed, bool, str | bytes]] = []
        for job in got:
            if answers and time.monotonic() - claimed_at >= self.options.lease_ms / 2000:
                # the lease guard, as a Pool's consumer keeps it: half the leases gone, what is done settles now
                self.rec.settle_many(lane, answers)
                answers = []
            answers.append((job, *consumer.settle_args(self.work(job))))
        self.rec.settle_many(lane, answers)
        return True

    def run(self) -> int:
        deadline = time.monotonic() + self.options.timeout
        while not self.stopping and time.monotonic() < deadline:
            try:
                worked = self.beat()
            except connector.LINK_ERRORS:
                worked = False  # the call in flight is recorded with no answer; the next beat reconnects
            except Exception as exc:  # noqa: BLE001 - a refusal (a full node …) is recorded; keep beating
                print(f"{self.rec.worker}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                worked = False
            if not worked:
                time.sleep(self.options.idle_ms / 1000)
        return 0


def connect_when_up(address: dict[str, Any], wire: int, timeout: float = 20.0,
                    wait: tuple[int, int] | None = None,
                    script_set: ScriptSet = KIT) -> tuple[Connector, ServerClock]:
    """A connector and the node's clock; a worker started while its node restarts waits for it (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = reconnect(address, wire=wire, wait=wait, script_set=script_set)
            return conn, ServerClock(conn)
        except connector.LINK_ERRORS:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m echomq_teach.lab.worker OPTIONS_JSON (a WorkerOptions)", file=sys.stderr)
        return 2
    try:
        options = WorkerOptions.from_json(argv[0])
    except BadInput as exc:
        print(f"worker: {exc}", file=sys.stderr)
        return 2
    raw = os.environ.get("ECHOMQ_ADDRESS")
    if not raw:
        print("worker: $ECHOMQ_ADDRESS (the node's address, JSON) is not set", file=sys.stderr)
        return 2
    address = json.loads(raw)
    if "startup_nodes" in address:
        address["startup_nodes"] = [tuple(n) for n in address["startup_nodes"]]
    if options.handler_path:
        sys.path.insert(0, options.handler_path)
    handler = load_handler(options.handler)
    if options.batch > 1 and "startup_nodes" in address:
        print("worker: batch > 1 needs a single node", file=sys.stderr)
        return 2
    # named on every link it opens, so that a fault can find this worker in CLIENT LIST and drop it
    address["client_name"] = client_name(options.name)
    conn, clock = connect_when_up(address, options.wire, wait=options.wait, script_set=options.script_set())
    if options.on_short_wait or options.beat:
        sys.path.insert(0, options.history)  # the run wrote the design's (or the beat's) module into its folder
    if options.on_short_wait:
        conn.on_short_wait = load_handler(options.on_short_wait)  # type: ignore[attr-defined]
    rec = Recorder(options.history, options.name, clock)
    worker = Worker(conn, options.queue, rec, handler, options)

    def stop(_sig: int, _frame: Any) -> None:
        worker.stopping = True

    signal.signal(signal.SIGTERM, stop)
    rec.note("start", pid=os.getpid())
    try:
        return worker.run()
    finally:
        # a cluster connector with wait= counts the writes that fewer replicas than asked acknowledged
        rec.note("stop", wait_short=getattr(conn, "wait_short", None), round_trips=conn.round_trips)
        rec.close()
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
