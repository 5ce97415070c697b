"""A fault run: worker processes draining one queue under faults, every call recorded.

A ``Run`` drains one queue with worker processes (``worker_process``) that it
starts and stops by PID, while a ``RecordedMetronome`` in this process, the
kit's ``consumer.Metronome`` with each call recorded, calls promote and the
recovery leg for them, as a Pool's does; with ``pump=True`` the metronome only
recovers and a ``RecordedPump`` (the kit's ``Pump``, its calls recorded in the
``pump`` lane, on a link of its own) promotes. Every process records its calls in the
run's folder (``echomq_teach.lab.history``), the faults too, so that
``run.check()`` can judge the run (``echomq_teach.lab.checker``) and
``run.timeline()`` can draw it.

The faults (``FAULTS``), each recorded in the ``nemesis`` lane:

* ``kill(slot)`` — SIGKILL the slot's worker; a new worker takes the slot;
* ``freeze(slot)`` / ``thaw(slot)`` — SIGSTOP, then SIGCONT: a worker frozen
  past its lease wakes up still believing it holds its job;
* ``drop_link(slot)`` — ``CLIENT KILL`` the worker's link: the call in flight
  loses its answer;
* ``drop_pump_link()`` — ``CLIENT KILL`` the Pump's link (a run with
  ``pump=True``): a promote in flight loses its answer;
* ``script_flush()`` — ``SCRIPT FLUSH``: every connector meets NOSCRIPT once;
* ``restart_node()`` — SIGKILL the node and start it again on its data (a
  durable node: an append-only file synced on every write).

``nemesis.Nemesis(seed)`` draws a random schedule of these; ``crashes`` kills a
worker at each point between its round trips.

Every process a run starts is stopped by its PID when the run ends, when the
``with`` block exits (also on an error), or when the run is dropped; workers
are forked from the kit's launcher thread, so they also die with the kernel.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import connector, consumer, ending, jobs, keyspace
from ..cluster_connector import check_wait, reconnect
from ..connector import Connector, TraceEntry
from ..errors import BadInput
from ..pump import Pump
from ..transitions import KIT, ScriptSet
from .checker import FinalState, Report, check
from .history import History, Recorder, ServerClock
from .worker import WorkerOptions, client_name
from .worker_process import WorkerProcess, handler_source, stop_all, write_handler

FAULTS = ("kill", "freeze", "drop_link", "drop_pump_link", "script_flush", "restart")
#: the lane (and the history file) of a run's Pump; its link carries ``client_name(PUMP)``
PUMP = "pump"
#: the worker options a run's ``spawn`` / ``start`` may override for some workers
TUNABLE = ("lease_ms", "max_attempts", "retry_delay_ms", "handler", "handler_path", "work_ms", "idle_ms", "budget",
           "record", "timeout", "wait", "batch")


class _Recorded:
    """What a recorded ticker (the metronome, the Pump) closes once its beats have stopped: its own link and
    its history file."""

    rec: Recorder
    conn: Connector

    def stop(self) -> None:
        super().stop()  # type: ignore[misc]
        self.rec.close()
        self.conn.close()


class RecordedMetronome(_Recorded, consumer.Metronome):
    """The kit's Metronome whose promote and recovery calls are recorded in the ``metronome`` lane.

    A link lost (the node restarting) is skipped to the next tick, as
    ``lost_link="retry"`` does; any other error is noted in the ``nemesis``
    lane and the ticks go on: a run's metronome must outlive its faults.
    """

    def __init__(self, conn: Connector, queue: str, rec: Recorder, notes: Recorder, *, interval_ms: int,
                 recovery: str, record: bool, promote: bool = True) -> None:
        super().__init__(conn, queue, interval_ms=interval_ms, recovery=recovery, lost_link="retry", record=record)
        self.rec, self.notes = rec, notes
        #: False when a Pump promotes for the run: then this metronome only recovers
        self.promotes = promote

    def tick(self) -> tuple[list[str], list[str]]:
        try:
            promoted = self.rec.promote(self.conn, self.queue) if self.promotes else []
            if self.recovery == "reap":
                recovered = self.rec.reap(self.conn, self.queue)
            else:
                # a burial is an ending too: a recording run's sweep records it
                recovered = self.rec.stalled(self.conn, self.queue, self.max_stalled, record=self.record).requeued
        except connector.LINK_ERRORS:
            raise  # the loop counts it and ticks again
        except Exception as exc:  # noqa: BLE001 - kept in the nemesis lane, not lost with the thread
            self.notes.note("metronome-error", error=f"{type(exc).__name__}: {exc}")
            return [], []
        self.ticks += 1
        self.promoted += len(promoted)
        self.recovered += len(recovered)
        return promoted, recovered


class RecordedPump(_Recorded, Pump):
    """The kit's Pump whose promote calls are recorded in the ``pump`` lane, as a worker's calls are.

    It ticks on a link of its own named ``client_name("pump")``, so that the
    nemesis can drop it as it drops a worker's. A lost link is counted and the
    next beat reconnects (``lost_link="retry"``); any other error is noted in
    the ``nemesis`` lane and the beats go on.
    """

    who = PUMP

    def __init__(self, conn: Connector, queue: str, rec: Recorder, notes: Recorder, *, interval_ms: int) -> None:
        super().__init__(conn, [queue], interval_ms=interval_ms, lost_link="retry")
        self.rec, self.notes = rec, notes

    def tick(self) -> dict[str, list[str]]:
        moved: dict[str, list[str]] = {}
        for q in self.queues:
            try:
                moved[q] = self.rec.promote(self.conn, q)
            except connector.LINK_ERRORS:
                raise  # the loop counts it and beats again
            except Exception as exc:  # noqa: BLE001 - kept in the nemesis lane, not lost with the thread
                self.notes.note("pump-error", error=f"{type(exc).__name__}: {exc}")
                moved[q] = []
            self.promoted[q] += len(moved[q])
        self.ticks += 1
        return moved


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
    (``jobs.claim_many``); it settles them all in one round trip. ``pump=True``
    hands promotion to a ``RecordedPump`` beating every ``tick_ms`` on its own
    link (the metronome then only recovers), as a deployment whose workers do
    not sweep would run. ``scripts`` (a ``transitions.ScriptSet``) runs other
    scripts in their transitions' places for every process of the run: the
    workers (handed them as files in the run's folder), the producer, the
    metronome and the Pump; the checker judges what they did as it judges the
    kit's. ``beat`` (a Python file defining ``beat(queue, handle, budget)``,
    ``lab.own_beat``) runs in every worker in the place of its own beat,
    claiming within ``budget`` jobs a worker (None: no bound); its beats
    promote and recover, so the run starts no metronome.
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
        pump: bool = False,
        on_short_wait: Callable[..., Any] | None = None,
        scripts: ScriptSet | None = None,
        beat: str | os.PathLike[str] | None = None,
        budget: int | None = None,
    ) -> None:
        keyspace.check_queue(queue)
        scripts = KIT if scripts is None else scripts
        if not isinstance(scripts, ScriptSet):
            raise BadInput(f"scripts must be a transitions.ScriptSet, got {type(scripts).__name__}")
        jobs.positive_int("workers", workers)
        jobs.positive_int("tick_ms", tick_ms)
        if recovery not in ("reap", "stalled"):
            raise BadInput(f"recovery must be 'reap' or 'stalled', got {recovery!r}")
        if not callable(handler) and (not isinstance(handler, str) or ":" not in handler):
            raise BadInput(f"handler must be 'module:function' or a function, got {handler!r}")
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise BadInput("timeout must be a positive number of seconds: every run is bounded")
        if not isinstance(pump, bool):
            raise BadInput(f"pump must be True or False, got {pump!r}")
        if wait is not None:
            check_wait(wait)
            if "startup_nodes" not in node.address:
                raise BadInput("wait=(numreplicas, timeout_ms) needs a cluster: a single node has no replica")
        # what every worker of this run is told, checked before anything is made (the folder, the
        # handler's module and the worker's name are filled in below and by ``spawn``)
        told = WorkerOptions(
            queue=queue, name="w", history="", wire=node.wire, lease_ms=lease_ms, max_attempts=max_attempts,
            retry_delay_ms=retry_delay_ms, handler=handler if isinstance(handler, str) else "notebook:cell",
            work_ms=work_ms, idle_ms=idle_ms, record=record, timeout=timeout + 30, wait=wait, batch=batch,
        ).check()
        if on_short_wait is not None and (wait is None or not callable(on_short_wait)):
            raise BadInput("on_short_wait is a function deciding what a write WAIT confirmed short answers: "
                           "it needs wait=(numreplicas, timeout_ms)")
        if beat is not None and not Path(beat).is_file():
            raise BadInput(f"beat must name a Python file defining beat(queue, handle, budget); no file at {beat!r}")
        if beat is not None and batch > 1:
            raise BadInput("a beat of your own claims one job a beat: it takes batch=1")
        if batch > 1 and "startup_nodes" in node.address:
            raise BadInput("batch > 1 needs a single node: a cluster routes every call on its own")
        source = handler_source(handler) if callable(handler) else None
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
        # a design for short WAITs travels to the workers as a handler does: its source, in the run's folder
        short = write_handler(*handler_source(on_short_wait), self.folder) if on_short_wait is not None else None
        #: the scripts every process of this run runs (the kit's, but for those another stands in for)
        self.scripts = scripts
        # a beat of your own travels to the workers as a handler does: a module in the run's folder
        if beat is not None:
            shutil.copyfile(beat, self.folder / "run_beat.py")
        #: True when the workers beat with a beat of their own (which sweeps): then no metronome ticks
        self.own_beat = beat is not None
        #: what every worker of this run is told (its name is filled in by ``spawn``)
        self.options = dataclasses.replace(told, history=str(self.folder), handler=str(handler),
                                           handler_path=str(handler_path) if handler_path else None,
                                           on_short_wait=short, beat="run_beat:beat" if beat else None,
                                           budget=budget,
                                           scripts=scripts.files(self.folder / "scripts") if scripts else None)
        self.wait = wait
        self.on_short_wait = on_short_wait
        # the producer's and the metronome's writes wait for the replicas as the workers' do
        self.conn: Connector = node.connector() if wait is None else node.connector(wait=wait)
        self.conn.script_set = scripts  # its forks (the metronome's) keep it
        if on_short_wait is not None:
            self.conn.on_short_wait = on_short_wait  # type: ignore[attr-defined]
        self.slots: list[WorkerProcess | None] = [None] * workers
        self.all: list[WorkerProcess] = []
        self._generation = [0] * workers
        self._clock = ServerClock(self.conn)
        self.producer = Recorder(self.folder, "producer", self._clock)
        self.nemesis = Recorder(self.folder, "nemesis", self._clock)
        self._metronome: RecordedMetronome | None = None
        self.pump = pump
        self._pump: RecordedPump | None = None
        #: the run's last Pump (``pump=True``), kept after the run stops: its ``promoted``, ``ticks``, ``lost_links``
        self.pump_ticker: RecordedPump | None = None
        self.enqueued: list[str] = []
        #: the round trips the run's stopped metronomes and Pumps made (``round_trips``)
        self.sweep_trips = 0
        self.started_at = self._clock.now_ms()
        # a run dropped without stop() still ends its workers
        self._finalizer = weakref.finalize(self, stop_all, self.all)
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
        if not self.own_beat:
            self.start_metronome()
        return started

    def spawn(self, slot: int, *, crash_at: str | None = None, crash_on: int = 1, **options: Any) -> WorkerProcess:
        """A new worker process in ``slot`` (named ``w<slot>`` and a generation letter: w0, w0b, w0c …)."""
        if not isinstance(slot, int) or not 0 <= slot < self.size:
            raise BadInput(f"slot must be 0 … {self.size - 1}, got {slot!r}")
        unknown = set(options) - set(TUNABLE)
        if unknown:
            raise BadInput(f"unknown worker options {sorted(unknown)}: the options are {sorted(TUNABLE)}")
        gen = self._generation[slot]
        name = f"w{slot}" + ("" if gen == 0 else chr(ord("a") + gen % 26) * (1 + gen // 26))
        opts = dataclasses.replace(self.options, name=name, crash_at=crash_at, crash_on=crash_on, **options).check()
        self._generation[slot] += 1
        w = WorkerProcess(opts, slot, self.address)
        self.slots[slot] = w
        self.all.append(w)
        return w

    def worker(self, slot: int) -> WorkerProcess:
        w = self.slots[slot] if isinstance(slot, int) and 0 <= slot < self.size else None
        if w is None:
            raise BadInput(f"no worker in slot {slot!r} (slots 0 … {self.size - 1})")
        return w

    # -- the metronome ------------------------------------------------------------------------------
    def make_metronome(self, rec: Recorder) -> RecordedMetronome:
        """The metronome this run ticks with, its calls recorded in ``rec``: the kit's, on a link of its own (a
        judged run makes one that sweeps with the learner's script)."""
        return RecordedMetronome(self.conn.fork(), self.queue, rec, self.nemesis, interval_ms=self.tick_ms,
                                 recovery=self.recovery, record=self.record, promote=not self.pump)

    def start_metronome(self) -> None:
        """Promote and reap (or the stall sweep) every ``tick_ms``, recorded in the ``metronome`` lane."""
        if self._metronome is not None and self._metronome.running:
            return
        self._metronome = self.make_metronome(Recorder(self.folder, "metronome", self._clock))
        self._metronome.start()
        if self.pump and (self._pump is None or not self._pump.running):
            # a link of its own, named, so that drop_pump_link finds it in CLIENT LIST as drop_link finds a worker's
            link = reconnect({**self.address, "client_name": client_name(PUMP)}, wire=self.wire, wait=self.wait,
                             on_short_wait=self.on_short_wait, script_set=self.scripts)
            self._pump = RecordedPump(link, self.queue, Recorder(self.folder, PUMP, self._clock), self.nemesis,
                                      interval_ms=self.tick_ms)
            self._pump.start()
            self.pump_ticker = self._pump

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
        return self._kill_clients(client_name(w.name))

    def drop_pump_link(self) -> int:
        """CLIENT KILL the Pump's link (a run with ``pump=True``); answers how many links were dropped."""
        if not self.pump:
            raise BadInput("drop_pump_link needs a run with pump=True: this run's metronome promotes")
        self.nemesis.note("drop_link", worker=PUMP)
        return self._kill_clients(client_name(PUMP))

    def _kill_clients(self, name: str) -> int:
        """CLIENT KILL every link named ``name`` on every node; the kills are in this run's trace."""
        n = 0
        for client in self._node_clients():
            try:
                for c in client.client_list():
                    if c.get("name") == name:
                        # a client id is one node's own: the kill goes to the node that listed it
                        killed = client.execute_command("CLIENT", "KILL", "ID", c["id"])
                        self.conn.trace.append(TraceEntry(["CLIENT", "KILL", "ID", c["id"]], reply=killed))
                        n += int(killed)
            except connector.LINK_ERRORS:
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
        elif fault.kind == "drop_pump_link":
            self.drop_pump_link()
        elif fault.kind == "script_flush":
            self.script_flush()
        elif fault.kind == "restart":
            self.restart_node()
        else:
            raise BadInput(f"unknown fault {fault.kind!r}: the faults are {FAULTS}")

    # -- the end -------------------------------------------------------------------------------------------
    def sizes(self) -> dict[str, int]:
        """The four sets' sizes now (ZCARD each in one MULTI: cheap enough to poll while a run goes on)."""
        # one MULTI: reads one after another miss a job a recovery moves between them (pending read empty, then
        # the job moved from active to pending, then active read empty), and a run stopped "drained" with its
        # poison job still in the queue (03.6's reference failed 1 seed in 4 that way). A cluster's runs (failover)
        # read one by one: a transaction there is refused while a primary is held or failing over
        c = self.conn.client
        if self.conn.on_cluster:
            return {s: int(c.zcard(keyspace.queue_key(self.queue, s))) for s in keyspace.SETS}
        pipe = c.pipeline(transaction=True)
        for s in keyspace.SETS:
            pipe.zcard(keyspace.queue_key(self.queue, s))
        return {s: int(n) for s, n in zip(keyspace.SETS, pipe.execute())}

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
            except connector.LINK_ERRORS:
                pass  # the node is restarting
            time.sleep(poll_s)
        return False

    def stop(self) -> None:
        """Stop every worker by its PID (thawing a frozen one first), the metronome and the Pump."""
        stop_all(self.all)
        for ticker in (self._metronome, self._pump):
            if ticker is not None:
                ticker.stop()
                self.sweep_trips += ticker.conn.round_trips
        self._metronome = self._pump = None

    def round_trips(self) -> int:
        """The round trips the run's workers and its sweepers made (a command, or a pipeline: one each), once
        the run has stopped; a worker killed before it stopped never said how many it made, and counts 0."""
        said = sum(int(o.extra.get("round_trips") or 0) for o in self.history().notes("stop"))
        return said + self.sweep_trips

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
