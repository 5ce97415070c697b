"""One beat: what it did (``Beat``), what it reads of its consumer (``Settings``), what each kind answers (``Beats``).

A consumer beats one of three ways: the page's (``page_beat``), a Pool
consumer's pipelined one (``lane_beat``) or its batch (``batch_beat``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..connector import Connector
from ..jobs import Claimed
from .budget import Share


@dataclass
class Beat:
    """What one beat did, leg by leg."""

    promoted: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    buried: list[str] = field(default_factory=list)
    claimed: Claimed | None = None
    outcome: str | None = None  # "ok", "scheduled", "dead" or "stale"
    detail: str = ""
    #: a batch beat (``batch`` > 1): each job of the batch and its outcome; ``claimed`` is its first job
    batch: list[tuple[Claimed, str]] = field(default_factory=list)

    @property
    def idle(self) -> bool:
        return self.claimed is None


class Settings(Protocol):
    """What a beat reads of its consumer (a ``Consumer`` answers it)."""

    conn: Connector
    queue: str
    lease_ms: int
    retry_delay_ms: int
    max_attempts: int
    recovery: str | None
    max_stalled: int
    record: bool
    promote: bool
    batch: int

    def handle(self, job: Claimed) -> object: ...


class Beats(Protocol):
    """What each kind of beat answers."""

    #: jobs in hand that a pipelined settle claimed: the next beat's
    held: list[Claimed]

    def beat(self, share: Share) -> Beat:
        """One beat, claiming within ``share``."""
        ...

    def finish_held(self, share: Share) -> list[str]:
        """Work and settle the jobs in hand, claiming nothing more; their outcomes."""
        ...

    def drop(self) -> None:
        """Forget the jobs in hand (their leases bring them back)."""
        ...
