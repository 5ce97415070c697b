"""What a bounded run did (``RunReport``), a pool's reports added up, and how a thread's failure is named."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class RunReport:
    """What a bounded ``run()`` did."""

    beats: int = 0
    settled: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    stopped_by: str = ""
    #: in a pool, one line per thread that ended on an exception: ``"consumer-0: ResponseError: …"``
    errors: list[str] = field(default_factory=list)
    #: beats abandoned because the node went away (``lost_link="retry"``)
    lost_links: int = 0


def combine(reports: Sequence[RunReport], seconds: float, extra_errors: Sequence[str] = ()) -> RunReport:
    """The reports added up (a pool's consumers, a set of pools); ``stopped_by`` names every way they stopped."""
    total = RunReport(seconds=seconds)
    for r in reports:
        total.beats += r.beats
        total.settled += r.settled
        total.lost_links += r.lost_links
        for k, v in r.outcomes.items():
            total.outcomes[k] = total.outcomes.get(k, 0) + v
        total.errors += r.errors
    total.errors += extra_errors
    stops = {r.stopped_by for r in reports} | ({"error"} if total.errors else set())
    total.stopped_by = ",".join(sorted(stops))
    return total


def failure(who: str, exc: Exception) -> str:
    """``"<who>: <Type>: <message>"``: a thread's last exception as a report keeps it."""
    return f"{who}: {type(exc).__name__}: {exc}"
