"""The page's beat (EchoMQ.Consumer's): promote, recover, one claim, the handler, the settle; each leg one call."""

from __future__ import annotations

from .. import jobs
from ..jobs import Claimed
from .beat import Beat, Settings
from .budget import Share
from .handler import settle_args
from .legs import recover


class PageBeat:
    """The beat the course page draws: every leg is one real call, in order."""

    def __init__(self, how: Settings) -> None:
        self.how = how
        self.held: list[Claimed] = []  # never any: the page's beat claims one job and settles it

    def beat(self, share: Share) -> Beat:
        how = self.how
        b = Beat()
        if how.promote:
            b.promoted = jobs.promote(how.conn, how.queue)
        b.recovered, b.buried = recover(how.conn, how.queue, how.recovery, how.max_stalled, how.record)
        if not share.take():
            return b
        b.claimed = jobs.claim(how.conn, how.queue, how.lease_ms)
        if b.claimed is None:
            share.give_back()
            return b
        job = b.claimed
        ok, value = settle_args(how.handle(job))
        if not ok:
            reason = str(value)
            b.outcome = jobs.retry(
                how.conn, how.queue, job.id, job.attempts, reason, how.retry_delay_ms, how.max_attempts,
                record=how.record,
            )
            b.detail = reason
        else:
            b.outcome = jobs.complete(how.conn, how.queue, job.id, job.attempts, value, record=how.record)
        return b

    def finish_held(self, share: Share) -> list[str]:
        return []

    def drop(self) -> None:
        pass
