"""Case 1 — kombu's Redis transport restores a message after its visibility timeout, still running or not.

The report (celery/kombu #337, celery #5935, pretix/pretix #2058): a delivered
message waits in an "unacked" hash, indexed in a sorted set by the time it was
delivered. A restore step puts back every message older than the visibility
timeout. Nothing tells it that a worker still runs the message, and nothing
renews the time: a task longer than the timeout is delivered again, and both
runs acknowledge.
"""

from __future__ import annotations

import time
from typing import Any

from ..checker import FinalState
from .base import Model, split, state


class KombuRestore(Model):
    name = "kombu_restore"

    def enqueue(self, r: Any, job: str, payload: str) -> None:
        r.lpush(self.key("queue"), f"{job}|{payload}")

    def fetch(self, r: Any, worker: str) -> tuple[str, str, int] | None:
        msg = r.rpop(self.key("queue"))  # round trip 1: the message leaves the list
        if msg is None:
            return None
        job, payload = split(msg)
        p = r.pipeline(transaction=True)  # round trip 2: remembered as unacked, stamped with the client's clock
        p.hset(self.key("unacked"), job, msg)
        p.zadd(self.key("unacked_index"), {job: time.time()})
        p.execute()
        return job, payload, self.delivery(r, job)

    def ack(self, r: Any, worker: str, job: str, token: int) -> str:
        p = r.pipeline(transaction=True)  # forget the delivery: whoever holds it now
        p.zrem(self.key("unacked_index"), job)
        p.hdel(self.key("unacked"), job)
        self.record(p, job, "completed", token)
        p.execute()
        return "ok"

    def sweep(self, r: Any) -> list[str]:
        """The restore: every delivery older than the visibility timeout goes back, running or not."""
        ceiling = time.time() - self.lease_ms / 1000
        restored = []
        for job in r.zrangebyscore(self.key("unacked_index"), 0, ceiling):
            msg = r.hget(self.key("unacked"), job)
            p = r.pipeline(transaction=True)
            if msg is not None:
                p.lpush(self.key("queue"), msg)
            p.zrem(self.key("unacked_index"), job)
            p.hdel(self.key("unacked"), job)
            p.execute()
            restored.append(job)
        return restored

    def final(self, r: Any) -> FinalState:
        pending = {split(m)[0] for m in r.lrange(self.key("queue"), 0, -1)}
        active = set(r.hkeys(self.key("unacked")))
        rows = {j: {"state": "pending" if j in pending else "active"} for j in pending | active}
        return state({"pending": pending, "active": active}, rows, self.endings(r))


Model = KombuRestore
