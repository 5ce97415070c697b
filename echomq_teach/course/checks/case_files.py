"""Notebook 10 · case files: read a case model's state on your node and name what its mechanism did; and your
queue's last stage, valid first, then fast.

Each setup drives a case model (``lab.models``) by its own calls on the learner's
node, step by step and in one process: no worker processes, no nemesis, so the
state it leaves is the same every time and the check knows the answer. Every
key it writes is under ``case:{queue}:`` (the fresh queue's hashtag).
"""

from __future__ import annotations

import time
from typing import Any

from ... import ids
from ...connector import Connector
from ...lab.models.bullmq_flow_release import BullmqFlowRelease
from ...lab.models.kombu_restore import KombuRestore
from ...lab.models.sidekiq_orphans import HEARTBEAT_MS, SidekiqOrphans
from ..judges.stages import judge_stage
from ..my_queue.stages import stage as my_stage
from ..registry import Findings, exercise, judged, setup_for
from . import diagnosis

#: what each setup left to be found, by its fresh queue (the learner's function is handed only what it reads)
_EXPECTED: dict[str, set[str]] = {}


def _ids_answer(conn: Connector, queue: str, result: Any, f: Findings, where: str) -> set[str] | None:
    """The answer as a set of job ids, or None (with a finding) when it is not one or the model was moved."""
    if not diagnosis.untouched(conn, queue, f):
        return None
    if isinstance(result, (set, frozenset)) and all(isinstance(x, str) for x in result):
        return set(result)
    f.expect(False, f"return the job ids as a set of str; got {type(result).__name__}.")
    f.expect(False, where)
    return None


def _compare(answer: set[str], want: set[str], f: Findings, extra: str, missing: str) -> None:
    wrongly = answer - want
    f.expect(not wrongly, f"{len(wrongly)} of the ids you named {extra}.")
    f.expect(want <= answer, f"{len(want - answer)} of the ids {missing} are missing from your answer.")


# -- 10.1 · the kombu restore: which of w0's jobs run a second time ---------------------------------------
#: the model's visibility timeout in this exercise (short, so that the setup waits past it quickly)
VISIBILITY_MS = 150


