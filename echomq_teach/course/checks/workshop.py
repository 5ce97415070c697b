"""Notebook 06 · the workshop: what each job of a queue is waiting for, in the pattern's three words."""

from __future__ import annotations

import time
from typing import Any

from ... import flows, jobs
from ...connector import Connector
from ..registry import Findings, exercise, setup_for

#: the pattern's three ideas, as the notebook names them
IDEAS = ("confirm atomically", "recover by timeout", "compose by counting")
_WAITING: dict[str, dict[str, str]] = {}


@exercise(
    "06.1",
    "What is each job waiting for?",
    "Hint: a job in active waits for its holder's completion while its score (the lease deadline, server ms) "
    "is ahead of the server's clock, and for a sweep once it is behind (snapshot.relative('active', id) says "
    "which). A row in no set, in state awaiting_children, waits for its counter to reach zero.",
    solution="06_1_waiting_for.py",
    kind="diagnose",
)
def _verify_waiting_for(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    want = _WAITING.pop(queue)
    if not f.expect(isinstance(result, dict), f"return a dict from job id to one of {IDEAS}; got {result!r}."):
        return
    bad = sorted({str(v) for v in result.values() if v not in IDEAS})
    if not f.expect(not bad, f"each job waits on one of {IDEAS}; {bad} is not one of them."):
        return
    extra = sorted(set(result) - set(want))
    f.expect(not extra, f"{', '.join(extra)}: a job in pending waits for nothing but a worker's claim; name "
             "only the jobs that are not in pending.")
    missing = sorted(set(want) - set(result))
    f.expect(not missing, f"{len(missing)} of the {len(want)} jobs that are not in pending are missing.")
    for job, idea in sorted(want.items()):
        said = result.get(job)
        if said is not None and said != idea:
            f.expect(False, f"{job}: not {said!r}. Read its row and where it is, against the server's clock.")


@setup_for("06.1")
def _setup_waiting_for(conn: Connector, queue: str) -> tuple[Any, ...]:
    held = jobs.enqueue(conn, queue, "a worker is on it")
    lapsed = jobs.enqueue(conn, queue, "its worker crashed")
    flow = flows.add(conn, queue, "the parent", ["the last child"])
    # the oldest ids come out first: a live lease, then one that lapses; the child stays pending
    assert jobs.claim(conn, queue, 60_000).id == held
    assert jobs.claim(conn, queue, 20).id == lapsed
    time.sleep(0.05)  # past the 20 ms lease: no sweep has run on this queue
    _WAITING[queue] = {held: IDEAS[0], lapsed: IDEAS[1], flow.parent_id: IDEAS[2]}
    return ()
