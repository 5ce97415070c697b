"""The two executors on one native node: the server's own cost per call, script vs native command.

For each leg — ``@claim2`` vs ``EMQ.CLAIM``, ``@complete`` vs ``EMQ.COMPLETE``,
``@retry`` vs ``EMQ.FAIL`` — the server's ``INFO commandstats`` gives the time it
spent per call (``usec_per_call``: ``EVALSHA`` for a script, the command itself
for the native twin). ``echomq_teach.executor_cost.measure`` does the measuring:
one window of N calls per executor and leg, right after each other, on two
queues of N jobs. Each round measures every leg both ways (odd rounds native
first); the table keeps each executor's best round, since a machine shared with
other work only ever adds time, and prints every round's ratio.

Both executors run on the same node (a native node; a script runs there as on a
scripted node), so they share one process, one cache and one clock. claim/3's
host-side pause read is left out on both sides: it is the same round trip
whichever executor follows it. This is a script, not a test: it prints figures
and asserts nothing about time.

    .venv/bin/python bench/bench_native.py [N] [ROUNDS]    # or ECHOMQ_BENCH_N, ECHOMQ_BENCH_ROUNDS
"""

from __future__ import annotations

import os
import platform
import sys

import redis
from bench_cluster import cpu_model

from echomq_teach import LocalNode, executor_cost

DEFAULT_N = 20_000
DEFAULT_ROUNDS = 5
LEGS = ("claim", "complete", "fail")
GOAL = 0.5  # issue 12: the native command at most half the script's server time


def main(argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 else int(os.environ.get("ECHOMQ_BENCH_N", DEFAULT_N))
    rounds = int(argv[2]) if len(argv) > 2 else int(os.environ.get("ECHOMQ_BENCH_ROUNDS", DEFAULT_ROUNDS))
    if n <= 0 or rounds <= 0:
        print("N and ROUNDS must be positive", file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    node = LocalNode(native=True)
    try:
        conn = node.connector()
        # every round measures both executors; odd rounds run the native windows first
        runs = [
            executor_cost.measure_round(conn, n, LEGS, f"bench-{r}", native_first=r % 2 == 1) for r in range(rounds)
        ]
        version = conn.client.info("server").get("valkey_version", "?")
        conn.close()
    finally:
        node.stop()
    load_after = os.getloadavg()

    print(f"The Queue · native bench · N={n} calls per executor per leg · {rounds} rounds")
    print(
        f"machine: {platform.machine()} · {os.cpu_count()} cores · {cpu_model()} · "
        f"valkey {version} · Python {platform.python_version()} · redis-py {redis.__version__}"
    )
    print(f"load average (1 min) before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    print(f"one native node; one window per executor and leg, pipelined in batches of {executor_cost.BATCH}")
    print()
    print(f"{'server time per call':<30}{'script µs':>10}{'native µs':>11}{'native/script':>15}   every round")
    worst = 0.0
    for i, top in enumerate(executor_cost.best(runs)):
        legs = [run[i] for run in runs]
        each = " ".join(f"{c.ratio:.2f}" for c in legs)
        worst = max(worst, *(c.ratio for c in legs))
        label = f"{top.script} vs {top.native}"
        print(f"{label:<30}{top.script_us:>10.2f}{top.native_us:>11.2f}{top.ratio:>14.2f}×   {each}")
    print()
    print(f"{'inner commands per call':<30}{'script':>10}{'native':>11}")
    for i, leg in enumerate(LEGS):
        c = runs[0][i]
        print(f"{leg:<30}{c.script_inner:>10.1f}{c.native_inner:>11.1f}")
    print()
    print("usec_per_call is the server's own time per command, inner calls included. The native command")
    print("also reads the brand and the pause flag and peeks before it pops, but calls no command: it opens")
    print("the keys itself and replicates its effects as plain commands with literal values.")
    verdict = "met" if worst <= GOAL else "NOT met"
    print(f"goal native/script ≤ {GOAL}× in every round: {verdict} (worst round {worst:.2f}×)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
