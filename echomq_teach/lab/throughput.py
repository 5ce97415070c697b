"""Where a worker's time goes: jobs/s against batch size and concurrency, on one node (notebook 04).

``drain`` fills a queue with N no-op jobs and times a ``Pool`` draining them,
with three more figures from the same run:

* **round trips**: every send on the pool's consumers' own connectors (a plain
  call, or a pipeline of several: one trip each), counted as they go out;
* **the commands' time**: what ``INFO commandstats`` adds to the transitions
  during the drain (``EVALSHA`` and the ``EMQ.*`` commands: a script's own
  ``redis.call``\\ s are inside its ``EVALSHA``'s time, and counted again under
  their own names, so only the outer calls are summed);
* **the server's CPU**: ``INFO cpu``'s main thread, user and system, over the
  drain: the commands plus everything around them (reading the sockets,
  parsing, writing the replies, the Metronome's ticks).

Each of the two server figures divided by the wall time is the server's share:
the rest of the wall time, the node was waiting for a client.

``stranded`` shows what a batch costs: a worker process claims a batch of k
and dies (SIGKILL) before it settles any; its k leases hold the jobs in active
until they lapse and the reap (the Metronome's sweep) brings them back.

Both read the node's counters, which count every client's calls: measure on a
node of your own, not a shared classroom node. Every run is bounded (at most
``MAX_JOBS`` jobs, a timeout) and every argument is checked before anything is
written.

Python-only, no course counterpart: the course page describes one claim per
call; the batch is the kit's own (docs/decisions.md).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import jobs, snapshots
from ..connector import Connector
from ..consumer import Pool
from ..keyspace import check_queue
from ..nodes.process import Child

MAX_JOBS = 20_000  # one drain stays a few seconds at most
MAX_SIZE = 32  # consumer threads in one pool
MAX_LEASE_MS = 5_000  # stranded() waits one lease out
FILL = 1_000  # @enqueue calls per pipelined round trip when filling


@dataclass(frozen=True)
class Drain:
    """One drain measured: N jobs through a Pool of ``size`` consumers claiming up to ``batch`` per call."""

    wire: int
    size: int
    batch: int
    jobs: int
    seconds: float  # wall time of Pool.run
    trips: int  # the consumers' round trips
    command_us: float  # the transitions' time on the server (commandstats: EVALSHA, EMQ.*)
    cpu_us: float  # the server's main thread CPU, user + system
    calls: dict[str, int]  # the server's commands during the drain, by lowercase name (INFO left out)

    @property
    def jobs_per_s(self) -> float:
        return self.jobs / self.seconds

    @property
    def wall_us(self) -> float:
        """Wall µs per job: 1e6 ÷ jobs/s."""
        return self.seconds * 1e6 / self.jobs

    @property
    def trips_per_job(self) -> float:
        return self.trips / self.jobs

    @property
    def command_share(self) -> float:
        """The transitions' server time as a share of the wall time."""
        return self.command_us / (self.seconds * 1e6)

    @property
    def cpu_share(self) -> float:
        """The server's CPU as a share of the wall time: how busy the node was."""
        return self.cpu_us / (self.seconds * 1e6)


def _noop(job: jobs.Claimed) -> str:
    return "ok"


def _counters(conn: Connector) -> tuple[dict[str, tuple[int, int]], float]:
    """(calls, usec) by lowercase command name, and the main thread's CPU seconds so far."""
    stats = {
        name.lower().removeprefix("cmdstat_"): (int(s["calls"]), int(s["usec"]))
        for name, s in conn.client.info("commandstats").items()
    }
    cpu = conn.client.info("cpu")
    main = ("used_cpu_user_main_thread", "used_cpu_sys_main_thread")
    keys = main if all(k in cpu for k in main) else ("used_cpu_user", "used_cpu_sys")
    return stats, sum(float(cpu[k]) for k in keys)


