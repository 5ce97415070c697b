"""The two executors on one native node: the server's own cost per call, script vs native command.

For each leg — ``@claim2`` vs ``EMQ.CLAIM``, ``@complete`` vs ``EMQ.COMPLETE``,
``@retry`` vs ``EMQ.FAIL`` — the server's ``INFO commandstats`` gives the time it
spent per call (``usec_per_call``: ``EVALSHA`` for a script, the command itself
for the native twin). ``echomq_teach.lab.executor_cost.measure`` does the measuring:
two queues of N jobs, one per executor; each leg's N calls per executor cut into
windows, the executors taking turns window by window; each executor's figure is
its median window. The last column shows the range of the ratio over the pairs of
windows that ran side by side.

Both executors run on the same node (a native node; a script runs there as on a
scripted node), so they share one process, one cache and one clock. claim/3's
host-side pause read is left out on both sides: it is the same round trip
whichever executor follows it. This is a script, not a test: it prints figures
and asserts nothing about time.

    .venv/bin/python bench/bench_native.py [N] [WINDOWS]    # or ECHOMQ_BENCH_N, ECHOMQ_BENCH_WINDOWS
"""

from __future__ import annotations

import os
import sys

from machine import print_header

from echomq_teach.lab import executor_cost
from echomq_teach.nodes import LocalNode

DEFAULT_N = 20_000
DEFAULT_WINDOWS = 10
LEGS = ("claim", "complete", "fail")
GOAL = 0.5  # issue 12: the native command at most half the script's server time


def main(argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 else int(os.environ.get("ECHOMQ_BENCH_N", DEFAULT_N))
    windows = int(argv[2]) if len(argv) > 2 else int(os.environ.get("ECHOMQ_BENCH_WINDOWS", DEFAULT_WINDOWS))
    if n <= 0 or windows <= 0 or n % windows:
        print("N and WINDOWS must be positive, N a multiple of WINDOWS", file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    node = LocalNode(native=True)
    try:
        conn = node.connector()
        costs = executor_cost.measure(conn, n, LEGS, windows, prefix="bench")
        version = conn.client.info("server").get("valkey_version", "?")
        conn.close()
    finally:
        node.stop()
    load_after = os.getloadavg()

    print_header("The Queue · native bench", f"{n} calls per executor per leg, in {windows} windows of {n // windows}",
                 packages=("redis",))
    print(f"the node answered valkey {version}; load average (1 min) before {load_before[0]:.2f}, "
          f"after {load_after[0]:.2f}")
    print(f"one native node; queues of N jobs, one per executor; pipelined in batches of {executor_cost.BATCH}")
    print()
    print(f"{'server time per call':<30}{'script µs':>10}{'native µs':>11}{'native/script':>15}   pairs of windows")
    for c in costs:
        pairs = f"{min(c.window_ratios):.2f}–{max(c.window_ratios):.2f}"
        label = f"{c.script} vs {c.native}"
        print(f"{label:<30}{c.script_us:>10.2f}{c.native_us:>11.2f}{c.ratio:>14.2f}×   {pairs}")
    print()
    print(f"{'inner commands per call':<30}{'script':>10}{'native':>11}")
    for c in costs:
        print(f"{c.leg:<30}{c.script_inner:>10.1f}{c.native_inner:>11.1f}")
    print()
    print("usec_per_call is the server's own time per command, inner calls included; each figure is the")
    print("median of the executor's windows. The native command also reads the brand and the pause flag and")
    print("peeks before it pops, but calls no command: it opens the keys itself and replicates its effects")
    print("as plain commands with literal values.")
    worst = max(c.ratio for c in costs)
    print(f"goal native/script ≤ {GOAL}× on every leg: {'met' if worst <= GOAL else 'NOT met'} (highest {worst:.2f}×)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
