"""One case's workload, run twice under the same seeded nemesis: on the model, then on this queue.

``trial(case, node, seed)`` answers a ``Trial`` for each side: the checker's
report (``findings.judge``), the history (for ``lab.timeline``) and the faults
the nemesis applied. The model's workers are processes
(``python -m echomq_teach.lab.models.worker``), each a ``nodes.process.Child``
(as the lab's ``WorkerProcess`` is) that the nemesis freezes, thaws and kills
by its PID; this queue's are the lab's own (``Run``). Both sides get the same jobs, the same
handler work, the same lease, the same schedule of faults, and a supervisor
that starts a worker again in a slot whose process died on its own (a poison
job), as a service manager would. Every run is bounded in time.

This module is the one place the case files import the fault lab's run
harness and nemesis (``Run``, ``Nemesis``, ``Fault``) and the kit's ``Child``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ... import flows, ids, jobs
from ...errors import BadInput
from ...nodes.local import LocalNode
from ...nodes.process import Child
from .. import queue_state
from ..checker import Report
from ..history import History, Recorder, ServerClock
from ..nemesis import Nemesis
from ..run import Fault, Run
from . import CASES, model_for
from .base import Model
from .findings import judge

STOP_WAIT_S = 10.0


@dataclass
class Workload:
    """What both sides run: the jobs (or flows), the workers, the lease, and the nemesis's draw."""

    payloads: list[str] = field(default_factory=list)
    flows: list[tuple[str, list[str]]] = field(default_factory=list)  # (parent payload, child payloads)
    workers: int = 3
    lease_ms: int = 300
    kinds: tuple[str, ...] = ("kill",)
    count: int = 3
    gap_s: tuple[float, float] = (0.1, 0.3)
    freeze_s: tuple[float, float] = (0.5, 0.8)
    must: tuple[str, ...] = ()
    recovery: str = "reap"  # this queue's sweep
    max_attempts: int = jobs.DEFAULT_MAX_ATTEMPTS
    policy: str = "fail"  # this queue's flow policy for every child
    supervise: bool = False  # start a worker again in a slot whose process died by itself
    settle_s: float = 6.0  # how long a side may take to finish once the faults are over
    node_config: dict[str, str] | None = None  # a node of its own (started and stopped by the trial)
    cache: bool = False  # a cache writes keys with a TTL beside the queue (the eviction case)

    def nemesis(self, seed: int) -> Nemesis:
        return Nemesis(seed, kinds=self.kinds, count=self.count, gap_s=self.gap_s, freeze_s=self.freeze_s,
                       must=self.must)


def _work(ms: int, n: int) -> list[str]:
    return [f"work {ms}"] * n


WORKLOADS: dict[str, Workload] = {
    "kombu_restore": Workload(_work(30, 80), workers=3, lease_ms=300, kinds=("freeze", "kill"), count=4,
                              must=("freeze", "freeze"), freeze_s=(0.5, 0.7)),
    "celery_acks_late": Workload(_work(30, 80), workers=3, lease_ms=300, kinds=("kill",), count=3),
    "sidekiq_orphans": Workload(_work(30, 5) + ["poison"] + _work(30, 50), workers=3, lease_ms=300,
                                kinds=("kill",), count=3, recovery="stalled", supervise=True),
    "bull_stall_scan": Workload(_work(5, 200), workers=4, lease_ms=1000, kinds=("freeze",), count=3,
                                gap_s=(0.05, 0.2), freeze_s=(0.05, 0.15)),
    # more workers than long children: a worker is free to claim a parent the failure released too soon
    "bullmq_flow_release": Workload(flows=[("work 5", ["fail", "work 1000", "work 1000"])] * 2, workers=5,
                                    lease_ms=3000, kinds=("freeze",), count=2, gap_s=(0.05, 0.1),
                                    freeze_s=(0.05, 0.1), max_attempts=1, policy="ignore"),
    "bullmq_evicted_locks": Workload(_work(1500, 4), workers=5, lease_ms=5000, kinds=("freeze",), count=1,
                                     gap_s=(0.2, 0.4), freeze_s=(0.05, 0.1), recovery="stalled", settle_s=5.0,
                                     node_config={"maxmemory-policy": "volatile-lru"}, cache=True),
}


