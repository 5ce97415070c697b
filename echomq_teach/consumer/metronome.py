"""The Metronome (EchoMQ.Metronome): one per queue in a pool, promote and the recovery leg on a fixed tick."""

from __future__ import annotations

from .. import jobs, stalled
from ..connector import Connector
from ..keyspace import check_queue
from .legs import check_recovery, recover
from .ticker import Ticker


class Metronome(Ticker):
    """One per queue in a pool: calls promote and the recovery leg on a fixed tick (EchoMQ.Metronome).

    ``recovery="reap"`` (the default) never buries: a job that kills every worker
    that takes it is claimed again for ever; ``"stalled"`` buries it after more
    than ``max_stalled`` lapses (``Consumer`` says when to choose which).
    """

    who = "metronome"

    def __init__(
        self,
        conn: Connector,
        queue: str,
        interval_ms: int = 100,
        recovery: str | None = "reap",
        max_stalled: int = stalled.DEFAULT_MAX_STALLED,
        lost_link: str = "raise",
        record: bool = False,
    ) -> None:
        check_queue(queue)
        super().__init__(interval_ms, lost_link)
        check_recovery(recovery, max_stalled)
        jobs.record_flag(record)
        #: the stall sweep's burials go to the completions stream (a recording pool's metronome)
        self.record = record
        self.conn, self.queue = conn, queue
        self.recovery, self.max_stalled = recovery, max_stalled
        self.ticks = 0
        self.promoted = 0
        self.recovered = 0

    def tick(self) -> tuple[list[str], list[str]]:
        """One tick: promote, then recover. Answers (promoted, recovered); the trace names the tick."""
        with self.conn.tagged("metronome tick"):
            promoted = jobs.promote(self.conn, self.queue)
            recovered, _ = recover(self.conn, self.queue, self.recovery, self.max_stalled, self.record)
        self.ticks += 1
        self.promoted += len(promoted)
        self.recovered += len(recovered)
        return promoted, recovered

    def start(self) -> None:
        # the first tick runs at once, so even a run that ends at once has had promote and recovery
        self.start_thread(f"metronome-{self.queue}")
