"""Faults a learner can cause: worker processes to kill and freeze, a node to restart, links to drop.

A ``Run`` drains one queue with worker processes (``python -m
echomq_teach.lab.worker``) that it starts and stops by PID, while a metronome in
this process calls promote and reap for them, as a Pool's does. Every process
records its calls in the run's folder (``echomq_teach.lab.history``), the faults
too, so that ``run.check()`` can judge the run (``echomq_teach.lab.checker``) and
``run.timeline()`` can draw it.

The faults, each recorded in the ``nemesis`` lane:

* ``kill(slot)`` — SIGKILL the slot's worker; a new worker takes the slot;
* ``freeze(slot)`` / ``thaw(slot)`` — SIGSTOP, then SIGCONT: a worker frozen
  past its lease wakes up still believing it holds its job;
* ``drop_link(slot)`` — ``CLIENT KILL`` the worker's link: the call in flight
  loses its answer;
* ``script_flush()`` — ``SCRIPT FLUSH``: every connector meets NOSCRIPT once;
* ``restart_node()`` — SIGKILL the node and start it again on its data (a
  durable node: an append-only file synced on every write).

``Nemesis(seed)`` draws a random schedule of these from a seed: the same seed,
the same schedule (what the faults then do depends on timing, as it would).

Every process a run starts is stopped by its PID when the run ends, when the
``with`` block exits (also on an error), or when the run is dropped; workers
are forked from the kit's launcher thread, so they also die with the kernel.
"""

from __future__ import annotations

import inspect as pyinspect
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import consumer, ending, jobs, keyspace
from ..cluster_connector import check_wait
from ..connector import Connector, TraceEntry
from ..errors import BadInput
from ..nodes.local import launcher
from .checker import FinalState, Report, check
from .history import History, Recorder, ServerClock
from .worker import CRASH_POINTS, client_name

READY_WAIT_S = 30.0
STOP_WAIT_S = 10.0
FAULTS = ("kill", "freeze", "drop_link", "script_flush", "restart")


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
    header = "# written by echomq_teach.lab.faults for this run's workers\nfrom echomq_teach.consumer import Error\n\n"
    (folder / f"{module}.py").write_text(header + source)
    return f"{module}:{name}"


