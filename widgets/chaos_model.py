"""ChaosRun: worker processes draining one queue while a learner kills, freezes and restarts things.

The logic of the chaos widget (``echomq_widgets.ChaosView``), with no
ipywidgets import, so that it tests headless. A ``ChaosRun`` drives one
``echomq_teach.lab.run.Run``: worker processes started and stopped by PID, a
metronome (promote and reap) in this process, every call recorded. It keeps

* the state of each worker slot: running, frozen (since when, on the node's
  clock), or ended; and the earlier workers of the slot that were killed and
  replaced (w1 → w1b → w1c);
* the four set sizes sampled over time (one pipelined round trip: ``ZCARD``
  of each set, ``XLEN`` of the completions stream, ``TIME``), on the node's
  clock, for the current *round* (from the first action after a verdict to
  the next verdict);
* a drain detector: the round is over when pending, active and schedule are
  empty, no worker is frozen, and nothing has happened for ``quiet_ms`` (a
  thawed worker's late settle has time to land and be refused);
* the checker's verdict (``echomq_teach.lab.checker``) on the whole history so
  far, once per round.

Everything it starts is bounded: the workers end by themselves after the
run's ``lifetime_s`` (plus a margin), and a timer stops the run by PID when
that time has passed, even if nobody calls ``close()``. ``Watch`` is the
bounded background loop the widget animates with.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from echomq_teach import jobs
from echomq_teach.connector import LINK_ERRORS
from echomq_teach.errors import BadInput
from echomq_teach.keyspace import SETS, queue_key
from echomq_teach.lab.checker import Report, check
from echomq_teach.lab.history import History, ServerClock
from echomq_teach.lab.run import Run

from .counter import SizeSeries
from .model import fresh_queue

MAX_WORKERS = 8  # a pool a laptop (or a 2-core classroom container) can run beside its node
MAX_BATCH = 5_000  # jobs per enqueue: one recorded round trip each
LIFETIME_S = 600.0  # default bound on a run's life
MAX_LIFETIME_S = 3_600.0
WATCH_LIMIT_S = 120.0  # one animation never runs longer than this
STOP_WAIT_S = 15.0

#: the colour each kind of event is marked with on the sizes plot
EVENT_COLOURS = {
    "enqueue": "#59636e",
    "kill": "#cf222e",
    "freeze": "#1f6feb",
    "thaw": "#54aeff",
    "drop_link": "#bc4c00",
    "script_flush": "#8250df",
    "restart": "#cf222e",
}


@dataclass(frozen=True)
class SlotState:
    """One worker slot now: who holds it, in what state, and whom it replaced."""

    slot: int
    worker: str
    pid: int
    state: str  # "running", "frozen" or "ended"
    frozen_ms: float | None = None  # how long it has been frozen (node clock), when frozen
    killed: tuple[str, ...] = ()  # earlier workers of this slot, killed and replaced
    exit_code: int | None = None  # when ended

    def describe(self, lease_ms: int | None = None) -> str:
        """``w1b pid 4242 · frozen 1.3 s, past its lease · replaced w1 (killed)``."""
        state = self.state
        if self.state == "frozen" and self.frozen_ms is not None:
            state = f"frozen {self.frozen_ms / 1000:.1f} s"
            if lease_ms is not None and self.frozen_ms > lease_ms:
                state += ", past its lease"
        elif self.state == "ended":
            state = f"ended (exit {self.exit_code})"
        text = f"{self.worker} pid {self.pid} · {state}"
        if self.killed:
            text += " · replaced " + ", ".join(self.killed) + " (killed)"
        return text


@dataclass(frozen=True)
class Sample:
    """The queue at one moment on the node's clock: the four set sizes and the settles recorded so far."""

    at_ms: float
    sizes: dict[str, int]
    settled: int

    @property
    def empty(self) -> bool:
        """Nothing waits and nothing runs: pending, active and schedule are empty (dead holds settles)."""
        return self.sizes["pending"] == self.sizes["active"] == self.sizes["schedule"] == 0


