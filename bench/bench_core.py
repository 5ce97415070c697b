"""Core throughput for one Python client on a fresh local node: enqueue, claim, claim+complete.

Each figure is printed beside a one-round-trip floor measured in the same run
(EVALSHA of ``return 1``), so the ratio says how many round trips' worth of
time a transition costs, whatever the machine. This is a script, not a test:
it prints figures and asserts nothing about time.

    .venv/bin/python bench/bench_core.py [N]      # or ECHOMQ_BENCH_N=N
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from machine import print_header

from echomq_teach import jobs
from echomq_teach.connector import Connector
from echomq_teach.nodes import LocalNode

DEFAULT_N = 10_000
FLOOR_SCRIPT = "return 1"


def rate(n: int, fn: Callable[[], object]) -> float:
    """Operations per second for ``n`` calls of ``fn``."""
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - start)


def floor(conn: Connector, n: int) -> float:
    # the cheapest scripted round trip: EVALSHA through the same client, no keys, no trace
    sha = conn.client.script_load(FLOOR_SCRIPT)
    return rate(n, lambda: conn.client.evalsha(sha, 0))


def measured(conn: Connector, n: int, leg: Callable[[], object]) -> tuple[float, float]:
    """(leg rate, floor rate), the floor taken just before and just after the leg.

    A shared machine's load drifts over seconds; a floor measured beside each
    leg keeps the ratio honest where one floor for the whole run would not.
    """
    k = max(n // 4, 100)
    before = floor(conn, k)
    r = rate(n, leg)
    after = floor(conn, k)
    return r, (before + after) / 2


def main(argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 else int(os.environ.get("ECHOMQ_BENCH_N", DEFAULT_N))
    if n <= 0:
        print("N must be a positive number of jobs", file=sys.stderr)
        return 2
    node = LocalNode()
    try:
        conn = node.connector()
        q = "bench"
        # warm up: scripts loaded, socket open, interpreter paths hot
        for _ in range(200):
            jobs.enqueue(conn, q, "w")
        for _ in range(200):
            c = jobs.claim(conn, q, 30_000)
            jobs.complete(conn, q, c.id, c.attempts)
        whole_floor = floor(conn, n)

        enqueue = measured(conn, n, lambda: jobs.enqueue(conn, q, "payload"))
        claimed: list[jobs.Claimed | None] = []
        claim = measured(conn, n, lambda: claimed.append(jobs.claim(conn, q, 30_000)))
        if not all(claimed):
            print("the claim leg ran dry: every enqueued job should have been claimable", file=sys.stderr)
            return 1
        for c in claimed:  # settle outside the clock, so the next leg starts from an empty queue
            assert c is not None
            jobs.complete(conn, q, c.id, c.attempts)
        for _ in range(n):
            jobs.enqueue(conn, q, "payload")

        def claim_complete() -> None:
            c = jobs.claim(conn, q, 30_000)
            assert c is not None
            jobs.complete(conn, q, c.id, c.attempts)

        both = measured(conn, n, claim_complete)
        conn.close()
    finally:
        node.stop()

    print_header("The Queue · core bench", n, packages=("redis", "hiredis"))
    print("one Python client (redis-py, one socket, no pipelining) on a fresh local valkey-server, wire 4")
    print()
    print(f"{'leg':<24}{'jobs/s':>10}{'µs/job':>9}{'floor/s':>10}{'× floor':>9}  round trips per job")
    print(f"{'floor: EVALSHA return 1':<24}{whole_floor:>10,.0f}{1e6 / whole_floor:>9.1f}{'':>10}{1.0:>9.2f}  1")
    legs = [
        ("enqueue", enqueue, "1 (@enqueue)"),
        ("claim", claim, "2 (EXISTS paused, @claim2)"),
        ("claim+complete", both, "4 (+ HGET parent, @complete)"),
    ]
    for name, (r, fl), trips in legs:
        print(f"{name:<24}{r:>10,.0f}{1e6 / r:>9.1f}{fl:>10,.0f}{fl / r:>9.2f}  {trips}")
    print()
    print("× floor: how many floor round trips one job costs, against the floor measured beside that leg")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