def _outer(name: str) -> bool:
    # the calls a client sends: a script's inner redis.calls are inside its EVALSHA's time already
    return name in ("evalsha", "evalsha_ro", "eval") or name.startswith("emq.")


def _check_own_queue(conn: Connector, queue: str) -> None:
    check_queue(queue)
    if conn.on_cluster:
        raise jobs.BadInput("a throughput measurement needs a single node: a cluster routes every call on its own")
    held = snapshots.snapshot(conn, queue).total()
    if held:
        raise jobs.BadInput(f"queue {queue!r} already holds {held} jobs: measure on an empty queue of your own")


def fill(conn: Connector, queue: str, n: int) -> list[str]:
    """N no-op jobs in pending, pipelined ``FILL`` at a time (before any clock starts); answers their ids."""
    ids: list[str] = []
    for start in range(0, n, FILL):
        got = jobs.enqueue_many(conn, queue, [f"job {i}" for i in range(start, min(n, start + FILL))])
        bad = [a for a in got if isinstance(a, Exception)]
        if bad:
            raise RuntimeError(f"the node refused an enqueue while filling {queue!r}: {bad[0]}")
        ids += [str(a) for a in got]
    return ids


def drain(conn: Connector, queue: str, n: int = 2_000, size: int = 1, batch: int = 1,
          timeout: float = 60.0) -> Drain:
    """Fill ``queue`` with ``n`` no-op jobs and time a ``Pool(size=size, batch=batch)`` draining them.

    The queue must be empty and is dropped again afterwards. The clock runs
    over ``Pool.run`` (building the pool, forking its connectors, is left out).
    Raises RuntimeError if the pool did not settle every job.
    """
    jobs.positive_int("n", n)
    if n > MAX_JOBS:
        raise jobs.BadInput(f"n must be at most {MAX_JOBS} (a drain stays bounded), got {n}")
    jobs.positive_int("size", size)
    if size > MAX_SIZE:
        raise jobs.BadInput(f"size must be at most {MAX_SIZE} consumers, got {size}")
    jobs.check_batch(batch)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= 600:
        raise jobs.BadInput(f"timeout must be a number of seconds from 0 to 600, got {timeout!r}")
    _check_own_queue(conn, queue)
    try:
        fill(conn, queue, n)
        pool = Pool(conn, queue, _noop, size=size, batch=batch)
        trips0 = sum(c.conn.round_trips for c in pool.consumers)  # each consumer's own: a command, or a pipeline
        try:
            stats0, cpu0 = _counters(conn)
            t0 = time.perf_counter()
            report = pool.run(max_jobs=n, timeout=timeout)
            seconds = time.perf_counter() - t0
            trips = sum(c.conn.round_trips for c in pool.consumers) - trips0
            stats1, cpu1 = _counters(conn)
        finally:
            pool.close()
        if report.settled != n or report.errors:
            raise RuntimeError(f"the pool settled {report.settled} of {n} jobs: {report}")
        calls = {k: c - stats0.get(k, (0, 0))[0] for k, (c, _) in stats1.items() if k != "info"}
        command_us = sum(us - stats0.get(k, (0, 0))[1] for k, (_, us) in stats1.items() if _outer(k))
        return Drain(conn.wire, size, batch, n, seconds, trips, float(command_us), (cpu1 - cpu0) * 1e6,
                     {k: v for k, v in calls.items() if v})
    finally:
        jobs.drop(conn, queue)


def sweep(conn: Connector, queue: str, sizes: Sequence[int] = (1, 8), batches: Sequence[int] = (1, 4, 16, 64),
          n: int = 2_000) -> list[Drain]:
    """One drain per (size, batch), sizes outer: the grid a plot of jobs/s against batch size wants."""
    sizes, batches = list(sizes), list(batches)
    if not sizes or not batches:
        raise jobs.BadInput("sizes and batches must each name at least one value")
    for s in sizes:
        jobs.positive_int("size", s)
        if s > MAX_SIZE:
            raise jobs.BadInput(f"size must be at most {MAX_SIZE} consumers, got {s}")
    for b in batches:
        jobs.check_batch(b)
    jobs.positive_int("n", n)
    if n * len(sizes) * len(batches) > 4 * MAX_JOBS:
        raise jobs.BadInput(f"a sweep drains at most {4 * MAX_JOBS} jobs in all, got {n} × {len(sizes) * len(batches)}")
    return [drain(conn, queue, n, s, b) for s in sizes for b in batches]