@dataclass(frozen=True)
class ChaosEvent:
    """One thing the learner did, when (node ms), and what it did, in words."""

    at_ms: float
    kind: str
    text: str
    slot: int | None = None
    worker: str | None = None  # the worker it struck

    @property
    def label(self) -> str:
        """The short name drawn on the sizes plot: ``kill w0``, ``restart``."""
        return " ".join(x for x in (self.kind.replace("_", " "), self.worker) if x)


@dataclass
class RoundVerdict:
    """The checker's report on the run so far, made when a round drained."""

    round: int
    report: Report
    history: History
    at_ms: float

    @property
    def valid(self) -> bool:
        return self.report.valid

    @property
    def verdict(self) -> str:
        return self.report.verdict

    @property
    def summary(self) -> str:
        return self.report.summary()


class Watch:
    """A background loop with a bound: ``tick()`` every ``interval`` s until it answers False,
    ``stop()`` is called, or ``limit_s`` has passed — whichever comes first.

    ``reason`` says which: ``"done"``, ``"stopped"``, ``"limit"``, or ``"error: …"``
    (a tick that raised ends the loop; the error is kept, never lost with the thread).
    ``on_end(reason)`` runs in the loop's thread as it ends.
    """

    def __init__(self, tick: Callable[[], bool], *, interval: float = 0.1, limit_s: float = WATCH_LIMIT_S,
                 on_end: Callable[[str], None] | None = None, name: str = "chaos-watch") -> None:
        if not 0 < interval <= 5:
            raise BadInput(f"interval must be a number of seconds above 0 and at most 5, got {interval!r}")
        if not 0 < limit_s <= WATCH_LIMIT_S:
            raise BadInput(f"limit_s must be above 0 and at most {WATCH_LIMIT_S:.0f} s, got {limit_s!r}")
        self.tick, self.interval, self.limit_s, self.on_end, self.name = tick, interval, limit_s, on_end, name
        self.reason: str | None = None
        self.ticks = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> bool:
        """Start the loop unless it runs already; answers whether it started one."""
        if self.alive:
            return False
        self._stop = threading.Event()
        self.reason = None
        self._thread = threading.Thread(target=self._loop, args=(self._stop,), name=self.name, daemon=True)
        self._thread.start()
        return True

    def stop(self, timeout: float = STOP_WAIT_S) -> None:
        """Ask the loop to end and wait (bounded) until it has: its tick in progress finishes first."""
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=timeout)

    def _loop(self, stop: threading.Event) -> None:
        deadline = time.monotonic() + self.limit_s
        reason = "stopped"
        try:
            while not stop.is_set():
                if time.monotonic() >= deadline:
                    reason = "limit"
                    break
                self.ticks += 1
                if not self.tick():
                    reason = "done"
                    break
                stop.wait(self.interval)
        except Exception as exc:  # noqa: BLE001 - kept in reason: a thread's error must not vanish
            reason = f"error: {type(exc).__name__}: {exc}"
        self.reason = reason
        if self.on_end is not None:
            try:
                self.on_end(reason)
            except Exception as exc:  # noqa: BLE001
                self.reason = f"{reason}; on_end failed: {type(exc).__name__}: {exc}"