@exercise(
    "10.1",
    "Which jobs run twice",
    "Hint: the restore took every message older than the visibility timeout out of `unacked` and pushed it "
    "back on the list. Some of those were fetched again at once (their delivery count in `deliveries` is 2), "
    "the others wait on the list. w0's newer jobs were never restored.",
    solution="10_1_which_run_twice.py",
    kind="diagnose",
)
def _verify_which_run_twice(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    answer = _ids_answer(conn, queue, result, f, "read the model's list (`queue`), `unacked` and `deliveries`.")
    if answer is None:
        return
    _compare(answer, _EXPECTED[queue], f, "were never put back: w0 alone runs them",
             "that the restore put back (fetched again, or waiting on the list)")


@setup_for("10.1")
def _setup_which_run_twice(conn: Connector, queue: str) -> tuple[Any, ...]:
    m, r = KombuRestore(queue, VISIBILITY_MS), conn.client
    for i in range(6):
        m.enqueue(r, ids.mint(), f"work {i}")
    old = [m.fetch(r, "w0")[0] for _ in range(3)]  # w0's first three: they will outlive the timeout
    time.sleep(VISIBILITY_MS / 1000 + 0.05)
    new = [m.fetch(r, "w0")[0] for _ in range(2)]  # two more, fresh when the restore runs
    restored = m.sweep(r)  # the restore: w0's first three go back on the list, behind the one never fetched
    for _ in range(2):
        m.fetch(r, "w1")  # w1 fetches the job never fetched, then the first of w0's restored three
    # what the restore took, as it says (a machine stalled past the timeout between the fetch and the restore
    # would have it take one of the two newer ones too)
    _EXPECTED[queue] = set(restored) & set(old + new)
    diagnosis.keep_keys(conn, queue, f"case:{{{queue}}}:*")
    return (set(old + new),)


# -- 10.2 · sidekiq's orphans: which jobs are stranded --------------------------------------------------------
@exercise(
    "10.2",
    "Find the orphans",
    "Hint: each process keeps its fetched jobs in `working:<process>` and refreshes `heartbeat:<process>` "
    "(a key with a TTL) on every fetch. A process whose heartbeat key is gone is dead: what its working "
    "list holds is stranded until some process starts. A live process's list is work in progress.",
    solution="10_2_find_the_orphans.py",
    kind="diagnose",
)
def _verify_find_the_orphans(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    answer = _ids_answer(conn, queue, result, f,
                         "read the `processes` set, each one's `heartbeat:` key and `working:` list.")
    if answer is None:
        return
    _compare(answer, _EXPECTED[queue], f, "are not stranded: a live process holds them, or they wait on the queue",
             "held by a dead process")


@setup_for("10.2")
def _setup_find_the_orphans(conn: Connector, queue: str) -> tuple[Any, ...]:
    m, r = SidekiqOrphans(queue), conn.client
    for i in range(10):
        m.enqueue(r, ids.mint(), f"work {i}")
    processes = ["host-a:1", "host-b:1", "host-c:1"]
    r.sadd(m.key("processes"), *processes)
    stranded = [m.fetch(r, "host-a:1")[0] for _ in range(2)]  # host-a fetches two, then is killed
    m.fetch(r, "host-b:1")
    done = m.fetch(r, "host-c:1")[0]
    m.ack(r, "host-c:1", done, 1)  # host-c finishes its one job, then is killed with an empty list
    time.sleep(HEARTBEAT_MS / 1000 + 0.1)  # the dead processes' heartbeats lapse
    m.fetch(r, "host-b:1")  # host-b lives on: its next fetch beats again
    # the state as of this moment: host-b's beat kept (no TTL left to lapse while the learner reads or a
    # later test counts keys), and the lapsed heartbeats read once, so the node has dropped them
    r.persist(m.key("heartbeat:host-b:1"))
    m.final(r)
    _EXPECTED[queue] = set(stranded)
    diagnosis.keep_keys(conn, queue, f"case:{{{queue}}}:*")
    return ()


# -- 10.3 · the bullmq flow: which parents were released early -----------------------------------------------
@exercise(
    "10.3",
    "Released too soon",
    "Hint: a released parent is on the `wait` list. Its counter `pending:<parent>` says how many of its "
    "children had not ended when it was released (a child's ending decrements it). A parent let go with "
    "that counter above zero was released early.",
    solution="10_3_released_too_soon.py",
    kind="diagnose",
)
def _verify_released_too_soon(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    answer = _ids_answer(conn, queue, result, f, "read the model's `wait` list and each parent's `pending:` counter.")
    if answer is None:
        return
    _compare(answer, _EXPECTED[queue], f, "were released when their last child ended, or not at all",
             "released with children still pending")


@setup_for("10.3")
def _setup_released_too_soon(conn: Connector, queue: str) -> tuple[Any, ...]:
    m, r = BullmqFlowRelease(queue), conn.client
    flows = []
    for _ in range(5):
        kids = [(ids.mint(), "work 5") for _ in range(3)]
        flows.append((ids.mint(), [k for k, _ in kids]))
        m.enqueue_flow(r, (flows[-1][0], "work 5"), kids)
    tokens = {}
    while (got := m.fetch(r, "w")) is not None:  # one worker holds every child
        tokens[got[0]] = got[2]
    # each flow's children end differently (a = ack, f = the failure branch, - = still running)
    plans = ["f--", "aaa", "aaf", "af-", "a--"]
    for (_parent, kids), plan in zip(flows, plans):
        for kid, step in zip(kids, plan):
            if step == "a":
                m.ack(r, "w", kid, tokens[kid])
            elif step == "f":
                m.fail(r, "w", kid, tokens[kid])
    # the children still running keep their locks for as long as the learner reads (no TTL left to lapse)
    for kid in r.lrange(m.key("active"), 0, -1):
        r.persist(m.key(f"lock:{kid}"))
    _EXPECTED[queue] = {flows[0][0], flows[3][0]}
    diagnosis.keep_keys(conn, queue, f"case:{{{queue}}}:*")
    return ({p for p, _ in flows},)


# -- 10.4 · your queue, stage 6: valid first, then fast ----------------------------------------------------------------
@judged(
    "10.4",
    my_stage("10.4").title,
    "Hint: when a stage that passed before fails here, read its counterexample: the calls it shows are the ones "
    "your scripts answered. Then fast: your beat sweeps (promote and recover) on every beat, two round trips that "
    "find nothing on most beats of a busy pool; a beat may sweep every few beats while its claims bring jobs, and "
    "on every beat whose claim comes back empty, and a lapsed lease still comes back within a few beats.",
    solution="my_queue/10_4",
)
def _judge_stage_fast(answer: Any, f: Findings) -> None:
    judge_stage("10.4", answer, f)
