"""Jobs per second of a pool over 1, 2 and 3 shards of a local Valkey Cluster, as a ratio to one shard.

One queue per shard (its name chosen so that its slot falls on that shard),
N jobs in each, and one worker process per queue running a ``Pool`` of
``--size`` consumer threads until the queue is empty. A process per shard
keeps one Python interpreter's lock from being the thing measured. The clock
runs from a barrier that starts every worker at once to the last one's end.

More shards also means more worker processes, so each row has a control: the
same number of workers, the same jobs, on one shard's queue. The gap between
the two is what the shards add; the control alone is what more clients add.

The cluster is the kit's own: three primaries and a replica each, six
``valkey-server`` processes on this machine. On a 2-core machine the servers,
their replicas and the workers all share two cores, so the ratio says how far
the queue spreads on this box, not how far a cluster of machines would take it.
This is a script, not a test: it prints figures and asserts nothing about time.

    .venv/bin/python bench/bench_cluster.py [--n N] [--size S] [--native]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time

from machine import print_header

from echomq_teach import jobs, snapshots
from echomq_teach.cluster_connector import connect_cluster
from echomq_teach.consumer import Pool
from echomq_teach.nodes.cluster import LocalCluster

DEFAULT_N = 2_000


def _worker(address: dict, wire: int, queue: str, size: int, barrier, out) -> None:
    conn = connect_cluster(address, wire=wire)
    pool = Pool(conn, queue, lambda job: job.payload, size=size, metronome_ms=200, idle_sleep_ms=2)
    try:
        barrier.wait(timeout=60)
        t0 = time.perf_counter()
        report = pool.run(timeout=600, until_idle=True)
        out.put((queue, report.settled, t0, time.perf_counter()))
    finally:
        pool.close()
        conn.close()


def run(cluster: LocalCluster, shards: int, workers: int, n: int, size: int, wire: int, tag: str) -> tuple[float, int]:
    """(jobs/s, jobs settled): ``workers`` pools, spread over the first ``shards`` shards, ``n`` jobs per pool."""
    names = [cluster.queue_on(s, f"bench{tag}s{shards}w{workers}") for s in range(shards)]
    queues = [names[i % shards] for i in range(workers)]  # one per shard, or several pools on one queue
    setup = cluster.connector(wire=wire)
    try:
        for q in queues:
            for i in range(n):
                jobs.enqueue(setup, q, f"p{i}")
        ctx = mp.get_context("spawn")
        barrier, out = ctx.Barrier(len(queues) + 1), ctx.Queue()
        procs = [ctx.Process(target=_worker, args=(cluster.address, wire, q, size, barrier, out)) for q in queues]
        for p in procs:
            p.start()
        try:
            barrier.wait(timeout=120)
            results = [out.get(timeout=900) for _ in procs]
        finally:
            for p in procs:
                p.join(timeout=30)
                if p.is_alive():
                    p.terminate()
        settled = sum(r[1] for r in results)
        seconds = max(r[3] for r in results) - min(r[2] for r in results)
        for q in names:
            if snapshots.snapshot(setup, q).total() != 0:
                raise SystemExit(f"queue {q} was not drained: the bench's workers stopped early")
            jobs.drop(setup, q)
        return settled / seconds, settled
    finally:
        setup.close()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=int(os.environ.get("ECHOMQ_BENCH_N", DEFAULT_N)), help="jobs per queue")
    ap.add_argument("--size", type=int, default=2, help="consumer threads per pool (one pool per shard)")
    ap.add_argument("--native", action="store_true", help="the native executor (EMQ.*) instead of scripts")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is printed")
    args = ap.parse_args(argv[1:])
    if args.n <= 0 or args.size <= 0 or args.repeat <= 0:
        print("--n, --size and --repeat must be positive", file=sys.stderr)
        return 2
    wire = 6 if args.native else 4
    load_before = os.getloadavg()[0]
    cluster = LocalCluster(native=args.native)
    try:
        rows = []
        tag = str(os.getpid())
        for k in (1, 2, 3):
            # interleaved, so that a shared machine's drifting load falls on both columns alike
            rates, controls = [], []
            for _ in range(args.repeat):
                rates.append(run(cluster, k, k, args.n, args.size, wire, tag)[0])
                controls.append(run(cluster, 1, k, args.n, args.size, wire, tag)[0] if k > 1 else rates[-1])
            rows.append((k, statistics.median(rates), k * args.n, statistics.median(controls)))
        start = cluster.start_seconds
    finally:
        cluster.stop()

    print(
        f"The Queue · cluster bench · N={args.n} jobs per worker · pool size {args.size} · "
        f"{'native (EMQ.*)' if args.native else 'scripts'} · median of {args.repeat}"
    )
    print_header("The Queue · cluster bench", f"{args.n} jobs per worker", packages=("redis", "hiredis"))
    print(f"cluster: 3 primaries + 1 replica each on 127.0.0.1, started in {start:.2f} s")
    # other work on a shared machine moves every figure: the 1-minute load, before and after
    print(f"load average: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    print()
    print(f"{'shards':>6}{'workers':>9}{'jobs':>7}{'jobs/s':>9}{'× 1 shard':>11}{'control/s':>11}{'× 1 shard':>11}")
    base = rows[0][1]
    for k, rate, settled, control in rows:
        print(f"{k:>6}{k:>9}{settled:>7}{rate:>9,.0f}{rate / base:>11.2f}{control:>11,.0f}{control / base:>11.2f}")
    print()
    print(
        f"workers: processes, each a Pool of {args.size} on one queue; control: the same workers and jobs on one"
        f" shard's queue. On this {os.cpu_count()}-core machine the six servers and the workers share the cores,"
        " which bounds every ratio here; a cluster of machines gives each shard its own."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
