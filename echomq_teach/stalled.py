"""The counted stall sweep (EchoMQ.Stalled).

Unlike ``reap``, each lapsed lease counts against the job: past ``max_stalled``
stalls it is buried with ``last_error`` "stalled". On a wire 6 connector it runs
as ``EMQ.STALLED.CHECK``, which exempts a lease taken before a server restart:
a native claim writes the server's ``run_id`` as the row's ``lease_epoch``, and
every transition that ends the lease (complete, retry, reap, promote, either
sweep, reprocess) clears it, so only a live lease carries one.

A burial ends the job's life: ``record=True`` (a recording consumer's or
metronome's sweep) adds its ``stalled`` entry to ``stream:completions`` in the
same atomic step, and, for a flow child whose policy fails its parent, the
parent's ``child_failed`` entry after it.
"""

from __future__ import annotations

from typing import NamedTuple

from . import transitions
from .connector import Connector
from .jobs import positive_int, record_flag, send
from .keyspace import check_queue

DEFAULT_MAX_STALLED = 1


class StallReport(NamedTuple):
    """What one sweep did: the ids it returned to pending and the ids it buried."""

    requeued: list[str]
    dead: list[str]


def check(conn: Connector, queue: str, max_stalled: int = DEFAULT_MAX_STALLED, *, record: bool = False) -> StallReport:
    """EchoMQ.Stalled.check/3 → ``@stalled_check`` (or ``EMQ.STALLED.CHECK``).

    ARGV: ``max_stalled``, and the record flag ``1`` only when ``record`` is set.
    """
    check_queue(queue)
    positive_int("max_stalled", max_stalled)
    record_flag(record)
    requeued, dead = send(conn, transitions.stalled_check(queue, max_stalled, record=record))
    return StallReport(list(requeued), list(dead))
