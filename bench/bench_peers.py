"""Our consumers beside BullMQ on Node.js (and BullMQ-Python): jobs/s draining the same N jobs, same node, same run.

Each executor gets its node from the kit's ``start_node`` (a scripted node for
wire 4, a native one for wire 6: each executor keeps its own node), and on each
node, in every round, the same N no-op jobs are drained by:

* BullMQ on Node.js (npm ``bullmq`` 5, the version ``bench/bullmq_node/package-lock.json``
  holds, installed by this bench with ``npm ci`` into ``bench/bullmq_node/node_modules``):
  ``bench/bullmq_node/drain.js`` drains 300 jobs untimed (V8 compiles the Worker's path, the
  node loads BullMQ's scripts), adds the N jobs with ``addBulk``, then a ``Worker`` with
  ``removeOnComplete`` drains them at concurrency 1 and 8 — the anchor;
* BullMQ-Python's ``Worker`` at concurrency 1 and 8 (asyncio, in this process);
* our ``Pool`` of 1 and of 8 consumer threads with its shortcuts, one job per
  claim (``batch=1``) and a batch per claim (``batch=K``: ``jobs.claim_many``,
  the batch's settles pipelined with the next batch claim);
* for reference, the standalone ``Consumer`` (the page's beat) and
  ``Pool(shortcuts=False)``.

Concurrency is the number of handlers running at once (a BullMQ Worker's
``concurrency``, a Pool's ``size``); the batch is how many jobs one claim call
hands out (BullMQ fetches one at a time). Each handler answers at once, so the
figures are the queues' own cost. The clock runs from building the worker (or
pool) to the N-th settle. Rounds are interleaved (each round runs every path,
in an order that turns by one each round), so a shared machine's drifting
load falls on every path alike; the table holds each path's median and the
median of its per-round ratio to BullMQ on Node.js at the same concurrency.

The node's ceiling is measured in every round too: N claims, then N
completes, each pipelined, with ``INFO commandstats`` read after each; the
server's µs per claim plus per complete makes one job's server time, and
1 ÷ that is the jobs/s the node could give if clients cost nothing. Each
path's jobs/s is printed as a share of it. (A batch claim costs the server
less per job than the page's one-job claim, so the same figure for a batch is
printed beside it.) A script, not a test: it asserts only that every run
drained its queue.

    .venv/bin/python bench/bench_peers.py [--n N] [--rounds R] [--batch K]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from machine import print_header

from echomq_teach import jobs, scripts, snapshots, start_node, transitions
from echomq_teach.connector import Connector
from echomq_teach.consumer import Consumer, Pool

DEFAULT_N = 3_000
DEFAULT_BATCH = 50
ADD_BATCH = 500
NODE_FOLDER = Path(__file__).resolve().parent / "bullmq_node"
NODE_ANCHOR = "BullMQ Node.js Worker"


def handler(job: jobs.Claimed) -> str:
    return "ok"


# -- the jobs ------------------------------------------------------------------------------------------
def fill(conn: Connector, q: str, n: int) -> None:
    """N jobs in pending by @enqueue, pipelined (outside the clock)."""
    conn.client.script_load(scripts.load("enqueue").source)
    for start in range(0, n, ADD_BATCH):
        pipe = conn.client.pipeline(transaction=False)
        for i in range(start, min(n, start + ADD_BATCH)):
            pipe.execute_command(*transitions.enqueue(q, f"JOB{i:011d}", f"job {i}").words(False))
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


# -- BullMQ on Node.js -----------------------------------------------------------------------------------
def node_ready() -> str:
    """'' when ``node`` and the locked ``bullmq`` are ready (installing it with ``npm ci`` if need be), else why not."""
    if not shutil.which("node") or not shutil.which("npm"):
        return "node and npm are not installed (Debian: apt-get install nodejs npm)"
    lock = json.loads((NODE_FOLDER / "package-lock.json").read_text())
    want = lock["packages"]["node_modules/bullmq"]["version"]
    installed = NODE_FOLDER / "node_modules" / "bullmq" / "package.json"
    if installed.exists() and json.loads(installed.read_text()).get("version") == want:
        return ""
    print(f"bench_peers: installing bullmq {want} for Node.js (npm ci in {NODE_FOLDER.name}/)", flush=True)
    done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE_FOLDER,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not installed.exists():
        return f"npm ci failed: {(done.stderr or done.stdout).strip()[-400:]}"
    return ""


def bull_node(url: str, q: str, n: int, concurrency: int) -> float:
    env = dict(os.environ, ECHOMQ_BENCH_URL=url)  # the password stays off the command line
    done = subprocess.run(["node", str(NODE_FOLDER / "drain.js"), q, str(n), str(concurrency)], env=env,
                          capture_output=True, text=True, timeout=330)
    if done.returncode != 0:
        raise SystemExit(f"bench_peers: BullMQ on Node.js, queue {q}: {done.stderr.strip()[-800:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if any(out["left"].values()):
        raise SystemExit(f"bench_peers: BullMQ on Node.js queue {q} did not drain: {out['left']}")
    return float(out["jobs_per_s"])


# -- BullMQ-Python ------------------------------------------------------------------------------------------
async def _bull_python(url: str, q: str, n: int, concurrency: int) -> float:
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
        raise SystemExit(f"bench_peers: BullMQ-Python queue {q} did not drain: {counts}")
    return n / seconds


def bull_python(url: str, q: str, n: int, concurrency: int) -> float:
    return asyncio.run(_bull_python(url, q, n, concurrency))


# -- the node's ceiling ----------------------------------------------------------------------------------------
def _server_us(conn: Connector, command: str) -> float:
    """µs per call of ``command`` since the last CONFIG RESETSTAT (0.0 if it never ran)."""
    stats = conn.client.info("commandstats")
    row = stats.get(f"cmdstat_{command}") or {}
    return float(row.get("usec_per_call", 0.0))


def ceiling(conn: Connector, q: str, n: int, batch: int) -> tuple[float, float]:
    """The server's µs per job: (one-job claim + complete, batch claim per job + complete), from commandstats.

    N jobs are claimed one call each, then completed; then N more are claimed in
    batches of ``batch`` and completed. Each phase is pipelined 500 calls at a
    time and read alone (``CONFIG RESETSTAT`` before it), so the figures are
    the commands' own execution time on the node, with no client in them.
    """
    native = conn.native
    for name in ("claim2", "claim_many", "complete"):
        conn.client.script_load(scripts.load(name).source)  # what the scripted executor's EVALSHA runs

    def run(calls: list[list[object]]) -> list[object]:
        out: list[object] = []
        for start in range(0, len(calls), 500):
            pipe = conn.client.pipeline(transaction=False)
            for c in calls[start:start + 500]:
                pipe.execute_command(*c)
            out += pipe.execute()
        return out

    def per_call(phase: Callable[[], object], name: str) -> float:
        conn.client.config_resetstat()
        phase()
        return _server_us(conn, "evalsha" if not native else name)

    def complete_all(claimed: list[tuple[str, int]]) -> float:
        calls = [transitions.complete(q, i, att, "ok").words(native) for i, att in claimed]
        return per_call(lambda: run(calls), "EMQ.COMPLETE")

    fill(conn, q, n)
    got: list[object] = []
    one = per_call(lambda: got.extend(run([transitions.claim(q, 30_000).words(native)] * n)), "EMQ.CLAIM")
    one_total = one + complete_all([(r[0], int(r[2])) for r in got])  # type: ignore[index]
    fill(conn, q, n)
    got.clear()
    calls = [transitions.claim_many(q, 30_000, batch).words(native)] * -(-n // batch)
    many = per_call(lambda: got.extend(run(calls)), "EMQ.CLAIM.MANY") * len(calls) / n
    many_total = many + complete_all([(j[0], int(j[2])) for r in got for j in r])  # type: ignore[union-attr]
    drained(conn, q, 2 * n)
    return one_total, many_total


# -- the table -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    label: str
    concurrency: int
    batch: int
    kit: bool  # one of the kit's paths (the goal is about these)
    reference: bool = False  # shown for scale, not a candidate for the kit's best path


def paths(batch: int, with_node: bool, with_python: bool) -> list[Entry]:
    out = []
    if with_node:
        out += [Entry(NODE_ANCHOR, 1, 1, False), Entry(NODE_ANCHOR, 8, 1, False)]
    if with_python:
        out += [Entry("BullMQ-Python Worker", 1, 1, False), Entry("BullMQ-Python Worker", 8, 1, False)]
    for size in (1, 8):
        out += [Entry(f"Pool(size={size})", size, 1, True),
                Entry(f"Pool(size={size}, batch={batch})", size, batch, True)]
    out += [
        Entry("Consumer.run (the page's beat)", 1, 1, True, True),
        Entry("Pool(size=1, shortcuts=False)", 1, 1, True, True),
        Entry("Pool(size=8, shortcuts=False)", 8, 1, True, True),
    ]
    return out


def runner(p: Entry, c: Connector, url: str, n: int) -> Callable[[str], float]:
    if p.label == NODE_ANCHOR:
        return lambda q: bull_node(url, q, n, p.concurrency)
    if p.label.startswith("BullMQ-Python"):
        return lambda q: bull_python(url, q, n, p.concurrency)
    if p.label.startswith("Consumer"):
        return lambda q: ours(c, q, n, lambda: Consumer(c, q, handler))
    plain = "shortcuts=False" in p.label
    return lambda q: ours(c, q, n, lambda: Pool(c, q, handler, size=p.concurrency, batch=p.batch,
                                                 shortcuts=not plain))


def one_round(conn: Connector, url: str, n: int, batch: int, todo: list[Entry], r: int, tag: str) -> dict[str, float]:
    one_us, many_us = ceiling(conn, f"peers-{tag}-ceiling", n, batch)
    out = {"ceiling": 1e6 / one_us, "ceiling_batch": 1e6 / many_us, "one_us": one_us, "many_us": many_us}
    turned = todo[r % len(todo):] + todo[:r % len(todo)]
    for p in turned:
        i = todo.index(p)
        out[key(p)] = runner(p, conn, url, n)(f"peers-{tag}-{i}")
    return out


def key(p: Entry) -> str:
    return f"{p.label}|{p.concurrency}"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=int(os.environ.get("ECHOMQ_BENCH_N", DEFAULT_N)), help="jobs per run")
    ap.add_argument("--rounds", type=int, default=5, help="rounds; the median is printed")
    ap.add_argument("--batch", type=int, default=DEFAULT_BATCH, help="jobs per claim on the batch paths")
    args = ap.parse_args(argv[1:])
    if args.n <= 0 or args.rounds <= 0:
        print("--n and --rounds must be positive", file=sys.stderr)
        return 2
    try:
        jobs.check_batch(args.batch)
    except jobs.BadInput as exc:
        print(f"--batch: {exc}", file=sys.stderr)
        return 2
    why_not_node = node_ready()
    try:
        import bullmq  # noqa: F401 - only asked whether it is there
        why_not_python = ""
    except ImportError:
        why_not_python = "bullmq (Python) is not installed (pip install -e '.[bench]')"

    print_header("The Queue · peers bench: our consumers beside BullMQ on Node.js, same node, same run", args.n)
    node_version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip() \
        if not why_not_node else "absent"
    bull_version = "" if why_not_node else json.loads(
        (NODE_FOLDER / "node_modules" / "bullmq" / "package.json").read_text())["version"]
    print(f"BullMQ on Node.js: bullmq {bull_version or 'absent'} on node {node_version}"
          + (f" (skipped: {why_not_node})" if why_not_node else " (a warm-up drain of 300 jobs first, untimed)"))
    if why_not_python:
        print(f"BullMQ-Python: skipped: {why_not_python}")
    print(f"{args.rounds} rounds, interleaved; the median of each; every handler answers at once; batch paths "
          f"claim {args.batch} jobs per call")
    todo = paths(args.batch, not why_not_node, not why_not_python)
    best: dict[tuple[int, int], tuple[float, str]] = {}
    for native in (False, True):
        wire = 6 if native else 4
        node = start_node(native=native, provider="local")
        rounds = []
        try:
            conn = node.connector()
            for r in range(args.rounds):
                print(f"  wire {wire}, round {r + 1}: load {os.getloadavg()[0]:.2f}", flush=True)
                rounds.append(one_round(conn, node.url, args.n, args.batch, todo, r, f"{wire}-{r}"))
            conn.close()
        finally:
            node.stop()
        med = {k: statistics.median(rd[k] for rd in rounds) for k in rounds[0]}
        print()
        print(f"wire {wire} ({'native node: EMQ.* commands' if native else 'scripted node: Lua by EVALSHA'})"
              f" · ceiling {med['ceiling']:,.0f} jobs/s (server {med['one_us']:.1f} µs per claim + complete;"
              f" {med['many_us']:.1f} µs with batch claims of {args.batch}: {med['ceiling_batch']:,.0f} jobs/s)")
        anchor = "× Node" if not why_not_node else ""
        print(f"  {'':<34}{'conc':>5}{'batch':>6}{'jobs/s':>9}{anchor:>8}{'÷ ceil':>8}   each round (jobs/s"
              + (", × Node)" if anchor else ")"))
        for p in todo:
            k = key(p)
            peer = f"{NODE_ANCHOR}|{p.concurrency}"
            ratios = [rd[k] / rd[peer] for rd in rounds] if anchor else []
            ratio = statistics.median(ratios) if ratios else float("nan")
            share = statistics.median(rd[k] / rd["ceiling"] for rd in rounds)
            each = "  ".join(f"{rd[k]:,.0f}" + (f" {x:.2f}" if ratios else "")
                             for rd, x in zip(rounds, ratios or [0.0] * len(rounds)))
            shown = f"{ratio:>8.2f}" if anchor else ""
            print(f"  {p.label:<34}{p.concurrency:>5}{p.batch:>6}{med[k]:>9,.0f}{shown}{share:>8.2f}   {each}")
            if p.kit and not p.reference and ratios and ratio > best.get((wire, p.concurrency), (0.0, ""))[0]:
                best[(wire, p.concurrency)] = (ratio, p.label)
    print()
    print(f"load at the end: {os.getloadavg()[0]:.2f}")
    if best:
        print("the kit's best path against BullMQ on Node.js (goal: 2× or more at concurrency 1 and 8, on each wire):")
        for (wire, conc), (ratio, label) in sorted(best.items()):
            verdict = "meets" if ratio >= 2 else "misses"
            print(f"  wire {wire}, concurrency {conc}: {ratio:.2f}× — {label} ({verdict} the goal)")
    print()
    print("× Node: the median over the rounds of jobs/s ÷ BullMQ on Node.js at the same concurrency, on the same")
    print("node, in the same round; ÷ ceil: jobs/s ÷ the node's ceiling (1 ÷ its µs per claim + complete),")
    print("measured in the same round")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
