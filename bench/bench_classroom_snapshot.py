"""A widget refresh on a shared classroom node: ``@snapshot`` of one small queue among 30 students'.

``@snapshot`` and ``@drop`` find a queue's rows and flow keys with ``SCAN MATCH``
inside one script. On a standalone node SCAN walks every key of the node, so
the cost grows with the whole class; on a node in cluster mode (alone, owning
every slot: the classroom's set-up) a pattern whose hashtag names one slot
walks only that slot, so the cost is one queue's. This bench fills one node
the way a classroom does (30 namespaces, each with a few queues of jobs and
some flows) at three sizes, in both modes, and times a refresh (one
``snapshots.snapshot`` of a 10-job queue, through the kit, as a widget step
sends it) and one ``jobs.drop`` of such a queue, beside a one-round-trip floor
(EVALSHA of ``return 1``). The widget step goal is 20 ms. It prints figures;
it asserts nothing.

    .venv/bin/python bench/bench_classroom_snapshot.py [KEYS_PER_STUDENT...]   # default 100 1000 10000
"""

from __future__ import annotations

import statistics
import sys
import time

from machine import print_header

from echomq_teach import flows, jobs, snapshots
from echomq_teach.classroom import compose, provision
from echomq_teach.nodes import LocalNode
from echomq_teach.nodes.host import free_port

STUDENTS = 30
GOAL_MS = 20.0
REPEAT = 50


def fill(node: LocalNode, per_student: int) -> int:
    """Each student: 4 queues of plain jobs and one flow queue, about ``per_student`` keys in all."""
    conn = node.connector()
    pipe = conn.client.pipeline(transaction=False)
    for s in range(STUDENTS):
        for q in range(4):
            base = f"emq:{{s{s:02d}.q{q}}}:"
            for j in range(per_student // 5):
                jid = f"JOB{s:02d}{q}{j:07d}"
                pipe.hset(base + f"job:{jid}", mapping={"state": "pending", "attempts": "0", "payload": "p" * 40})
                pipe.zadd(base + "pending", {jid: 0})
            pipe.execute()
        conn_q = f"s{s:02d}.flows"
        for _ in range(max(1, per_student // 50)):  # a flow: one parent and 4 children, 10 keys or so
            flows.add(conn, conn_q, "parent", ["c1", "c2", "c3", "c4"])
    n = conn.client.dbsize()
    conn.close()
    return n


def timed(fn, repeat: int = REPEAT) -> tuple[float, float]:
    """(median, p95) milliseconds."""
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    out.sort()
    return statistics.median(out), out[int(len(out) * 0.95) - 1]


def main(sizes: list[int]) -> None:
    print_header("The Queue · classroom snapshot bench", f"{STUDENTS} students, keys per student {sizes}",
                 packages=("redis", "hiredis"))
    print(f"{STUDENTS} students; refresh = snapshots.snapshot of a 10-job queue; goal {GOAL_MS:.0f} ms per step")
    print(f"{'mode':>10} {'keys/student':>12} {'node keys':>10} {'snapshot median':>16} {'p95':>7} {'floor':>7} "
          f"{'ratio':>6} {'drop median':>12}  within goal")
    for per in sizes:
        for mode in ("standalone", "cluster"):
            run(per, mode)


def run(per: int, mode: str) -> None:
    if True:
        cluster = compose.cluster_mode(bus_port=free_port()) if mode == "cluster" else {}
        node = LocalNode(extra_config=cluster)
        try:
            admin = node.client()
            provision.brand(admin)  # a cluster-mode node takes its slots first
            admin.close()
            conn = node.connector()
            version = conn.client.info("server")["valkey_version"]
            keys = fill(node, per)
            q = "s07.mine"
            for i in range(10):
                jobs.enqueue(conn, q, f"job {i}")
            sha = conn.client.script_load("return 1")
            floor, _ = timed(lambda: conn.client.evalsha(sha, 0))
            med, p95 = timed(lambda: snapshots.snapshot(conn, q))
            snap = snapshots.snapshot(conn, q)
            assert len(snap.pending) == 10

            def drop_once() -> None:
                jobs.drop(conn, q)
                for i in range(10):
                    jobs.enqueue(conn, q, f"job {i}")

            dmed, _ = timed(drop_once, repeat=10)
            ok = "yes" if p95 <= GOAL_MS else "NO"
            print(f"{mode:>10} {per:>12} {keys:>10} {med:>13.2f} ms {p95:>7.2f} {floor:>7.3f} {med / floor:>6.0f} "
                  f"{dmed:>9.2f} ms  {ok}")
            conn.close()
            print(f"{'':>10} valkey {version}") if per == 100 and mode == "cluster" else None
        finally:
            node.stop()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [100, 1000, 10000])