@dataclass
class Trial:
    """One side of a case file: its verdict, its history, the faults applied."""

    case: str
    side: str  # "model" or "queue"
    seed: int
    report: Report
    history: History
    faults: list[Fault]
    seconds: float
    #: this queue's side: the breaks of notebook 01's table the queue was left with (``lab.queue_state``)
    state: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.report.valid

    def timeline(self, **kwargs: Any) -> Any:
        from ..timeline import draw

        title = f"{self.case} — {'the model' if self.side == 'model' else 'this queue'} (seed {self.seed})"
        return draw(self.history, self.report, title=kwargs.pop("title", title), **kwargs)

    def __str__(self) -> str:
        faults = ", ".join(str(f) for f in self.faults) or "none"
        return (f"{self.case} on {'the model' if self.side == 'model' else 'this queue'} (seed {self.seed}, "
                f"{self.seconds:.1f} s; faults: {faults})\n{self.report.summary()}")


# -- the model's side -------------------------------------------------------------------------------------
class _Proc(Child):
    """One model worker process: the kit's ``Child`` (tied to this process, reached by its PID), as
    ``lab.worker_process.WorkerProcess`` is for this queue's workers."""

    def __init__(self, run: ModelRun, name: str) -> None:
        self.name = name
        self.folder = run.folder
        cmd = [sys.executable, "-m", "echomq_teach.lab.models.worker", run.case, run.queue, "--name", name,
               "--history", str(run.folder), "--lease-ms", str(run.workload.lease_ms),
               "--timeout", str(run.timeout)]
        env = dict(os.environ, ECHOMQ_ADDRESS=json.dumps(run.address), PYTHONUNBUFFERED="1")
        self._history = run.folder / f"{name}.jsonl"
        super().__init__(cmd, log=run.folder / f"{name}.log", env=env, what=f"model worker {name}")

    def _started(self) -> bool:
        try:
            return '"op":"start"' in self._history.read_text()
        except OSError:
            return False

    def wait_ready(self, timeout: float = 30.0) -> None:  # type: ignore[override]
        """Until the worker recorded its start; a ``ChildError`` with its log's tail if it never does."""
        super().wait_ready(self._started, timeout)

    def child(self) -> int | None:
        """The pool child running a task now (a celery-like model writes its PID), checked to be ours."""
        try:
            pid = int((self.folder / f"{self.name}.child").read_text())
            status = Path(f"/proc/{pid}/status").read_text()
        except (OSError, ValueError):
            return None
        ppid = next((int(ln.split()[1]) for ln in status.splitlines() if ln.startswith("PPid:")), None)
        return pid if ppid == self.pid else None

    def stop(self, grace: float = STOP_WAIT_S) -> int:
        """SIGCONT (should it be frozen) and SIGTERM: it ends after its beat; SIGKILL if it will not go."""
        return super().stop(grace)


