"""The legs a consumer or a metronome runs besides the claim: the recovery leg, what a lost link does, the shortcuts."""

from __future__ import annotations

from .. import jobs, stalled
from ..connector import Connector
from ..jobs import positive_int
from ..shortcuts import check_shortcuts

RECOVERY_LEGS = ("reap", "stalled", None)
#: what a lost link does to a run: "raise" (the default) or "retry" (abandon the beat, beat again)
LOST_LINK = ("raise", "retry")


def check_lost_link(lost_link: object) -> str:
    """``lost_link`` checked: ``"raise"`` or ``"retry"``."""
    if lost_link not in LOST_LINK:
        raise jobs.BadInput(f"lost_link must be 'raise' or 'retry', got {lost_link!r}")
    return lost_link  # type: ignore[return-value]


def check_recovery(recovery: object, max_stalled: object) -> None:
    """The recovery leg (``"reap"``, ``"stalled"`` or None) and the stall cap, checked."""
    if recovery not in RECOVERY_LEGS:
        raise jobs.BadInput(f"recovery must be 'reap', 'stalled' or None, got {recovery!r}")
    positive_int("max_stalled", max_stalled)


def recover(
    conn: Connector, queue: str, leg: str | None, max_stalled: int, record: bool = False
) -> tuple[list[str], list[str]]:
    """One recovery leg: (the jobs it brought back to pending, the jobs it buried)."""
    if leg == "reap":
        return jobs.reap(conn, queue), []
    if leg == "stalled":
        # a burial ends a job's life: a recording consumer's or metronome's sweep records it
        report = stalled.check(conn, queue, max_stalled, record=record)
        return report.requeued, report.dead
    return [], []


def taken_shortcuts(conn: Connector, value: object, allowed: tuple[str, ...]) -> frozenset[str]:
    """The shortcuts asked for, checked; none on a cluster, where every call is routed on its own."""
    names = check_shortcuts(value, allowed)
    return frozenset() if conn.on_cluster else names