class WorkerProcess:
    """One worker process of a run, known by its PID."""

    def __init__(self, run: Run, name: str, slot: int, options: dict[str, Any]) -> None:
        self.name, self.slot, self.options = name, slot, options
        cmd = [sys.executable, "-m", "echomq_teach.lab.worker", run.queue, "--name", name,
               "--history", str(run.folder), "--wire", str(run.wire)]
        for k, v in options.items():
            flag = "--" + k.replace("_", "-")
            if v is True:
                cmd.append(flag)  # a switch (--no-record)
            elif v is not None and v is not False:
                cmd += [flag, str(v)]
        self.command = cmd
        env = dict(os.environ, ECHOMQ_ADDRESS=json.dumps(run.address), PYTHONUNBUFFERED="1")
        self.log = run.folder / f"{name}.log"
        with open(self.log, "ab") as log:
            # forked by the kit's launcher thread: the worker dies with the kernel that started it
            self.proc = launcher.popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.frozen = False
        self._history = run.folder / f"{name}.jsonl"

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_ready(self, timeout: float = READY_WAIT_S) -> None:
        """Until the worker has connected and recorded its start; its log in the error if it never does."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if '"op":"start"' in self._history.read_text():
                    return
            except OSError:
                pass
            if not self.alive:
                break
            time.sleep(0.02)
        self.kill()
        raise RuntimeError(f"worker {self.name} did not start (exit {self.proc.poll()}): {self.log_tail()}")

    def log_tail(self, lines: int = 10) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) or "(empty log)"
        except OSError:
            return "(no log)"

    def kill(self) -> None:
        """SIGKILL by PID: no exit hook, no settle; its lease is left to lapse."""
        if self.alive:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=STOP_WAIT_S)

    def freeze(self) -> None:
        """SIGSTOP by PID: the process stops between two instructions, holding whatever it holds."""
        if self.alive:
            self.proc.send_signal(signal.SIGSTOP)
            self.frozen = True

    def thaw(self) -> None:
        """SIGCONT by PID: it carries on from where it stopped, unaware of the time that passed."""
        if self.alive:
            self.proc.send_signal(signal.SIGCONT)
        self.frozen = False

    def stop(self) -> None:
        """SIGCONT (should it be frozen) and SIGTERM: it ends after its beat; SIGKILL if it will not go."""
        if not self.alive:
            return
        self.thaw()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.kill()

    def __repr__(self) -> str:
        state = "frozen" if self.frozen else ("running" if self.alive else f"ended ({self.proc.returncode})")
        return f"<worker {self.name} pid {self.pid} {state}>"


def _stop_all(procs: list[WorkerProcess]) -> None:
    for p in procs:
        try:
            p.stop()
        except Exception:  # noqa: BLE001 - the next one must still be stopped
            p.proc.kill()


@dataclass
class Fault:
    """One scheduled fault: ``at_s`` after the nemesis starts, ``kind`` on worker slot ``slot``."""

    at_s: float
    kind: str
    slot: int | None = None
    hold_s: float = 0.0  # a freeze: how long until the thaw

    def __str__(self) -> str:
        where = f" slot {self.slot}" if self.slot is not None else ""
        hold = f" for {self.hold_s:.2f} s" if self.kind == "freeze" else ""
        return f"+{self.at_s:.2f} s {self.kind}{where}{hold}"


class Run:
    """Worker processes draining one queue under faults, every call recorded.

    ``node`` is what the workers connect to (a ``LocalNode``, or a cluster
    with ``.address`` and ``.connector()``). ``restart_node`` needs a node
    started with ``durable=True``. ``workers`` is the number of slots;
    ``handler`` is ``module:function`` (``echomq_teach.lab.handlers`` has ready
    ones, ``handler_path`` a folder to import yours from), or a function
    defined in a notebook cell: its source is written into the run's folder
    for the workers to import, so it must stand alone (import what it uses
    inside it; ``ctx`` gives it the worker's connector). ``recovery`` is the
    metronome's leg: ``"reap"`` or ``"stalled"``. ``idle_ms`` is how long a
    worker that found nothing pending sleeps before it claims again (each of
    those claims is recorded: a pool left idle for minutes wants a longer one).
    ``batch`` (a single node only) is how many jobs a worker claims per call
    (``jobs.claim_many``); it settles them all in one round trip.
    """

    def __init__(
        self,
        node: Any,
        queue: str,
        *,
        workers: int = 4,
        handler: str | Callable[..., Any] = "echomq_teach.lab.handlers:work",
        handler_path: str | os.PathLike[str] | None = None,
        work_ms: int = 2,
        lease_ms: int = 1_000,
        max_attempts: int = jobs.DEFAULT_MAX_ATTEMPTS,
        retry_delay_ms: int = 100,
        tick_ms: int = 50,
        idle_ms: int = 5,
        recovery: str = "reap",
        record: bool = True,
        timeout: float = 120.0,
        folder: str | os.PathLike[str] | None = None,
        wait: tuple[int, int] | None = None,
        batch: int = 1,
    ) -> None:
        keyspace.check_queue(queue)
        jobs.positive_int("workers", workers)
        jobs.check_batch(batch)
        if batch > 1 and "startup_nodes" in node.address:
            raise BadInput("batch > 1 needs a single node: a cluster routes every call on its own")
        jobs.non_negative_int("work_ms", work_ms)
        jobs.positive_int("idle_ms", idle_ms)
        for name, v in (("lease_ms", lease_ms), ("max_attempts", max_attempts),
                        ("retry_delay_ms", retry_delay_ms), ("tick_ms", tick_ms)):
            jobs.positive_int(name, v)
        if recovery not in ("reap", "stalled"):
            raise BadInput(f"recovery must be 'reap' or 'stalled', got {recovery!r}")
        if not callable(handler) and (not isinstance(handler, str) or ":" not in handler):
            raise BadInput(f"handler must be 'module:function' or a function, got {handler!r}")
        source = handler_source(handler) if callable(handler) else None
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise BadInput("timeout must be a positive number of seconds: every run is bounded")
        if wait is not None:
            check_wait(wait)
            if "startup_nodes" not in node.address:
                raise BadInput("wait=(numreplicas, timeout_ms) needs a cluster: a single node has no replica")
        self.node, self.queue, self.size = node, queue, workers
        self.wire = node.wire
        self.address = dict(node.address)
        self.recovery, self.record, self.tick_ms = recovery, record, tick_ms
        self.lease_ms, self.max_attempts = lease_ms, max_attempts
        self.timeout = timeout
        self._own_folder = folder is None
        self.folder = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="echomq-run-"))
        self.folder.mkdir(parents=True, exist_ok=True)
        if source is not None:
            handler, handler_path = write_handler(*source, self.folder), self.folder
        self.options: dict[str, Any] = {
            "lease_ms": lease_ms, "max_attempts": max_attempts, "retry_delay_ms": retry_delay_ms,
            "handler": handler, "handler_path": str(handler_path) if handler_path else None,
            "work_ms": work_ms, "idle_ms": idle_ms, "no_record": not record, "timeout": timeout + 30,
            "wait": None if wait is None else f"{wait[0]},{wait[1]}",
            "batch": batch if batch > 1 else None,
        }
        self.wait = wait
        # the producer's and the metronome's writes wait for the replicas as the workers' do
        self.conn: Connector = node.connector() if wait is None else node.connector(wait=wait)
        self.slots: list[WorkerProcess | None] = [None] * workers
        self.all: list[WorkerProcess] = []
        self._generation = [0] * workers
        self._clock = ServerClock(self.conn)
        self.producer = Recorder(self.folder, "producer", self._clock)
        self.nemesis = Recorder(self.folder, "nemesis", self._clock)
        self._metronome: threading.Thread | None = None
        self._stop = threading.Event()
        self.enqueued: list[str] = []
        self.started_at = self._clock.now_ms()
        # a run dropped without stop() still ends its workers
        self._finalizer = weakref.finalize(self, _stop_all, self.all)
        ending.track(self, "close")  # the kernel's end closes it: workers stopped, its own folder removed

    @property
    def clock(self) -> ServerClock:
        """The node's clock as this process reads it: the producer's and the nemesis's time stamps."""
        return self._clock

    # -- jobs ---------------------------------------------------------------------------------------
    def produce(self, n: int, payload: Callable[[int], str] = lambda i: f"job {i}", batch: int = 200) -> list[str]:
        """Enqueue ``n`` jobs in batches of ``batch`` (one round trip each), every job recorded; answers their ids."""
        jobs.non_negative_int("n", n)
        jobs.positive_int("batch", batch)
        out: list[str] = []
        for start in range(0, n, batch):
            payloads = [payload(len(self.enqueued) + i) for i in range(start, min(n, start + batch))]
            out += self.producer.enqueue_many(self.conn, self.queue, payloads)
        self.enqueued += out
        return out

    # -- workers ------------------------------------------------------------------------------------
    def start(self, **options: Any) -> list[WorkerProcess]:
        """Start a worker in every empty slot (``options`` override the run's for these workers)."""
        started = [self.spawn(i, **options) for i, w in enumerate(self.slots) if w is None or not w.alive]
        for w in started:
            w.wait_ready()
        self.start_metronome()
        return started

    def spawn(self, slot: int, *, crash_at: str | None = None, crash_on: int = 1, **options: Any) -> WorkerProcess:
        """A new worker process in ``slot`` (named ``w<slot>`` and a generation letter: w0, w0b, w0c …)."""
        if not isinstance(slot, int) or not 0 <= slot < self.size:
            raise BadInput(f"slot must be 0 … {self.size - 1}, got {slot!r}")
        if crash_at is not None and crash_at not in CRASH_POINTS:
            raise BadInput(f"crash_at must be one of {CRASH_POINTS}, got {crash_at!r}")
        if crash_at == "settle-sent" and (options.get("batch") or self.options["batch"]):
            raise BadInput("crash_at 'settle-sent' is for one-job workers: a batch's settles share one round trip")
        unknown = set(options) - set(self.options)
        if unknown:
            raise BadInput(f"unknown worker options {sorted(unknown)}: the options are {sorted(self.options)}")
        gen = self._generation[slot]
        self._generation[slot] += 1
        name = f"w{slot}" + ("" if gen == 0 else chr(ord("a") + gen % 26) * (1 + gen // 26))
        opts = {**self.options, **options, "crash_at": crash_at, "crash_on": crash_on if crash_at else None}
        w = WorkerProcess(self, name, slot, opts)
        self.slots[slot] = w
        self.all.append(w)
        return w

    def worker(self, slot: int) -> WorkerProcess:
        w = self.slots[slot] if isinstance(slot, int) and 0 <= slot < self.size else None
        if w is None:
            raise BadInput(f"no worker in slot {slot!r} (slots 0 … {self.size - 1})")
        return w

    # -- the metronome ------------------------------------------------------------------------------
    def start_metronome(self) -> None:
        """Promote and reap (or the stall sweep) every ``tick_ms``, recorded in the ``metronome`` lane."""
        if self._metronome is not None and self._metronome.is_alive():
            return
        self._stop.clear()
        self._metronome = threading.Thread(target=self._tick_loop, name=f"run-metronome-{self.queue}", daemon=True)
        self._metronome.start()

    def _tick_loop(self) -> None:
        conn = self.conn.fork()
        rec = Recorder(self.folder, "metronome", self._clock)
        try:
            while not self._stop.is_set():
                try:
                    rec.promote(conn, self.queue)
                    if self.recovery == "reap":
                        rec.reap(conn, self.queue)
                    else:
                        rec.stalled(conn, self.queue, record=self.record)  # a burial is an ending too
                except consumer.LINK_ERRORS:
                    pass  # the node is away (a restart): tick again
                except Exception as exc:  # noqa: BLE001 - kept in the nemesis lane, not lost with the thread
                    self.nemesis.note("metronome-error", error=f"{type(exc).__name__}: {exc}")
                self._stop.wait(self.tick_ms / 1000)
        finally:
            rec.close()
            conn.close()

    # -- faults ----------------------------------------------------------------------------------------
    def kill(self, slot: int, replace: bool = True) -> WorkerProcess | None:
        """SIGKILL the slot's worker; with ``replace``, a new worker takes the slot. Answers the new one."""
        w = self.worker(slot)
        self.nemesis.note("kill", worker=w.name, pid=w.pid)
        w.kill()
        if not replace:
            return None
        new = self.spawn(slot)
        new.wait_ready()
        return new

    def freeze(self, slot: int) -> None:
        w = self.worker(slot)
        self.nemesis.note("freeze", worker=w.name, pid=w.pid)
        w.freeze()

    def thaw(self, slot: int) -> None:
        w = self.worker(slot)
        self.nemesis.note("thaw", worker=w.name, pid=w.pid)
        w.thaw()

    def drop_link(self, slot: int) -> int:
        """CLIENT KILL every link of the slot's worker; answers how many were dropped."""
        w = self.worker(slot)
        self.nemesis.note("drop_link", worker=w.name, pid=w.pid)
        name = client_name(w.name)
        n = 0
        for client in self._node_clients():
            try:
                for c in client.client_list():
                    if c.get("name") == name:
                        # a client id is one node's own: the kill goes to the node that listed it
                        killed = client.execute_command("CLIENT", "KILL", "ID", c["id"])
                        self.conn.trace.append(TraceEntry(["CLIENT", "KILL", "ID", c["id"]], reply=killed))
                        n += int(killed)
            except consumer.LINK_ERRORS:
                pass  # the node is away: the worker's link to it is gone anyway
        return n

    def _node_clients(self) -> list[Any]:
        """A client for each node the workers may hold links to: the node, or every node of a cluster."""
        client = self.conn.client
        if hasattr(client, "get_nodes"):
            return [client.get_redis_connection(n) for n in client.get_nodes()]
        return [client]

    def script_flush(self) -> None:
        """SCRIPT FLUSH: every script the node had loaded is gone; each connector reloads on NOSCRIPT."""
        self.nemesis.note("script_flush")
        self.conn.call("SCRIPT", "FLUSH")

    def restart_node(self) -> None:
        """SIGKILL the node by its PID and start it again on the same port and data (a durable node)."""
        if not getattr(self.node, "durable", False) or not hasattr(self.node, "relaunch"):
            raise BadInput("restart_node needs a node this kernel started with start_node(durable=True): "
                           "a node without persistence comes back empty")
        self.nemesis.note("restart", pid=self.node.pid)
        self.node.kill()
        self.node.relaunch()
        self.nemesis.note("restarted", pid=self.node.pid)

    def apply(self, fault: Fault) -> None:
        """Carry out one scheduled fault (a freeze's thaw is the caller's, after ``hold_s``)."""
        slot = fault.slot if fault.slot is not None else 0
        if fault.kind == "kill":
            self.kill(slot)
        elif fault.kind == "freeze":
            self.freeze(slot)
        elif fault.kind == "drop_link":
            self.drop_link(slot)
        elif fault.kind == "script_flush":
            self.script_flush()
        elif fault.kind == "restart":
            self.restart_node()
        else:
            raise BadInput(f"unknown fault {fault.kind!r}: the faults are {FAULTS}")

    # -- the end -------------------------------------------------------------------------------------------
    def sizes(self) -> dict[str, int]:
        """The four sets' sizes now (ZCARD each: cheap enough to poll while a run goes on)."""
        c = self.conn.client
        return {s: int(c.zcard(keyspace.queue_key(self.queue, s))) for s in keyspace.SETS}

    def settled(self) -> int:
        """Entries in the completions stream: settles recorded so far."""
        return int(self.conn.client.xlen(keyspace.queue_key(self.queue, "stream:completions")))

    def wait_drained(self, timeout: float | None = None, poll_s: float = 0.05) -> bool:
        """Until pending, active and schedule are all empty (bounded); True when they are."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while time.monotonic() < deadline:
            try:
                s = self.sizes()
                if s["pending"] == s["active"] == s["schedule"] == 0:
                    return True
            except consumer.LINK_ERRORS:
                pass  # the node is restarting
            time.sleep(poll_s)
        return False

    def stop(self) -> None:
        """Stop every worker by its PID (thawing a frozen one first) and the metronome."""
        _stop_all(self.all)
        self._stop.set()
        if self._metronome is not None:
            self._metronome.join(timeout=STOP_WAIT_S)

    def history(self) -> History:
        return History.read(self.folder)

    def final_state(self) -> FinalState:
        return FinalState.read(self.conn, self.queue)

    def check(self) -> Report:
        """The checker's report on this run: its history and the node's state now."""
        return check(self.history(), self.final_state(), recorded=self.record)

    def timeline(self, report: Report | None = None, **kwargs: Any) -> Any:
        """The run drawn: one lane per worker, one bar per claim (``echomq_teach.lab.timeline``)."""
        from .timeline import draw

        return draw(self.history(), report, **kwargs)

    def close(self) -> None:
        """Stop everything and delete the run's folder if the run made it."""
        self.stop()
        self.producer.close()
        self.nemesis.close()
        self.conn.close()
        if self._own_folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        live = sum(1 for w in self.slots if w is not None and w.alive)
        return f"<Run {self.queue!r}: {live}/{self.size} workers, {len(self.enqueued)} jobs, history in {self.folder}>"


@dataclass
class Nemesis:
    """A seeded random schedule of faults: the same seed draws the same schedule.

    ``count`` faults, one every ``gap_s`` (drawn uniformly from the range),
    each drawn from ``kinds`` and aimed at a random worker slot. A freeze
    holds for ``freeze_s`` (drawn from the range: make it longer than the
    lease to make a zombie).
    """

    seed: int
    kinds: tuple[str, ...] = ("kill", "freeze", "drop_link", "script_flush")
    count: int = 8
    gap_s: tuple[float, float] = (0.1, 0.4)
    freeze_s: tuple[float, float] = (1.5, 2.5)
    #: kinds that happen exactly at one place each, whatever the draw (a node restart, say)
    must: tuple[str, ...] = ()
    schedule: list[Fault] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        bad = [k for k in (*self.kinds, *self.must) if k not in FAULTS]
        if bad or not self.kinds:
            raise BadInput(f"unknown fault kinds {bad}: the kinds are {FAULTS}")
        jobs.positive_int("count", self.count)
        if len(self.must) > self.count:
            raise BadInput(f"must names {len(self.must)} faults but the schedule holds {self.count}")
        for name, (lo, hi) in (("gap_s", self.gap_s), ("freeze_s", self.freeze_s)):
            if not 0 <= lo <= hi:
                raise BadInput(f"{name} must be a range (low, high) with 0 <= low <= high, got {(lo, hi)!r}")

    def draw(self, slots: int) -> list[Fault]:
        """The schedule for a run with ``slots`` worker slots (deterministic in the seed)."""
        rng = random.Random(self.seed)
        # each kind in ``must`` takes one place in the schedule, drawn like the rest
        forced = dict(zip(rng.sample(range(self.count), len(self.must)), self.must))
        t = 0.0
        out: list[Fault] = []
        for i in range(self.count):
            t += rng.uniform(*self.gap_s)
            kind = forced.get(i) or rng.choice(self.kinds)
            slot = rng.randrange(slots) if kind in ("kill", "freeze", "drop_link") else None
            hold = rng.uniform(*self.freeze_s) if kind == "freeze" else 0.0
            out.append(Fault(round(t, 3), kind, slot, round(hold, 3)))
        self.schedule = out
        return out

    def run(self, run: Run, deadline_s: float = 60.0) -> list[Fault]:
        """Carry out the schedule on ``run`` (this call blocks, bounded); answers the faults applied.

        A slot that is frozen takes no other fault until it is thawed: the
        fault aimed at it is skipped and recorded as skipped.
        """
        schedule = self.draw(run.size)
        thaws: list[tuple[float, int]] = []
        start = time.monotonic()
        applied: list[Fault] = []
        pending = list(schedule)
        while (pending or thaws) and time.monotonic() - start < deadline_s:
            now = time.monotonic() - start
            for at, slot in [t for t in thaws if t[0] <= now]:
                thaws.remove((at, slot))
                run.thaw(slot)
            if pending and pending[0].at_s <= now:
                f = pending.pop(0)
                frozen = f.slot is not None and any(s == f.slot for _, s in thaws)
                if frozen:
                    run.nemesis.note("skipped", kind=f.kind, slot=f.slot)
                else:
                    run.apply(f)
                    applied.append(f)
                    if f.kind == "freeze" and f.slot is not None:
                        thaws.append((now + f.hold_s, f.slot))
                continue
            if not pending and not thaws:
                break
            nxt = min([p.at_s for p in pending[:1]] + [t[0] for t in thaws])
            time.sleep(max(0.0, min(0.05, nxt - now)))
        for _, slot in thaws:  # the deadline came first: nobody stays frozen
            run.thaw(slot)
        return applied


def fault_lines(faults: Iterable[Fault]) -> str:
    """A schedule as text, one fault a line."""
    return "\n".join(str(f) for f in faults)


@dataclass
class CrashOutcome:
    """What one crash point did to one job: the runs of its handler, its charges, and who settled it."""

    point: str
    job: str
    runs: int  # handler runs started, the crashed one included
    charges: int  # side effects made (the not-idempotent list and the idempotent hash together)
    token: int | None  # the token whose settle the completions stream holds
    settled_by: str | None
    recovered: bool  # a reap put it back after the crash
    report: Report
    history: History = field(repr=False, default_factory=lambda: History([]))

    def row(self) -> tuple[str, int, int, int | None, str | None, bool]:
        return (self.point, self.runs, self.charges, self.token, self.settled_by, self.recovered)


def crash_point(node: Any, queue: str, point: str, *,
                handler: str | Callable[..., Any] = "echomq_teach.lab.handlers:charge", lease_ms: int = 300,
                work_ms: int = 40, timeout: float = 60.0) -> CrashOutcome:
    """One job; worker ``w0`` kills itself at ``point`` on it; a healthy worker takes over; the run judged.

    The queue is dropped first, so the outcome is this scenario's alone.
    """
    from . import handlers

    if point not in CRASH_POINTS:
        raise BadInput(f"point must be one of {CRASH_POINTS}, got {point!r}")
    with Run(node, queue, workers=2, lease_ms=lease_ms, work_ms=work_ms, handler=handler, tick_ms=25,
             timeout=timeout) as run:
        jobs.drop(run.conn, queue)
        [job] = run.produce(1)
        doomed = run.spawn(0, crash_at=point)
        doomed.wait_ready()
        run.start_metronome()
        doomed.proc.wait(timeout=timeout)
        run.start()  # a healthy worker in each empty slot
        if not run.wait_drained(timeout):
            raise RuntimeError(f"the job of crash point {point!r} was not settled within {timeout} s")
        run.stop()
        history = run.history()
        report = check(history, run.final_state(), recorded=run.record)
        entries = run.conn.client.xrange(keyspace.queue_key(queue, "stream:completions"))
        token = int(entries[-1][1]["attempts"]) if entries else None
        by = next((o.worker for o in history.calls("complete") if o.token == token), None)
        charges = handlers.effects(run.conn, queue)[job] + (job in handlers.effects_once(run.conn, queue))
        return CrashOutcome(point, job, report.handler_runs[job], charges, token, by, job in report.recovered,
                            report, history)


def crash_points(node: Any, queue_prefix: str, points: Iterable[str] = CRASH_POINTS,
                 **kwargs: Any) -> list[CrashOutcome]:
    """``crash_point`` for each point, side by side (one queue each: ``<prefix>-<point>``), in order."""
    points = list(points)
    out: dict[str, CrashOutcome] = {}
    errors: list[BaseException] = []

    def one(p: str) -> None:
        try:
            out[p] = crash_point(node, f"{queue_prefix}-{p}", p, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(p,), daemon=True) for p in points]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=kwargs.get("timeout", 60.0) * 2)
    if errors:
        raise errors[0]
    return [out[p] for p in points]
