"""A Pool consumer's batch beat: up to k jobs from one batch claim, each handler in turn, the settles with the next.

A worker that dies holding a batch strands up to k leases until recovery runs.
"""

from __future__ import annotations

import time

from ..jobs import Claimed
from ..shortcuts import Lane
from .beat import Beat, Settings
from .budget import Share
from .handler import settle_args
from .lane_beat import LaneBeat


class BatchBeat(LaneBeat):
    """The lane's beat, a batch at a time (``batch`` > 1, with the pipeline shortcut)."""

    def __init__(self, how: Settings, lane: Lane) -> None:
        super().__init__(how, lane)
        self.claimed_at = 0.0  # when the batch in hand was claimed (monotonic): its leases run from then

    def beat(self, share: Share) -> Beat:
        self.raise_claim_error()
        b = Beat()
        batch, self.held = self.held, []
        if not batch:
            want = share.take(self.how.batch)
            if not want:
                return b
            self.claimed_at = time.monotonic()
            batch = self.lane.claim_many(want)
            share.give_back(want - len(batch))
            if not batch:
                return b
        b.claimed = batch[0]
        error = self.work(b, batch, share, claim_next=True)
        if error is not None:
            # the others settled (each settle is its own call): counted before the refusal is raised
            for _ in b.batch:
                share.note_settled()
            self.refused(error, share)
        return b

    def work(self, b: Beat, batch: list[Claimed], share: Share, claim_next: bool) -> Exception | None:
        """Each handler of the batch in turn, then its settles (and, with ``claim_next``, the next batch claim).

        Every lease of a batch runs from its one claim, so what is done settles
        at once when half the lease has gone by (the lease guard): a batch
        whose handlers together outlast the lease still makes progress. Each
        job settled goes into ``b.batch``; answers the first refusal (the jobs
        after it come back by their leases), or None.
        """
        answers: list[tuple[Claimed, bool, str | bytes]] = []
        for job in batch:
            if answers and time.monotonic() - self.claimed_at >= self.how.lease_ms / 2000:
                s = self.lane.settle_many(answers, 0)
                b.batch += [(a[0], out) for a, out in zip(answers, s.outcomes) if out is not None]
                answers = []
                if s.error is not None:
                    return s.error
            answers.append((job, *settle_args(self.how.handle(job))))
        more = share.take(self.how.batch) if claim_next else 0
        self.claimed_at = time.monotonic()  # the next batch's leases start no earlier than this
        s = self.lane.settle_many(answers, more)
        share.give_back(more - len(s.next))
        self.held, self.claim_error = s.next, s.claim_error
        b.batch += [(a[0], out) for a, out in zip(answers, s.outcomes) if out is not None]
        return s.error

    def finish_held(self, share: Share) -> list[str]:
        if not self.held:
            return []
        held, self.held = self.held, []
        b = Beat()
        error = self.work(b, held, share, claim_next=False)
        for _ in b.batch:
            share.note_settled()
        if error is not None:
            raise error
        return [out for _, out in b.batch]
