"""The two executors on one native node, same N: server-side cost per call and pipelined claim throughput.

Server-side cost comes from ``INFO commandstats`` (``usec_per_call``), reset with
``CONFIG RESETSTAT`` before each phase: ``cmdstat_evalsha`` for ``@claim2`` and
``@complete``, ``cmdstat_emq.claim`` and ``cmdstat_emq.complete`` for the native
twins. Throughput is wall-clock jobs/s for pipelined raw claims (batches of 100)
through one redis-py client. claim/3's host-side pause read is left out on both
sides: it is the same round trip whichever executor follows it. This is a script,
not a test: it prints figures and asserts nothing about time.

    .venv/bin/python bench/bench_native.py [N]      # or ECHOMQ_BENCH_N=N
"""

from __future__ import annotations

import os
import platform
import sys
import time
from typing import Any

import redis

from echomq_teach import LocalNode, scripts
from echomq_teach.keyspace import base, job_key, queue_key

DEFAULT_N = 20_000
BATCH = 100
LEASE = "30000"


def enqueue_all(client: redis.Redis, q: str, n: int) -> list[str]:
    """N jobs in pending, by @enqueue, pipelined (ids in mint order, so claims pop them in turn)."""
    sha = client.script_load(scripts.load("enqueue").source)
    ids = [f"JOB{i:011d}" for i in range(n)]
    for start in range(0, n, BATCH):
        pipe = client.pipeline(transaction=False)
        for job_id in ids[start : start + BATCH]:
            pipe.evalsha(sha, 2, queue_key(q, "pending"), job_key(q, job_id), job_id, "payload")
        pipe.execute()
    return ids


def pipelined(client: redis.Redis, calls: list[list[Any]]) -> tuple[list[Any], float]:
    """Every call sent in batches; the replies and the wall time the batches took."""
    replies: list[Any] = []
    start = time.perf_counter()
    for i in range(0, len(calls), BATCH):
        pipe = client.pipeline(transaction=False)
        for args in calls[i : i + BATCH]:
            pipe.execute_command(*args)
        replies += pipe.execute()
    return replies, time.perf_counter() - start


def claim_calls(q: str, n: int, native: bool, claim_sha: str) -> list[list[Any]]:
    keys = [queue_key(q, "pending"), queue_key(q, "active"), base(q)]
    head = ["EMQ.CLAIM", 3] if native else ["EVALSHA", claim_sha, 3]
    return [[*head, *keys, LEASE] for _ in range(n)]


def complete_calls(q: str, claimed: list[Any], native: bool, complete_sha: str) -> list[list[Any]]:
    out = []
    for job_id, _payload, token in claimed:
        keys = [queue_key(q, "active"), job_key(q, job_id)]
        argv = [job_id, token, base(q), "", "done", "0"]
        out.append(["EMQ.COMPLETE", 2, *keys, *argv] if native else ["EVALSHA", complete_sha, 2, *keys, *argv])
    return out


def stats(client: redis.Redis, command: str, n: int) -> tuple[float, float]:
    """(usec_per_call of ``command``, inner commands per call) since the last CONFIG RESETSTAT."""
    # the server names a module command as registered (cmdstat_EMQ.CLAIM): match without case
    all_stats = {name.lower(): s for name, s in client.info("commandstats").items()}
    mine = all_stats[f"cmdstat_{command}"]
    if mine["calls"] != n:
        raise SystemExit(f"expected {n} calls of {command}, the server counted {mine['calls']}")
    # what the script or the module called inside: every other command the phase counted
    own = (f"cmdstat_{command}", "cmdstat_info", "cmdstat_config|resetstat")
    inner = sum(s["calls"] for name, s in all_stats.items() if name not in own)
    return float(mine["usec_per_call"]), inner / n


def phase(client: redis.Redis, q: str, n: int, native: bool, shas: dict[str, str]) -> dict[str, float]:
    """Enqueue N, then claim N and complete N, each leg with its own reset of the stats."""
    enqueue_all(client, q, n)
    command = {True: ("emq.claim", "emq.complete"), False: ("evalsha", "evalsha")}[native]
    client.config_resetstat()
    claimed, claim_s = pipelined(client, claim_calls(q, n, native, shas["claim2"]))
    if not all(claimed):
        raise SystemExit("a claim came back empty: every enqueued job should have been claimable")
    claim_us, claim_inner = stats(client, command[0], n)
    client.config_resetstat()
    done, _ = pipelined(client, complete_calls(q, claimed, native, shas["complete"]))
    if done != [1] * n:
        raise SystemExit("a completion was refused: every token should still have been good")
    complete_us, complete_inner = stats(client, command[1], n)
    return {
        "claim_us": claim_us,
        "claim_inner": claim_inner,
        "complete_us": complete_us,
        "complete_inner": complete_inner,
        "claim_rate": n / claim_s,
    }


def main(argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 else int(os.environ.get("ECHOMQ_BENCH_N", DEFAULT_N))
    if n <= 0:
        print("N must be a positive number of jobs", file=sys.stderr)
        return 2
    node = LocalNode(native=True)
    try:
        client = node.client()
        shas = {name: client.script_load(scripts.load(name).source) for name in ("claim2", "complete")}
        # warm up both paths (sockets, script cache, the module's run_id read) outside every figure
        for native in (False, True):
            phase(client, f"warm-{native}", min(n, 500), native, shas)
        # alternate the executors, twice each, and keep each one's better run: load on a
        # shared machine drifts over seconds, and alternating spreads it over both
        runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
        for round_ in range(2):
            for native in (False, True):
                runs[native].append(phase(client, f"bench-{round_}-{native}", n, native, shas))
        server = client.info("server")
        version = server.get("valkey_version") or server.get("redis_version", "?")
        client.close()
    finally:
        node.stop()

    def best(native: bool, key: str) -> float:
        values = [r[key] for r in runs[native]]
        return max(values) if key.endswith("rate") else min(values)

    print(f"The Queue · native bench · N={n} · valkey {version} · Python {platform.python_version()}")
    print(f"one native node, one redis-py client; pipelined in batches of {BATCH}; best of 2 runs per executor")
    print()
    print(f"{'server-side cost':<28}{'script µs/call':>16}{'native µs/call':>16}{'script/native':>15}")
    for leg, script_name in (("claim", "@claim2"), ("complete", "@complete")):
        s, nat = best(False, f"{leg}_us"), best(True, f"{leg}_us")
        label = f"{script_name} vs EMQ.{leg.upper()}"
        print(f"{label:<28}{s:>16.2f}{nat:>16.2f}{s / nat:>14.2f}×")
    print()
    print(f"{'inner commands/call':<28}{'script':>16}{'native':>16}")
    for leg in ("claim", "complete"):
        print(f"{leg:<28}{best(False, leg + '_inner'):>16.1f}{best(True, leg + '_inner'):>16.1f}")
    print()
    s_rate, n_rate = best(False, "claim_rate"), best(True, "claim_rate")
    print(f"{'pipelined claims':<28}{'script jobs/s':>16}{'native jobs/s':>16}{'native/script':>15}")
    print(f"{'EVALSHA vs EMQ.CLAIM':<28}{s_rate:>16,.0f}{n_rate:>16,.0f}{n_rate / s_rate:>14.2f}×")
    print()
    print("usec_per_call is the server's own time per command, inner calls included;")
    print("the native claim also reads the brand and the pause flag and peeks before it pops.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
