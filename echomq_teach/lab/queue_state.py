"""The queue's own state, held to notebook 01's table: each row in the one set its state names.

The checker reads a run's history; this reads the queue itself, at one instant
(``snapshots.snapshot``, one atomic read). Notebook 01 tabulates where each
state lives (``SET_OF``): a row whose state is ``pending``, ``active``,
``scheduled`` or ``dead`` sits in that one set, and a parent awaiting its
children in none. Every transition is one atomic script, so between any two
calls the queue holds to the table; whatever breaks it was written by a
transition that is wrong. ``findings`` names each break:

* **ghost** — an id in a set with no row (a claim pops it and mints nothing);
* **two sets** — an id in more than one set;
* **misplaced** — a row whose state names another set than the one it is in
  (a reap that left the row ``active`` in pending; a parent released to pending
  with its row still ``awaiting_children``);
* **unknown state** — a row whose state is none of the table's;
* **held** — a parent awaiting its children whose counter is down to zero: no
  one is left to release it;
* **settled, row left** — a job whose completion was acknowledged still has a row
  (a completed job has none: ``@complete`` deletes it).

A judge calls it after every judged run and at the points a fault or a probe
leaves the queue; the learner's own queue (issue 35) is held to it the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .. import snapshots
from ..connector import Connector
from ..keyspace import SETS
from .history import History

#: where a row in each state lives (notebook 01's table): a parent awaiting its children is in no set
SET_OF: dict[str, str | None] = {"pending": "pending", "active": "active", "scheduled": "schedule", "dead": "dead",
                                 "awaiting_children": None}
KINDS = ("ghost", "two sets", "misplaced", "unknown state", "held", "settled, row left")


@dataclass(frozen=True)
class StateFinding:
    """One break of the table: a job, what is wrong with it, in words."""

    kind: str
    job: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.job} — {self.detail}"


def findings(sets: Mapping[str, Iterable[str]], rows: Mapping[str, Mapping[str, str]],
             counters: Mapping[str, int] | None = None, *, settled: Iterable[str] = ()) -> list[StateFinding]:
    """Every break of the table in one instant of a queue: its four sets, its rows, its flow counters
    (``{"<parent>:dependencies": n}``, as a snapshot holds them), and the jobs known to be completed."""
    members = {s: set(sets.get(s, ())) for s in SETS}
    out: list[StateFinding] = []
    for job in sorted(set().union(*members.values())):
        where = [s for s in SETS if job in members[s]]
        if len(where) > 1:
            out.append(StateFinding("two sets", job, f"it is in {' and '.join(where)} at once"))
        if job not in rows:
            out.append(StateFinding("ghost", job, f"it is in {where[0]} with no row: a claim would pop it and "
                                    "mint nothing"))
    for job, row in sorted(rows.items()):
        state = row.get("state")
        where = [s for s in SETS if job in members[s]]
        if state not in SET_OF:
            out.append(StateFinding("unknown state", job, f"its row's state is {state!r}, none of "
                                    f"{', '.join(SET_OF)}"))
            continue
        want = SET_OF[state]
        if where != ([want] if want else []) and len(where) <= 1:
            said = f"in {where[0]}" if where else "in no set"
            should = f"in {want}" if want else "in no set (a parent waits outside the sets)"
            out.append(StateFinding("misplaced", job, f"its row says {state!r}, so it belongs {should}; it is {said}"))
        if state == "awaiting_children" and counters is not None:
            left = counters.get(f"{job}:dependencies")
            if left is not None and left <= 0:
                out.append(StateFinding("held", job, f"its children's counter is down to {left}, yet its row still "
                                        "says awaiting_children: nothing is left to release it"))
    for job in sorted(set(settled) & set(rows)):
        out.append(StateFinding("settled, row left", job, f"its completion was acknowledged, yet its row is still "
                                f"there (state {rows[job].get('state')!r}): a completed job has no row"))
    return out


def of_snapshot(s: snapshots.Snapshot, *, settled: Iterable[str] = ()) -> list[StateFinding]:
    """The breaks of the table in one snapshot of a queue."""
    return findings({n: s.sets[n] for n in SETS}, s.rows, s.counters, settled=settled)


def read(conn: Connector, queue: str, *, settled: Iterable[str] = ()) -> list[StateFinding]:
    """The breaks of the table in ``queue`` now (one atomic read)."""
    return of_snapshot(snapshots.snapshot(conn, queue), settled=settled)


def completed_in(history: History) -> set[str]:
    """The jobs whose completion a run's history shows acknowledged (``ok``): each must have no row."""
    return {o.job for o in history.calls("complete") if o.ok and o.reply == "ok" and o.job}
