"""Pools: one Pool per queue, side by side (on a cluster, a pool across the shards its queues live on)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from .. import jobs
from ..connector import Connector
from ..keyspace import check_queue
from .handler import Handler
from .pool import Pool
from .report import RunReport, combine


class Pools:
    """One ``Pool`` per queue, run side by side: on a cluster, a pool across the shards its queues live on.

    Each queue keeps its own consumers and its own Metronome (one per queue, as
    in a single Pool); ``run`` answers one ``RunReport`` per queue.
    """

    def __init__(self, conn: Connector, queues: Sequence[str], handler: Handler, size: int = 2, **pool_opts: object):
        if isinstance(queues, str) or not isinstance(queues, Sequence) or not queues:
            raise jobs.BadInput("queues must be a non-empty list of queue names")
        for q in queues:
            check_queue(q)
        if len(set(queues)) != len(queues):
            raise jobs.BadInput(f"queues lists a queue twice: {list(queues)!r}")
        self.pools: dict[str, Pool] = {}
        try:
            for q in queues:
                self.pools[q] = Pool(conn, q, handler, size, **pool_opts)  # type: ignore[arg-type]
        except BaseException:
            self.close()  # a refused option opens nothing for the queues after it, and closes the ones before
            raise

    def run(self, max_jobs: int | None = None, timeout: float = 10.0, until_idle: bool = False) -> dict[str, RunReport]:
        """Run every queue's pool on its own thread; ``max_jobs`` bounds each queue. Answers queue → report."""
        out: dict[str, RunReport] = {}
        lock = threading.Lock()

        def work(q: str, pool: Pool) -> None:
            r = pool.run(max_jobs=max_jobs, timeout=timeout, until_idle=until_idle)
            with lock:
                out[q] = r

        threads = [threading.Thread(target=work, args=(q, p), daemon=True) for q, p in self.pools.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout + 10)
        return out

    @staticmethod
    def total(reports: dict[str, RunReport]) -> RunReport:
        """The queues' reports added up (seconds: the longest)."""
        return combine(list(reports.values()), max((r.seconds for r in reports.values()), default=0.0))

    def close(self) -> None:
        for p in self.pools.values():
            p.close()