class ModelRun:
    """The model's workers under a nemesis, and its metronome: a ``nemesis.Target``, as the lab's ``Run`` is."""

    #: no Pump: the model's own sweep promotes, if it promotes at all
    pump = False

    def __init__(self, case: str, node: Any, queue: str, workload: Workload, folder: Path,
                 timeout: float = 60.0) -> None:
        self.case, self.node, self.queue, self.workload, self.folder = case, node, queue, workload, folder
        self.address = dict(node.address)
        self.timeout = timeout
        self.size = workload.workers
        self.model: Model = model_for(case, queue, workload.lease_ms)
        self.r = node.client()
        clock = ServerClock(SimpleNamespace(client=self.r))
        self.producer = Recorder(folder, "producer", clock)
        self.nemesis = Recorder(folder, "nemesis", clock)
        self._clock = clock
        self.slots: list[_Proc | None] = [None] * self.size
        self.all: list[_Proc] = []
        self._gen = [0] * self.size
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def produce(self) -> None:
        w = self.workload
        for payload in w.payloads:
            job = ids.mint()
            self.producer.call("enqueue", lambda job=job, payload=payload: self.model.enqueue(self.r, job, payload),
                               job=job)
        for parent, children in w.flows:
            pid, kids = ids.mint(), [(ids.mint(), c) for c in children]
            self.producer.enqueue_flow(pid, [k for k, _ in kids], self.model.enqueue_flow, self.r, (pid, parent), kids)

    def spawn(self, slot: int) -> _Proc:
        g = self._gen[slot]
        self._gen[slot] += 1
        p = _Proc(self, f"w{slot}" + ("" if g == 0 else chr(ord("a") + g % 26) * (1 + g // 26)))
        self.slots[slot] = p
        self.all.append(p)
        return p

    def start(self) -> None:
        procs = [self.spawn(i) for i in range(self.size)]
        for p in procs:
            p.wait_ready()
        self._threads = [threading.Thread(target=self._tick, daemon=True)]
        if self.workload.supervise:
            self._threads.append(threading.Thread(target=self._supervise, daemon=True))
        for t in self._threads:
            t.start()

    def _tick(self) -> None:
        r = self.node.client()
        rec = Recorder(self.folder, "metronome", self._clock)
        try:
            while not self._stop.wait(0.05):
                if type(self.model).sweep is not Model.sweep:
                    rec.call(self.model.sweep_op, lambda: _sweep_reply(self.model, r))
        finally:
            rec.close()
            r.close()

    def _supervise(self) -> None:
        while not self._stop.wait(0.1):
            with self.lock:
                for i, p in enumerate(self.slots):
                    if p is not None and not p.alive and not self._stop.is_set():
                        self.spawn(i)

    # -- what Nemesis.run calls --------------------------------------------------------------------
    def apply(self, fault: Fault) -> None:
        with self.lock:
            p = self.slots[fault.slot or 0]
            assert p is not None
            if fault.kind == "kill":
                if self.model.kill_target == "child" and self._kill_child(p):
                    return
                self.nemesis.note("kill", worker=p.name, pid=p.pid, child=False)
                p.kill()  # SIGKILL by its PID, reaped
                self.spawn(fault.slot or 0)
            elif fault.kind == "freeze":
                self.nemesis.note("freeze", worker=p.name, pid=p.pid)
                p.freeze()
            else:
                raise BadInput(f"the case files use kill and freeze, not {fault.kind!r}")

    def _kill_child(self, p: _Proc) -> bool:
        """SIGKILL the pool child running a task in ``p`` (its parent lives on); False when none was found.

        A child can end its task between being found and being signalled: then the next one is looked for."""
        for _ in range(3):
            child = self._running_child(p)
            if child is None:
                return False
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                continue  # it finished its task a moment ago: look for the next one
            # noted once it landed (a kill that missed is no fault of the run)
            self.nemesis.note("kill", worker=p.name, pid=child, child=True)
            return True
        return False

    @staticmethod
    def _running_child(p: _Proc, wait_s: float = 1.0) -> int | None:
        """The pool child running a task in ``p``, waited for a moment if ``p`` is between tasks.

        The OOM killer strikes a process whose task is growing, not an idle parent: on a loaded
        machine a worker spends much of its time between children, and a kill that found none
        would hit the parent instead and show nothing of the report.
        """
        deadline = time.monotonic() + wait_s
        while (child := p.child()) is None and p.alive and time.monotonic() < deadline:
            time.sleep(0.005)
        return child

    def thaw(self, slot: int) -> None:
        with self.lock:
            p = self.slots[slot]
            if p is not None:
                self.nemesis.note("thaw", worker=p.name, pid=p.pid)
                p.thaw()

    def quiet(self) -> bool:
        f = self.model.final(self.r)
        return not (f.sets["pending"] or f.sets["active"])

    def stop(self) -> None:
        self._stop.set()
        with self.lock:
            for p in self.all:
                p.stop()
        for t in self._threads:
            t.join(timeout=STOP_WAIT_S)

    def close(self) -> None:
        self.stop()
        self.producer.close()
        self.nemesis.close()
        self.r.close()


def _sweep_reply(model: Model, r: Any) -> Any:
    got = model.sweep(r)
    return {"requeued": got, "dead": []} if model.sweep_op == "stalled" else got


# -- the eviction case's node and cache -----------------------------------------------------------------
class _Cache:
    """An application's cache on the same node: 2 KB values with a TTL, written at a steady rate."""

    def __init__(self, node: Any, rate_per_s: int = 1000) -> None:
        self.r = node.client()
        self.rate = rate_per_s
        self._stop = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        value, i = "x" * 2048, 0
        while not self._stop.wait(0.05):
            p = self.r.pipeline(transaction=False)
            for _ in range(self.rate // 20):
                p.set(f"cache:{i}", value, ex=600)
                i += 1
            try:
                p.execute()
            except Exception:  # noqa: BLE001 - a full node refuses a write now and then: the cache goes on
                pass

    def stop(self) -> None:
        self._stop.set()
        self.t.join(timeout=STOP_WAIT_S)
        self.r.close()


def _own_node(config: dict[str, str]) -> LocalNode:
    """A node for this case alone: the given policy, and a memory cap 2 MB above what it holds empty."""
    node = LocalNode(extra_config=config)
    c = node.client()
    try:
        used = int(c.info("memory")["used_memory"])
        c.config_set("maxmemory", str(used + 2 * 1024 * 1024))
    finally:
        c.close()
    return node


# -- one trial ---------------------------------------------------------------------------------------------
def trial(case: str, node: Any, seed: int, side: str = "model", *, queue: str | None = None,
          run_options: dict[str, Any] | None = None) -> Trial:
    """Run ``case``'s workload on ``side`` ("model" or "queue") under ``Nemesis(seed)``; judge it.

    ``run_options`` go to this queue's ``Run`` (``scripts``, ``beat``: a queue of your own on the same workload)."""
    if case not in CASES:
        raise BadInput(f"unknown case {case!r}: the cases are {CASES}")
    if side not in ("model", "queue"):
        raise BadInput(f"side must be 'model' or 'queue', got {side!r}")
    w = WORKLOADS[case]
    own = _own_node(w.node_config) if w.node_config else None
    target = own or node
    queue = queue or f"case-{case.replace('_', '-')}-{side}-{seed}"
    folder = Path(tempfile.mkdtemp(prefix="echomq-case-"))
    cache = None
    t0 = time.monotonic()
    try:
        if w.cache:
            cache = _Cache(target)
            time.sleep(1.5)  # the cache fills the node before the jobs come
        if side == "model":
            return _model_side(case, target, queue, seed, w, folder, t0)
        return _queue_side(case, target, queue, seed, w, folder, t0, run_options or {})
    finally:
        if cache is not None:
            cache.stop()
        if own is not None:
            own.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _model_side(case: str, node: Any, queue: str, seed: int, w: Workload, folder: Path, t0: float) -> Trial:
    run = ModelRun(case, node, queue, w, folder)
    try:
        run.model.drop(run.r)
        run.produce()
        run.start()
        faults = w.nemesis(seed).run(run, deadline_s=20)
        deadline = time.monotonic() + w.settle_s
        while time.monotonic() < deadline and not run.quiet():
            time.sleep(0.05)
        run.stop()
        time.sleep(run.model.settle_after_stop)
        history = History.read(folder)
        final = run.model.final(run.r)
        report = judge(history, final)
        run.model.drop(run.r)
        return Trial(case, "model", seed, report, history, faults, time.monotonic() - t0)
    finally:
        run.close()


class _Supervised:
    """This queue's ``Run`` as the nemesis sees it (a ``nemesis.Target``), with faults and the supervisor
    taking turns."""

    def __init__(self, run: Run, lock: threading.Lock) -> None:
        self.run, self.lock = run, lock
        self.size, self.nemesis, self.pump = run.size, run.nemesis, run.pump

    def apply(self, fault: Fault) -> None:
        with self.lock:
            self.run.apply(fault)

    def thaw(self, slot: int) -> None:
        with self.lock:
            self.run.thaw(slot)


def _queue_side(case: str, node: Any, queue: str, seed: int, w: Workload, folder: Path, t0: float,
                run_options: dict[str, Any]) -> Trial:
    lock, done = threading.Lock(), threading.Event()
    with Run(node, queue, workers=w.workers, handler="echomq_teach.lab.models.base:case_handler",
             lease_ms=w.lease_ms, max_attempts=w.max_attempts, recovery=w.recovery, tick_ms=50,
             folder=folder, timeout=60, **run_options) as run:
        jobs.drop(run.conn, queue)
        if w.payloads:
            run.produce(len(w.payloads), payload=lambda i: w.payloads[i])
        for parent, children in w.flows:
            pid, kids = ids.mint(), [(ids.mint(), c) for c in children]
            run.producer.enqueue_flow(pid, [k for k, _ in kids], flows.add, run.conn, queue, (pid, parent), kids,
                                      w.policy)
        run.start()

        def supervise() -> None:
            while not done.wait(0.1):
                with lock:
                    if any(p is not None and not p.alive and not p.frozen for p in run.slots):
                        run.start()

        sup = threading.Thread(target=supervise, daemon=True)
        if w.supervise:
            sup.start()
        try:
            faults = w.nemesis(seed).run(_Supervised(run, lock), deadline_s=20)
            run.wait_drained(w.settle_s)
        finally:
            done.set()
            if sup.is_alive():
                sup.join(timeout=STOP_WAIT_S)
        run.stop()
        report = judge(run.history(), run.final_state(), recorded=run.record)
        history = run.history()
        state = [str(b) for b in queue_state.read(run.conn, queue, settled=queue_state.completed_in(history))]
        jobs.drop(run.conn, queue)
    return Trial(case, "queue", seed, report, history, faults, time.monotonic() - t0, state)


def both(case: str, node: Any, seed: int) -> tuple[Trial, Trial]:
    """The case's workload on the model, then on this queue, under the same ``Nemesis(seed)``."""
    return trial(case, node, seed, "model"), trial(case, node, seed, "queue")


__all__ = ["WORKLOADS", "Trial", "Workload", "both", "trial"]
