"""Our consumers beside BullMQ-Python's Worker: jobs/s draining the same N jobs, same node, same run.

Each executor gets its node from the kit's ``start_node`` (a scripted node for
wire 4, a native one for wire 6: each executor keeps its own node), and on each
node, in every round, the same N jobs are drained by:

* BullMQ-Python's ``Worker`` at concurrency 1 and 8 (its own asyncio loop, in
  this process; jobs added beforehand with ``addBulk``, ``removeOnComplete``
  so a finished job's row goes, as ours does);
* our ``Pool`` of 1 and of 8 consumer threads, with its shortcuts (promote and
  reap on the Metronome's tick, native reads on wire 6, a settle pipelined with
  the next claim, the hiredis parser: ``echomq_teach.shortcuts``);
* for reference, the standalone ``Consumer`` (the page's beat: promote, reap,
  pause read, claim, parent read, settle) and ``Pool(shortcuts=False)``.

Each handler answers at once, so the figures are the queue's own cost. The
clock runs from building the worker (or pool) to the N-th settle. The table
holds the median of the rounds (interleaved, so a shared machine's drifting
load falls on every column alike) and the median of each round's ratio to
BullMQ at the same concurrency; the floor is one EVALSHA of ``return 1`` per round trip, through
redis-py, for scale. A script, not a test: it asserts only that every run
drained its queue.

    .venv/bin/python bench/bench_peers.py [--n N] [--rounds R]     # needs: pip install -e '.[bench]'
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable

from machine import print_header

from echomq_teach import jobs, scripts, snapshots, start_node
from echomq_teach.connector import Connector
from echomq_teach.consumer import Consumer, Pool

DEFAULT_N = 3_000
ADD_BATCH = 500


def handler(job: jobs.Claimed) -> str:
    return "ok"


def fill(conn: Connector, q: str, n: int) -> None:
    """N jobs in pending by @enqueue, pipelined (outside the clock)."""
    sha = conn.client.script_load(scripts.load("enqueue").source)
    pending = f"emq:{{{q}}}:pending"
    for start in range(0, n, ADD_BATCH):
        pipe = conn.client.pipeline(transaction=False)
        for i in range(start, min(n, start + ADD_BATCH)):
            job_id = f"JOB{i:011d}"
            pipe.evalsha(sha, 2, pending, f"emq:{{{q}}}:job:{job_id}", job_id, f"job {i}")
        pipe.execute()


def drained(conn: Connector, q: str, n: int) -> None:
    snap = snapshots.snapshot(conn, q)
    if snap.completed != n or snap.total():
        raise SystemExit(f"bench_peers: {q} did not drain: {snap.completed} completed, {snap.sizes()} left")


def ours(conn: Connector, q: str, n: int, make: Callable[[], Consumer | Pool]) -> float:
    fill(conn, q, n)
    t = time.perf_counter()
    worker = make()
    report = worker.run(max_jobs=n, timeout=300)
    seconds = time.perf_counter() - t
    if isinstance(worker, Pool):
        worker.close()
    if report.settled != n or report.errors:
        raise SystemExit(f"bench_peers: {q}: {report}")
    drained(conn, q, n)
    return n / seconds


async def _bull(url: str, q: str, n: int, concurrency: int) -> float:
    import bullmq

    queue = bullmq.Queue(q, {"connection": url})
    for start in range(0, n, ADD_BATCH):
        batch = range(start, min(n, start + ADD_BATCH))
        await queue.addBulk([{"name": "j", "data": {"i": i}, "opts": {"removeOnComplete": True}} for i in batch])
    done = asyncio.Event()
    count = [0]

    def completed(*_: object) -> None:
        count[0] += 1
        if count[0] >= n:
            done.set()

    async def process(job: object, token: str) -> str:
        return "ok"

    t = time.perf_counter()
    worker = bullmq.Worker(q, process, {"connection": url, "concurrency": concurrency})
    worker.on("completed", completed)
    await asyncio.wait_for(done.wait(), 300)
    seconds = time.perf_counter() - t
    await worker.close()
    counts = await queue.getJobCounts("wait", "active", "delayed", "failed")
    await queue.obliterate(force=True)
    await queue.close()
    if any(counts.values()):
        raise SystemExit(f"bench_peers: BullMQ queue {q} did not drain: {counts}")
    return n / seconds


def bull(url: str, q: str, n: int, concurrency: int) -> float:
    return asyncio.run(_bull(url, q, n, concurrency))


def floor(conn: Connector, n: int = 2_000) -> float:
    sha = conn.client.script_load("return 1")
    t = time.perf_counter()
    for _ in range(n):
        conn.client.evalsha(sha, 0)
    return n / (time.perf_counter() - t)


COLUMNS = [
    # (label, BullMQ concurrency it is compared with)
    ("BullMQ Worker(concurrency=1)", 1),
    ("BullMQ Worker(concurrency=8)", 8),
    ("Pool(size=1), shortcuts", 1),
    ("Pool(size=8), shortcuts", 8),
    ("Consumer.run (the page's beat)", 1),
    ("Pool(size=1, shortcuts=False)", 1),
    ("Pool(size=8, shortcuts=False)", 8),
]


def one_round(node_conn: Connector, url: str, n: int, tag: str) -> dict[str, float]:
    c = node_conn
    run = {
        COLUMNS[0][0]: lambda q: bull(url, q, n, 1),
        COLUMNS[1][0]: lambda q: bull(url, q, n, 8),
        COLUMNS[2][0]: lambda q: ours(c, q, n, lambda: Pool(c, q, handler, size=1)),
        COLUMNS[3][0]: lambda q: ours(c, q, n, lambda: Pool(c, q, handler, size=8)),
        COLUMNS[4][0]: lambda q: ours(c, q, n, lambda: Consumer(c, q, handler)),
        COLUMNS[5][0]: lambda q: ours(c, q, n, lambda: Pool(c, q, handler, size=1, shortcuts=False)),
        COLUMNS[6][0]: lambda q: ours(c, q, n, lambda: Pool(c, q, handler, size=8, shortcuts=False)),
    }
    out = {"floor": floor(c)}
    for i, (label, fn) in enumerate(run.items()):
        out[label] = fn(f"peers-{tag}-{i}")
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=int(os.environ.get("ECHOMQ_BENCH_N", DEFAULT_N)), help="jobs per run")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; the median is printed")
    args = ap.parse_args(argv[1:])
    if args.n <= 0 or args.rounds <= 0:
        print("--n and --rounds must be positive", file=sys.stderr)
        return 2
    try:
        import bullmq  # noqa: F401 - only asked whether it is there
    except ImportError:
        print("bench_peers: skipped: bullmq is not installed (pip install -e '.[bench]')")
        return 0

    print_header("The Queue · peers bench: our consumers beside BullMQ-Python, same node, same run", args.n)
    print(f"{args.rounds} rounds, interleaved; the median of each; every handler answers at once")
    for native in (False, True):
        wire = 6 if native else 4
        node = start_node(native=native, provider="local")
        try:
            conn = node.connector()
            rounds = [one_round(conn, node.url, args.n, f"{wire}-{r}") for r in range(args.rounds)]
            conn.close()
        finally:
            node.stop()
        med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        print()
        print(f"wire {wire} ({'native node: EMQ.* commands' if native else 'scripted node: Lua by EVALSHA'})"
              f" · floor {med['floor']:,.0f} round trips/s (EVALSHA return 1)")
        print(f"  {'':<32}{'jobs/s':>9}{'× BullMQ':>10}{'÷ floor':>9}   each round (jobs/s, × BullMQ)")
        for label, conc in COLUMNS:
            peer = COLUMNS[0][0] if conc == 1 else COLUMNS[1][0]
            # × BullMQ pairs each run with BullMQ's in the same round, a few seconds apart: a shared
            # machine's load moves both alike, so the median of those ratios is steadier than a ratio of medians
            ratios = [r[label] / r[peer] for r in rounds]
            each = "  ".join(f"{r[label]:,.0f} {x:.2f}" for r, x in zip(rounds, ratios))
            ratio, trips = statistics.median(ratios), med[label] / med["floor"]
            print(f"  {label:<32}{med[label]:>9,.0f}{ratio:>10.2f}{trips:>9.2f}   {each}")
    print()
    print("× BullMQ: the median over the rounds of jobs/s ÷ BullMQ's Worker at the same concurrency, on the same")
    print("node, in the same round; ÷ floor: jobs/s ÷ EVALSHA round trips/s (1.00: a job per plain round trip)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