def report(drains: Iterable[Drain]) -> str:
    """The drains as a table: one line each."""
    head = ("size", "batch", "jobs/s", "µs/job", "trips/job", "cmd µs/job", "cmd share", "cpu share")
    lines = ["{:>4}{:>7}{:>9}{:>9}{:>11}{:>12}{:>11}{:>11}".format(*head)]
    for d in drains:
        lines.append(
            f"{d.size:>4}{d.batch:>7}{d.jobs_per_s:>9,.0f}{d.wall_us:>9.1f}{d.trips_per_job:>11.3f}"
            f"{d.command_us / d.jobs:>12.1f}{d.command_share:>10.0%}{d.cpu_share:>11.0%}"
        )
    return "\n".join(lines)


def plot(drains: Sequence[Drain], axes: Any = None) -> Any:
    """Two panels: jobs/s against batch size (one line per pool size), and each drain's µs per job split
    into the server's commands, the rest of the server's CPU, and the rest of the wall time.

    ``axes``: two matplotlib axes to draw into; answers the Figure.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import StrMethodFormatter

    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), width_ratios=(1, 1.2))
    else:
        fig = axes[0].figure
    rate, split = axes
    sizes = sorted({d.size for d in drains})
    batches = sorted({d.batch for d in drains})
    for size in sizes:
        line = sorted((d for d in drains if d.size == size), key=lambda d: d.batch)
        rate.plot([d.batch for d in line], [d.jobs_per_s for d in line], marker="o", label=f"Pool(size={size})")
    rate.set_xscale("log", base=2)
    rate.set_xticks(batches, [str(b) for b in batches])
    rate.minorticks_off()
    rate.set_ylim(0, 1.1 * max(d.jobs_per_s for d in drains))
    rate.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    rate.set_xlabel("batch: jobs per claim call")
    rate.set_ylabel("jobs/s")
    rate.set_title("jobs/s", fontsize=10)
    rate.grid(True, alpha=0.3)
    rate.legend()

    # per job: the commands, the server's other work, and the wall time the server was not working
    order = sorted(drains, key=lambda d: (d.size, d.batch))
    cmd = [d.command_us / d.jobs for d in order]
    other = [max(0.0, d.cpu_us - d.command_us) / d.jobs for d in order]
    rest = [max(0.0, d.wall_us - c - o) for d, c, o in zip(order, cmd, other)]
    xs = list(range(len(order)))
    split.bar(xs, cmd, color="#d62728", label="server: the commands (commandstats)")
    split.bar(xs, other, bottom=cmd, color="#ff9896", label="server: the rest of its CPU (sockets, replies)")
    split.bar(xs, rest, bottom=[c + o for c, o in zip(cmd, other)], color="#c7c7c7",
              label="client and the wire (the server idle)")
    split.set_xticks(xs, [f"{d.size}·{d.batch}" for d in order])
    split.set_xlabel("size · batch")
    split.set_ylabel("µs per job")
    split.set_ylim(0, 1.45 * max(c + o + r for c, o, r in zip(cmd, other, rest)))  # room for the legend
    split.set_title("where one job's wall time goes", fontsize=10)
    split.grid(True, axis="y", alpha=0.3)
    split.legend(fontsize=8)
    wires = ", ".join(str(w) for w in sorted({d.wire for d in drains}))
    fig.suptitle(f"draining no-op jobs through a Pool on one node (wire {wires})", fontsize=11)
    fig.tight_layout()
    return fig


# -- what a batch costs ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Stranded:
    """A worker that died holding a batch, and the sweep that brought its jobs back."""

    batch: int
    lease_ms: int
    claimed: list[str]  # the jobs the dead worker's one call took
    exit_signal: int  # how the worker ended (SIGKILL: it never settled)
    active_after_death: list[str]  # in active once it was gone: every lease of the batch still running
    reaped_early: list[str]  # a reap before the leases lapsed: nothing (a lease is a promise)
    reaped: list[str]  # the reap once they lapsed: the whole batch back
    pending_after: list[str]
    waited_ms: float  # from the worker's start to the reap that brought the last of them back


# the doomed worker: its own process, its own link; the node's address (a password too, on a classroom
# node) reaches it in the environment, off the command line
_DOOMED = """
import json, os, signal, sys
from echomq_teach.connector import connect
from echomq_teach import jobs
conn = connect(json.loads(os.environ["ECHOMQ_THROUGHPUT_ADDRESS"]), wire=int(sys.argv[1]))
got = jobs.claim_many(conn, sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
print(" ".join(j.id for j in got), flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # dies holding the batch: no settle goes out
"""


def stranded(conn: Connector, queue: str, batch: int = 8, lease_ms: int = 1_000, jobs_in_queue: int | None = None
             ) -> Stranded:
    """A worker process claims ``batch`` jobs in one call and is killed; the reap brings them back.

    The queue must be empty; it is filled with ``jobs_in_queue`` jobs (twice
    the batch by default), and dropped again at the end. A reap right after the
    death finds no lapsed lease; once ``lease_ms`` has passed, one reap returns
    the whole batch to pending.
    """
    jobs.check_batch(batch)
    jobs.positive_int("lease_ms", lease_ms)
    if lease_ms > MAX_LEASE_MS:
        raise jobs.BadInput(f"lease_ms must be at most {MAX_LEASE_MS} (the call waits one lease out), got {lease_ms}")
    total = 2 * batch if jobs_in_queue is None else jobs.positive_int("jobs_in_queue", jobs_in_queue)
    if total > MAX_JOBS:
        raise jobs.BadInput(f"jobs_in_queue must be at most {MAX_JOBS}, got {total}")
    _check_own_queue(conn, queue)
    try:
        fill(conn, queue, total)
        env = dict(os.environ, ECHOMQ_THROUGHPUT_ADDRESS=json.dumps(conn.address))
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="echomq-stranded-") as folder:
            # the kit's one child process: its stdout (the claimed ids) to us, its stderr to a log
            child = Child([sys.executable, "-c", _DOOMED, str(conn.wire), queue, str(lease_ms), str(batch)],
                          log=Path(folder) / "worker.log", env=env, stdout_pipe=True, text=True,
                          what="the stranded worker")
            try:
                code = child.wait(timeout=60)
                out = child.proc.stdout.read() if child.proc.stdout is not None else ""
            finally:
                child.stop()  # only acts if it still runs (a timeout): no worker is left behind
                if child.proc.stdout is not None:
                    child.proc.stdout.close()
            if code != -signal.SIGKILL:
                raise RuntimeError(f"the worker was to die by SIGKILL, it ended {code}: {child.tail(8)}")
        claimed = out.split()
        snap = snapshots.snapshot(conn, queue)
        active = snap.active
        early = jobs.reap(conn, queue)
        reaped: list[str] = []
        deadline = t0 + 10 * lease_ms / 1000 + 5
        # one reap takes up to 100 lapsed leases, and a batch's leases all lapse at once
        while len(reaped) < len(claimed) and time.monotonic() < deadline:
            time.sleep(lease_ms / 4000)
            reaped += jobs.reap(conn, queue)
        waited = (time.monotonic() - t0) * 1000
        return Stranded(batch, lease_ms, claimed, -code, active, early, reaped,
                        snapshots.snapshot(conn, queue).pending, waited)
    finally:
        jobs.drop(conn, queue)
