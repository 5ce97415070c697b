"""Where a Pool's time goes: per job, the client's CPU, the server's, the round trips, at concurrency 1 and 8.

For each wire (a scripted node, a native node), a ``Pool`` of 1 and of 8
consumers drains N no-op jobs one job per claim and a batch per claim, rounds
interleaved, and each run is taken apart:

* jobs/s, and its inverse: the wall µs one job takes;
* the client's CPU per job, user and system (``os.times`` of this process:
  the consumer threads, the Metronome, the pool's start), and the consumer
  threads' own CPU (``time.thread_time`` summed over them);
* the server's µs per job (``INFO commandstats``: the EVALSHA and ``EMQ.*``
  calls, whose time includes the commands a script runs) and its share of the
  wall time;
* round trips per job: the consumers' ``send_many`` calls (each one round
  trip) over N, and the Metronome's ticks;
* the GIL: with 8 threads, the consumer threads' CPU per job beside one
  thread's at the same batch; what 8 threads add is the cost of handing the
  interpreter lock and the sockets between them.

A script, not a test: it asserts only that every run drained its queue.

    .venv/bin/python bench/bench_pool_profile.py [--n N] [--rounds R] [--batch K]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from typing import Any

from bench_peers import DEFAULT_BATCH, drained, fill, handler
from machine import print_header

from echomq_teach import start_node
from echomq_teach.connector import Connector
from echomq_teach.consumer import Consumer, Pool


def profile_run(conn: Connector, q: str, n: int, size: int, batch: int) -> dict[str, float]:
    fill(conn, q, n)
    conn.client.config_resetstat()
    trips = [0]
    lock = threading.Lock()
    thread_cpu = [0.0]
    original = Consumer.run_within

    def timed_run_within(self: Consumer, *args: Any, **kwargs: Any) -> Any:
        # each consumer thread's own CPU, and every round trip its lane makes
        send = self.conn.send_many

        def counted(entries: Any, tag: str = "pipeline") -> Any:
            with lock:
                trips[0] += 1
            return send(entries, tag)

        self.conn.send_many = counted  # type: ignore[method-assign]
        start = time.thread_time()
        try:
            return original(self, *args, **kwargs)
        finally:
            with lock:
                thread_cpu[0] += time.thread_time() - start

    Consumer.run_within = timed_run_within  # type: ignore[method-assign]
    try:
        t0, wall = os.times(), time.perf_counter()
        pool = Pool(conn, q, handler, size=size, batch=batch)
        report = pool.run(max_jobs=n, timeout=300)
        wall, t1 = time.perf_counter() - wall, os.times()
        pool.close()
    finally:
        Consumer.run_within = original  # type: ignore[method-assign]
    if report.settled != n or report.errors:
        raise SystemExit(f"bench_pool_profile: {q}: {report}")
    stats = conn.client.info("commandstats")
    server = sum(v["usec"] for k, v in stats.items() if k == "cmdstat_evalsha" or k.startswith("cmdstat_EMQ."))
    drained(conn, q, n)
    return {
        "jobs/s": n / wall,
        "wall us": wall / n * 1e6,
        "user us": (t1.user - t0.user) / n * 1e6,
        "sys us": (t1.system - t0.system) / n * 1e6,
        "threads us": thread_cpu[0] / n * 1e6,
        "server us": server / n,
        "trips": trips[0] / n,
        "ticks": float(pool.metronome.ticks),
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=6_000, help="jobs per run")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; the median is printed")
    ap.add_argument("--batch", type=int, default=DEFAULT_BATCH, help="jobs per claim on the batch runs")
    args = ap.parse_args(argv[1:])
    if args.n <= 0 or args.rounds <= 0 or not 0 < args.batch <= 1000:
        print("--n and --rounds must be positive, --batch 1 to 1000", file=sys.stderr)
        return 2
    print_header("The Queue · where a Pool's time goes, per job", args.n, packages=("redis", "hiredis"))
    shapes = [(1, 1), (1, args.batch), (8, 1), (8, args.batch)]
    for native in (False, True):
        wire = 6 if native else 4
        node = start_node(native=native, provider="local")
        try:
            conn = node.connector()
            runs: dict[tuple[int, int], list[dict[str, float]]] = {s: [] for s in shapes}
            for r in range(args.rounds):
                for i, (size, batch) in enumerate(shapes[r % 4:] + shapes[:r % 4]):
                    runs[(size, batch)].append(profile_run(conn, f"prof-{wire}-{r}-{i}", args.n, size, batch))
            conn.close()
        finally:
            node.stop()
        print()
        print(f"wire {wire} ({'native node: EMQ.* commands' if native else 'scripted node: Lua by EVALSHA'}),"
              f" load {os.getloadavg()[0]:.2f}; µs per job, medians of {args.rounds}")
        cols = ["jobs/s", "wall us", "user us", "sys us", "threads us", "server us", "trips", "ticks"]
        heads = ["jobs/s", "wall", "user", "sys", "threads", "server", "trips/job", "ticks"]
        print(f"  {'':<22}" + "".join(f"{h:>10}" for h in heads))
        for size, batch in shapes:
            med = {c: statistics.median(x[c] for x in runs[(size, batch)]) for c in cols}
            cells = [f"{med['jobs/s']:>10,.0f}"] + [f"{med[c]:>10.1f}" for c in cols[1:6]]
            cells += [f"{med['trips']:>10.3f}", f"{med['ticks']:>10.0f}"]
            print(f"  {f'Pool(size={size}, batch={batch})':<22}" + "".join(cells))
    print()
    print("wall: 1e6 ÷ jobs/s; user, sys: this process's CPU; threads: the consumer threads' CPU; server: EVALSHA and")
    print("EMQ.* time in INFO commandstats; trips/job: the consumers' round trips; ticks: the Metronome's, per run")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
