"""What a failover loses, with and without WAIT, judged by the history checker; and what WAIT costs.

Each round is one ``failover.failover`` on a local cluster (three primaries,
a replica each, trafikey everywhere): queues on one shard, each drained by
its own worker processes, one with no WAIT, one with ``WAIT 1 2000`` after
every write, one with ``WAIT 1 50`` (a timeout shorter than the window); the
shard's primary is killed by SIGKILL mid-run, its replica promoted, the
killed node brought back as a replica, and each queue's run judged.

Two kinds of rounds:

* **as it comes** — the kill at a moment of the run, nothing widened: the
  replica is a fraction of a millisecond behind its primary on loopback;
* **held** — ``CLIENT PAUSE <ms> WRITE`` on the replica first (it receives its
  primary's stream and applies none of it), the kill 0.4 s later, and a burst
  of 20 enqueues in between: the window widened on purpose.

Then the cost: jobs/s of three worker processes draining N jobs with no
fault, with and without ``WAIT 1 500``. A script, not a test: it prints
figures (machine, versions, N) and asserts nothing about time.

    .venv/bin/python bench/bench_failover.py [--rounds R] [--jobs N] [--rate-jobs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import defaultdict

from machine import print_header

from echomq_teach.lab.failover import drain_rate, failover
from echomq_teach.nodes.cluster import LocalCluster

MODES = {"no WAIT": None, "WAIT 1 2000": (1, 2000), "WAIT 1 50": (1, 50)}
COLUMNS = ("verdict", "lost", "settled_twice", "double_handouts", "unrecorded", "ran twice+", "unknown outcomes",
           "old leases", "uncounted", "wait short")


def rounds(cluster: LocalCluster, kind: str, n: int, jobs_n: int) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for i in range(n):
        queues = {cluster.queue_on(i % 3, f"{kind.split()[0]}{i}m{m}"): wait
                  for m, wait in enumerate(MODES.values())}
        held = {"hold_ms": 2500} if kind == "held" else {"burst": 0}
        t0 = time.monotonic()
        runs = failover(cluster, queues, jobs_n=jobs_n, **held)
        for (mode, _), f in zip(MODES.items(), runs.values()):
            fig = f.figures()
            fig["in window"] = sum(f.in_window(x) for x in f.report.findings)
            fig["findings"] = len(f.report.findings)
            fig["hidden note"] = bool(f.report.notes)
            out[mode].append(fig)
        promo = next(iter(runs.values())).promotion_s
        print(f"  {kind} round {i + 1}: {time.monotonic() - t0:.1f} s, promotion {promo:.2f} s", flush=True)
    return out


def table(kind: str, results: dict[str, list[dict]]) -> None:
    print(f"\n{kind}: per mode, each round's figures (verdict: valid/invalid)")
    print(f"{'mode':<12} " + " ".join(f"{c:>16}" for c in COLUMNS) + f" {'in window':>10}")
    for mode, figs in results.items():
        for fig in figs:
            print(f"{mode:<12} " + " ".join(f"{str(fig[c]):>16}" for c in COLUMNS)
                  + f" {fig['in window']:>4}/{fig['findings']:<5}")
        invalid = sum(1 for f in figs if f["verdict"] == "invalid")
        print(f"{mode:<12} invalid in {invalid}/{len(figs)} rounds; lost {sum(f['lost'] for f in figs)}, "
              f"settled twice {sum(f['settled_twice'] for f in figs)}, double hand-outs "
              f"{sum(f['double_handouts'] for f in figs)}, handler ran twice+ {sum(f['ran twice+'] for f in figs)}; "
              f"old leases {sum(f['old leases'] for f in figs)}, uncounted {sum(f['uncounted'] for f in figs)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--rate-jobs", type=int, default=600)
    args = ap.parse_args()
    print_header("The Queue · failover bench", f"{args.rounds} rounds of each kind, {args.jobs} jobs a queue",
                 packages=("redis",))
    cluster = LocalCluster(native=True)
    try:
        print(f"cluster of {len(cluster.nodes)} nodes; {args.rounds} rounds of each kind, {args.jobs} jobs a queue, "
              "3 workers a queue, work 10 ms a job, lease 1.5 s, native stall sweep every 50 ms")
        for kind in ("as it comes", "held"):
            table(kind, rounds(cluster, kind, args.rounds, args.jobs))
        rates: dict[str, list[float]] = {"no WAIT": [], "WAIT 1 500": []}
        for i in range(3):
            for mode, wait in (("no WAIT", None), ("WAIT 1 500", (1, 500))):
                rates[mode].append(drain_rate(cluster, cluster.queue_on(0, f"rate{i}"), jobs_n=args.rate_jobs,
                                              wait=wait))
        plain, waited = (statistics.median(rates[m]) for m in rates)
        print(f"\nWAIT's cost: 3 worker processes, {args.rate_jobs} jobs, no handler work, median of 3")
        for mode, rs in rates.items():
            print(f"  {mode:<11} {statistics.median(rs):7.0f} jobs/s  (runs: {', '.join(f'{r:.0f}' for r in rs)})")
        print(f"  with WAIT: {waited / plain:.2f} of the jobs/s without it")
    finally:
        cluster.stop()
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
