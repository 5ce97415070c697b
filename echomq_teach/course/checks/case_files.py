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
from ..judges.stages import stage_exercise
from ..registry import Findings, exercise, setup_for
from . import diagnosis, staging

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
    "Hint: the restore moved some of w0's messages. Where can a moved message be by now, and which of the "
    "model's keys says so? Read each key's own record, not the order of the ids.",
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
    m, r, rng = KombuRestore(queue, VISIBILITY_MS), conn.client, staging.chance()
    n_old, n_new, never = rng.randint(2, 5), rng.randint(2, 4), rng.randint(1, 2)
    for job in staging.dealt(n_old + n_new + never, rng):  # enqueued in an order of their own, not the ids'
        m.enqueue(r, job, "work")
    old = [m.fetch(r, "w0")[0] for _ in range(n_old)]  # w0's first: they will outlive the timeout
    time.sleep(VISIBILITY_MS / 1000 + 0.05)
    new = [m.fetch(r, "w0")[0] for _ in range(n_new)]  # more, fresh when the restore runs
    restored = m.sweep(r)  # the restore: w0's first go back on the list, behind the ones never fetched
    for _ in range(never + rng.randint(1, n_old - 1)):
        m.fetch(r, "w1")  # w1 fetches those never fetched, then some (never all) of w0's restored ones
    # what the restore took, as it says (a machine stalled past the timeout between the fetch and the restore
    # would have it take one of the newer ones too)
    _EXPECTED[queue] = set(restored) & set(old + new)
    diagnosis.keep_keys(conn, queue, f"case:{{{queue}}}:*")
    return (set(old + new),)


# -- 10.2 · sidekiq's orphans: which jobs are stranded --------------------------------------------------------
@exercise(
    "10.2",
    "Find the orphans",
    "Hint: which of the model's keys says a process is alive, and what becomes of that key when the process "
    "stops? A list is stranded only when its owner is gone.",
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
    m, r, rng = SidekiqOrphans(queue), conn.client, staging.chance()
    names = rng.sample([f"host-{h}:{pid}" for h in "abcdefgh" for pid in range(1, 40)], 5)
    # killed holding jobs (one or two), killed after finishing its one job (maybe), living on (one or two)
    dead, spent, live = names[:rng.randint(1, 2)], names[2:2 + rng.randint(0, 1)], names[3:3 + rng.randint(1, 2)]
    for job in staging.dealt(12, rng):  # enqueued in an order of their own, not the ids'
        m.enqueue(r, job, "work")
    r.sadd(m.key("processes"), *dead, *spent, *live)
    order = staging.shuffled([p for p in dead for _ in range(rng.randint(1, 3))]
                             + [p for p in live for _ in range(rng.randint(1, 2))] + list(spent), rng)
    stranded = []
    for process in order:  # the fetches interleave: no process holds the oldest ids by rule
        job = m.fetch(r, process)[0]
        if process in spent:
            m.ack(r, process, job, 1)
        elif process in dead:
            stranded.append(job)
    time.sleep(HEARTBEAT_MS / 1000 + 0.1)  # the dead processes' heartbeats lapse
    for process in live:
        m.fetch(r, process)  # a live process fetches again: its beat is fresh
        # the state as of this moment: the beat kept (no TTL left to lapse while the learner reads or a later
        # test counts keys)
        r.persist(m.key(f"heartbeat:{process}"))
    m.final(r)  # the lapsed heartbeats read once, so the node has dropped them
    _EXPECTED[queue] = set(stranded)
    diagnosis.keep_keys(conn, queue, f"case:{{{queue}}}:*")
    return ()


# -- 10.3 · the bullmq flow: which parents were released early -----------------------------------------------
@exercise(
    "10.3",
    "Released too soon",
    "Hint: a parent released in time and one released too soon wait on the same list. What else does the model "
    "keep for each parent, and what would it read at the moment a parent is let go in time?",
    solution="10_3_released_too_soon.py",
    kind="diagnose",
)
def _verify_released_too_soon(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    answer = _ids_answer(conn, queue, result, f, "read the model's `wait` list and each parent's `pending:` counter.")
    if answer is None:
        return
    _compare(answer, _EXPECTED[queue], f, "were released when their last child ended, or not at all",
             "released with children still pending")


#: how a flow's three children end (a = ack, f = the failure branch, - = still running), by what that does to its
#: parent: released too soon, released when its last child ended, not released yet
_PLANS = {"early": ("f--", "af-", "fa-", "ff-", "-f-"), "in time": ("aaa", "aaf"), "waiting": ("a--", "aa-", "---")}


@setup_for("10.3")
def _setup_released_too_soon(conn: Connector, queue: str) -> tuple[Any, ...]:
    m, r, rng = BullmqFlowRelease(queue), conn.client, staging.chance()
    # how many of each changes from one check to the next: a guess that names a fixed share of the parents passes
    # about one check in a hundred
    counts = (("early", rng.randint(1, 4)), ("in time", rng.randint(2, 3)), ("waiting", rng.randint(2, 3)))
    plans = staging.shuffled([(kind, rng.choice(_PLANS[kind])) for kind, n in counts for _ in range(n)], rng)
    parents = staging.dealt(len(plans), rng)
    flows = []
    for parent in parents:
        kids = [ids.mint() for _ in range(3)]
        flows.append((parent, kids))
        m.enqueue_flow(r, (parent, "work"), [(k, "work") for k in kids])
    tokens = {}
    while (got := m.fetch(r, "w")) is not None:  # one worker holds every child
        tokens[got[0]] = got[2]
    for (_parent, kids), (_kind, plan) in zip(flows, plans):
        for kid, step in zip(kids, plan):
            if step == "a":
                m.ack(r, "w", kid, tokens[kid])
            elif step == "f":
                m.fail(r, "w", kid, tokens[kid])
    # the children still running keep their locks for as long as the learner reads (no TTL left to lapse)
    for kid in r.lrange(m.key("active"), 0, -1):
        r.persist(m.key(f"lock:{kid}"))
    _EXPECTED[queue] = {parent for (parent, _), (kind, _) in zip(flows, plans) if kind == "early"}
    diagnosis.keep_keys(conn, queue, f"case:{{{queue}}}:*")
    return (set(parents),)



# -- 10.4 · your queue, stage 6: valid first, then fast ----------------------------------------------------------------
stage_exercise(
    "10.4",
    "Hint: when a stage that passed before fails here, read its counterexample: the calls it shows are the ones "
    "your scripts answered. Then fast: how many round trips does one beat make in a busy pool, and in an idle "
    "one? Which of them find nothing on most beats, and how late may a lapsed lease come back if they run less "
    "often?",
)
