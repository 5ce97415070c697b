"""A Pool consumer's pipelined beat: the job in hand (or one claim), the handler, the settle with the next claim.

Its settle carries the next claim (``shortcuts.Lane``), so the job it takes is
the next beat's; a run that stops with one in hand works and settles it first.
"""

from __future__ import annotations

from typing import NoReturn

from ..jobs import Claimed
from ..shortcuts import Lane
from .beat import Beat, Settings
from .budget import Share
from .handler import settle_args


class LaneBeat:
    """A beat with shortcuts, one job at a time (``batch_beat.BatchBeat`` is its batch)."""

    def __init__(self, how: Settings, lane: Lane) -> None:
        self.how, self.lane = how, lane
        self.held: list[Claimed] = []
        #: the refusal of the claim that rode in the last settle, raised at the next beat
        self.claim_error: Exception | None = None

    def raise_claim_error(self) -> None:
        """The claim that rode in the last settle was refused: raised here, where the plain beat's claim is."""
        if self.claim_error is not None:
            err, self.claim_error = self.claim_error, None
            raise err

    def beat(self, share: Share) -> Beat:
        self.raise_claim_error()
        b = Beat()
        job = self.held.pop() if self.held else None
        if job is None:
            if not share.take():
                return b
            job = self.lane.claim()
            if job is None:
                share.give_back()
                return b
        b.claimed = job
        ok, value = settle_args(self.how.handle(job))
        more = share.take() > 0
        s = self.lane.settle(job, ok, value, more)
        if more and s.next is None:
            share.give_back()
        b.outcome, b.detail = s.outcome, ("" if ok else str(value))
        self.held, self.claim_error = ([s.next] if s.next else []), s.claim_error
        if s.error is not None:
            self.refused(s.error, share)
        return b

    def refused(self, error: Exception, share: Share) -> NoReturn:
        """A settle was refused: the jobs the pipeline claimed are worked and settled first, as another
        consumer would have, then the refusal is raised as the plain beat raises it."""
        try:
            self.finish_held(share)
        except Exception:  # noqa: BLE001 - the first refusal is the one reported; those jobs come back by their leases
            self.held = []
        raise error

    def finish_held(self, share: Share) -> list[str]:
        if not self.held:
            return []
        [job], self.held = self.held, []
        ok, value = settle_args(self.how.handle(job))
        one = self.lane.settle(job, ok, value, claim_next=False)
        if one.error is not None:
            raise one.error
        share.note_settled()
        return [one.outcome]  # type: ignore[list-item]

    def drop(self) -> None:
        self.held = []
        self.lane.parents.clear()