class ChaosRun:
    """A pool of worker processes draining one queue, the learner's faults, the sizes, and the verdict.

    ``node`` is a node this kernel can reach (``start_node()``; a restart needs
    ``start_node(durable=True)``). ``queue`` defaults to a fresh name of the
    run's own, dropped on ``close()``; a queue you name is left as it is.
    ``workers`` (1–8) worker processes start at once and claim with
    ``lease_ms``; the handler (``echomq_teach.lab.handlers:work``) works ``work_ms``.
    The run lives at most ``lifetime_s`` seconds. ``scripts`` (a
    ``transitions.ScriptSet``) and ``beat`` (a Python file of ``beat(queue,
    handle, budget)``) run a queue of your own in the kit's place, as
    ``my_queue.folder().run_options()`` gives them. Each action answers or
    raises ``BadInput`` before it touches the node or a process.
    """

    def __init__(
        self,
        node: Any,
        queue: str | None = None,
        *,
        workers: int = 4,
        lease_ms: int = 1_000,
        work_ms: int = 40,
        tick_ms: int = 100,
        idle_ms: int = 100,
        handler: str = "echomq_teach.lab.handlers:work",
        max_attempts: int = jobs.DEFAULT_MAX_ATTEMPTS,
        quiet_ms: int | None = None,
        lifetime_s: float = LIFETIME_S,
        scripts: Any = None,
        beat: Any = None,
    ) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
            raise BadInput(f"workers must be 1 … {MAX_WORKERS} worker processes, got {workers!r}")
        if isinstance(lifetime_s, bool) or not isinstance(lifetime_s, (int, float)) \
                or not 0 < lifetime_s <= MAX_LIFETIME_S:
            raise BadInput(f"lifetime_s must be above 0 and at most {MAX_LIFETIME_S:.0f} s, got {lifetime_s!r}")
        if quiet_ms is not None:
            jobs.positive_int("quiet_ms", quiet_ms)
        self.own_queue = queue is None
        self.queue = queue if queue is not None else fresh_queue("chaos")
        self.lease_ms, self.work_ms, self.lifetime_s = lease_ms, work_ms, float(lifetime_s)
        # long enough for a thawed worker to finish its handler and send its (late) settle
        self.quiet_ms = quiet_ms if quiet_ms is not None else work_ms + 2 * tick_ms + 200
        # a queue of your own (course/my_queue): your scripts in the kit's places, your beat in the workers'
        self.run = Run(node, self.queue, workers=workers, handler=handler, work_ms=work_ms, lease_ms=lease_ms,
                       max_attempts=max_attempts, tick_ms=tick_ms, idle_ms=idle_ms, timeout=self.lifetime_s,
                       scripts=scripts, beat=beat)
        self._lock = threading.RLock()
        self.closed = False
        self.ended: str | None = None
        #: called (from the timer's thread) when the run's lifetime ends
        self.on_expire: Callable[[], None] | None = None
        self.reader = None
        try:
            self._refuse_a_used_queue()
            self.reader = self.run.conn.fork()  # the sampler's own link: never shared between threads
            self.clock = ServerClock(self.reader)
            self.run.start()
        except BaseException:
            self.run.close()
            if self.reader is not None:
                self.reader.close()
            raise
        # time 0 as the timeline takes it, the first line a worker wrote (its start), so both axes agree
        self.started_ms = min((o.sent for o in self.run.history().ops if o.worker != "producer"),
                              default=self.clock.now_ms())
        self.series = SizeSeries()
        self.events: list[ChaosEvent] = []
        self.killed: list[list[str]] = [[] for _ in range(workers)]
        self.frozen_at: dict[int, float] = {}
        self.round = 1
        self.round_start_ms = self.started_ms
        self.verdict: RoundVerdict | None = None
        self.judged = False  # the current round has its verdict
        self.last: Sample | None = None
        self.node_away = False
        self._empty_since: float | None = None
        self._last_action_ms = self.started_ms
        self._actions = 0
        self._timer = threading.Timer(self.lifetime_s, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def __repr__(self) -> str:
        return f"<ChaosRun {self.queue!r}: {self.run.size} workers, {len(self.run.enqueued)} jobs, round {self.round}>"

    # -- what the widget reads -----------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.run.size

    @property
    def enqueued(self) -> int:
        return len(self.run.enqueued)

    @property
    def pids(self) -> list[int]:
        """Every worker process the run started, killed ones included."""
        return [w.pid for w in self.run.all]

    def now_ms(self) -> float:
        return self.clock.now_ms()

    def seconds(self, at_ms: float) -> float:
        """Seconds since the first worker's first line, on the node's clock: the x axis of both plots."""
        return (at_ms - self.started_ms) / 1000

    def slots(self) -> list[SlotState]:
        now = self.clock.now_ms()
        out = []
        for i, w in enumerate(self.run.slots):
            assert w is not None  # start() filled every slot
            if w.alive and w.frozen:
                state, frozen = "frozen", now - self.frozen_at.get(i, now)
            else:
                state, frozen = ("running" if w.alive else "ended"), None
            out.append(SlotState(i, w.name, w.pid, state, frozen, tuple(self.killed[i]),
                                 None if w.alive else w.returncode))
        return out

    def frozen(self) -> list[int]:
        return [i for i, w in enumerate(self.run.slots) if w is not None and w.alive and w.frozen]

    def round_events(self) -> list[ChaosEvent]:
        with self._lock:
            return [e for e in self.events if e.at_ms >= self.round_start_ms]

    def series_copy(self) -> tuple[list[float], dict[str, list[int]]]:
        """The current round's samples: (node seconds since the run started, sizes per set)."""
        with self._lock:
            return ([self.seconds(t) for t in self.series.now_ms],
                    {s: list(v) for s, v in self.series.sizes.items()})

    # -- the learner's actions -----------------------------------------------------------------------------
    def produce(self, n: int) -> list[str]:
        """Enqueue ``n`` jobs (1 … 5 000), each call recorded in the producer's lane; answers their ids."""
        self._alive()
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_BATCH:
            raise BadInput(f"enqueue takes 1 … {MAX_BATCH} jobs at a time, got {n!r}")
        t0 = self.clock.now_ms()
        ids = self.run.produce(n)
        self._acted(t0, "enqueue", f"enqueue {n} job{'s' if n != 1 else ''} ({self.enqueued} so far)")
        return ids

    def kill(self, slot: int) -> SlotState:
        """SIGKILL the slot's worker by its PID; a new worker process takes the slot. Answers the new slot state."""
        s = self._slot(slot)
        old = self.run.worker(s)
        alive = old.alive
        t0 = self.clock.now_ms()
        new = self.run.kill(s)
        assert new is not None
        with self._lock:
            self.killed[s].append(old.name)
            self.frozen_at.pop(s, None)
        how = (f"kill {old.name} (pid {old.pid}) with SIGKILL: whatever it held waits for its lease to lapse"
               if alive else f"{old.name} (pid {old.pid}) had ended (exit {old.returncode})")
        self._acted(t0, "kill", f"{how}; {new.name} (pid {new.pid}) takes slot {s}", s, old.name)
        return self.slots()[s]

    def freeze(self, slot: int) -> SlotState:
        """SIGSTOP the slot's worker: it holds what it claimed while its lease runs out."""
        s = self._slot(slot)
        w = self.run.worker(s)
        self._running(w)
        if w.frozen:
            raise BadInput(f"{w.name} is frozen already: thaw it first")
        t0 = self.clock.now_ms()
        self.run.freeze(s)
        with self._lock:
            self.frozen_at[s] = t0
        self._acted(t0, "freeze", f"freeze {w.name} (pid {w.pid}) with SIGSTOP: it holds its job while the "
                    f"lease ({self.lease_ms} ms) runs out; then reap puts the job back in pending for another "
                    "worker", s, w.name)
        return self.slots()[s]

    def thaw(self, slot: int) -> SlotState:
        """SIGCONT the slot's frozen worker: it carries on as if no time had passed."""
        s = self._slot(slot)
        w = self.run.worker(s)
        if not w.frozen:
            raise BadInput(f"{w.name} is not frozen: nothing to thaw")
        t0 = self.clock.now_ms()
        self.run.thaw(s)
        with self._lock:
            held = t0 - self.frozen_at.pop(s, t0)
        late = (f"longer than its lease of {self.lease_ms} ms: a settle it sends for the job it held is refused "
                "stale if another worker claimed it since") if held > self.lease_ms else \
            f"within its lease of {self.lease_ms} ms: it settles as if nothing happened"
        self._acted(t0, "thaw", f"thaw {w.name} after {held / 1000:.1f} s frozen, {late}", s, w.name)
        return self.slots()[s]

    def drop_link(self, slot: int) -> int:
        """``CLIENT KILL`` the slot's worker's links: its call in flight loses its answer. Answers how many."""
        s = self._slot(slot)
        w = self.run.worker(s)
        self._running(w)
        t0 = self.clock.now_ms()
        n = self.run.drop_link(s)
        self._acted(t0, "drop_link", f"drop {w.name}'s link: CLIENT KILL closed {n} link(s); a call in flight "
                    "lost its answer and the worker opens a new link", s, w.name)
        return n

    def script_flush(self) -> None:
        """``SCRIPT FLUSH``: every connector meets NOSCRIPT once and loads its script again."""
        self._alive()
        t0 = self.clock.now_ms()
        self.run.script_flush()
        self._acted(t0, "script_flush", "SCRIPT FLUSH: the node forgot every script; each worker's next call "
                    "meets NOSCRIPT and loads it again")

    def restart_node(self) -> tuple[int | None, int | None]:
        """SIGKILL the node and start it again on its append-only file (a durable node only).

        Answers (old pid, new pid). On a node without persistence: ``BadInput``, and nothing happens.
        """
        self._alive()
        old = getattr(self.run.node, "pid", None)
        t0 = self.clock.now_ms()
        started = time.monotonic()
        self.run.restart_node()  # refuses a node without persistence before it touches anything
        new = getattr(self.run.node, "pid", None)
        self._acted(t0, "restart", f"restart the node: SIGKILL pid {old}, started again as pid {new} on its "
                    f"append-only file ({time.monotonic() - started:.1f} s away); every link was cut")
        return old, new

    # -- sampling, the drain, the verdict ---------------------------------------------------------------------
    def sample(self) -> Sample | None:
        """Read the sizes now (one pipelined round trip) and keep them; None while the node is away."""
        q = self.queue
        try:
            pipe = self.reader.client.pipeline(transaction=False)
            for s in SETS:
                pipe.zcard(queue_key(q, s))
            pipe.xlen(queue_key(q, "stream:completions"))
            pipe.time()
            *sizes, settled, (sec, usec) = pipe.execute()
        except LINK_ERRORS:
            self.node_away = True
            return None
        self.node_away = False
        smp = Sample(int(sec) * 1000 + int(usec) / 1000, dict(zip(SETS, map(int, sizes))), int(settled))
        with self._lock:
            self.series.add(int(smp.at_ms), smp.sizes)
            self.last = smp
            if smp.empty and not self.frozen():
                if self._empty_since is None:
                    self._empty_since = smp.at_ms
            else:
                self._empty_since = None
        return smp

    @property
    def drained(self) -> bool:
        """The round is over: jobs were enqueued, none waits or runs, none is frozen, and all is quiet."""
        with self._lock:
            last, since = self.last, self._empty_since
            if last is None or since is None or not self.run.enqueued or self.frozen():
                return False
            return last.at_ms - since >= self.quiet_ms and last.at_ms - self._last_action_ms >= self.quiet_ms

    def waiting_for(self) -> str:
        """Why the round is not over yet, in words (empty once it is)."""
        if self.ended:
            return self.ended
        if self.node_away:
            return "the node does not answer (restarting?)"
        if self.judged:
            return ""
        if not self.run.enqueued:
            return "no jobs yet: enqueue some"
        frozen = [self.run.slots[i].name for i in self.frozen()]  # type: ignore[union-attr]
        last = self.last
        if last is not None and not last.empty:
            s = last.sizes
            return f"draining: pending {s['pending']}, active {s['active']}, schedule {s['schedule']}"
        if frozen:
            return (f"the queue is empty, but {', '.join(frozen)} {'is' if len(frozen) == 1 else 'are'} frozen: "
                    "thaw to end the round")
        return f"the queue is empty: waiting {self.quiet_ms} ms for late settles"

    def finish(self) -> RoundVerdict | None:
        """The checker's verdict on everything recorded so far; kept as the round's verdict.

        Answers None (and keeps nothing) if an action came while the checker ran: the round goes on.
        """
        with self._lock:
            seen = self._actions
        history = self.run.history()
        report = check(history, self.run.final_state(), recorded=self.run.record)
        v = RoundVerdict(self.round, report, history, self.clock.now_ms())
        with self._lock:
            if self._actions != seen:
                return None
            self.verdict, self.judged = v, True
        return v

    def tick(self) -> bool:
        """One step of a watch: sample, and judge the round once it drained. False once it is judged or over."""
        if self.closed or self.ended:
            return False
        self.sample()
        if not self.judged and self.drained:
            self.finish()
        return not self.judged

    def wait_drained(self, timeout: float = 60.0, interval: float = 0.05,
                     on_sample: Callable[[], None] | None = None) -> RoundVerdict | None:
        """Sample in this thread until the round drains and is judged (bounded); answers the verdict or None."""
        if not 0 < timeout <= MAX_LIFETIME_S:
            raise BadInput(f"timeout must be above 0 and at most {MAX_LIFETIME_S:.0f} s, got {timeout!r}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.tick():
                break
            if on_sample is not None:
                on_sample()
            time.sleep(interval)
        return self.verdict if self.judged else None

    # -- the end -----------------------------------------------------------------------------------------------
    def _expire(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.ended = (f"this run reached its time bound of {self.lifetime_s:g} s: its workers were stopped; "
                          "run the widget's cell again to go on")
        self.run.stop()
        if self.on_expire is not None:
            self.on_expire()

    def close(self) -> None:
        """Stop every worker by its PID and the metronome, drop the run's own queue, close the links."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        self._timer.cancel()
        try:
            self.run.stop()
            if self.own_queue:
                try:
                    jobs.drop(self.reader, self.queue)
                except (*LINK_ERRORS, OSError):
                    pass  # the node went first: nothing left to drop
        finally:
            self.run.close()
            self.reader.close()

    def __enter__(self) -> ChaosRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- inside ------------------------------------------------------------------------------------------------
    def _alive(self) -> None:
        if self.closed:
            raise BadInput("this chaos run is closed: run the widget's cell again for a new one")
        if self.ended:
            raise BadInput(self.ended)

    def _slot(self, slot: int) -> int:
        self._alive()
        if isinstance(slot, bool) or not isinstance(slot, int) or not 0 <= slot < self.run.size:
            raise BadInput(f"no worker slot {slot!r}: the slots are 0 … {self.run.size - 1} "
                           f"(workers w0 … w{self.run.size - 1})")
        return slot

    def _refuse_a_used_queue(self) -> None:
        """The checker judges every job of the queue: one that holds jobs or settles from before is refused."""
        c = self.run.conn.client
        held = {s: int(c.zcard(queue_key(self.queue, s))) for s in SETS}
        settles = int(c.xlen(queue_key(self.queue, "stream:completions")))
        if any(held.values()) or settles:
            what = ", ".join(f"{s} {n}" for s, n in held.items() if n) or f"{settles} settles in its stream"
            raise BadInput(f"the queue {self.queue!r} is in use ({what}): the checker could not tell its jobs from "
                           "this run's; name a fresh queue, or leave queue out for one of the run's own")

    @staticmethod
    def _running(w: Any) -> None:
        if not w.alive:
            raise BadInput(f"{w.name} has ended (exit {w.returncode}): kill puts a new worker in its slot")

    def _acted(self, at_ms: float, kind: str, text: str, slot: int | None = None, worker: str | None = None) -> None:
        """Note an action that happened: a judged round gives way to a new one, and the quiet starts again."""
        with self._lock:
            self._actions += 1
            if self.judged:
                self.round += 1
                self.judged = False
                self.round_start_ms = at_ms
                self.series.clear()
            self.events.append(ChaosEvent(at_ms, kind, text, slot, worker))
            self._last_action_ms = self.clock.now_ms()
            self._empty_since = None
