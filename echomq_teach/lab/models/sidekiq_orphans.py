"""Case 3 — sidekiq's reliable fetch recovers orphans only when a process starts.

The report (sidekiq #3196, #4633): each process moves the job it fetches into
its own private list, so a crash loses nothing. Those orphans are put back
only by a process that is starting, and only once the dead process's
heartbeat has expired; a process started before that never looks again. A job
that crashes its process is recovered at the next start and crashes it again,
with nothing counting how often (the fix: count recoveries, bury after 3).
"""

from __future__ import annotations

from typing import Any

from ..checker import FinalState
from .base import Model, split, state

HEARTBEAT_MS = 400


class SidekiqOrphans(Model):
    name = "sidekiq_orphans"
    settle_after_stop = HEARTBEAT_MS / 1000  # a stopped process's heartbeat lapses like a dead one's

    def enqueue(self, r: Any, job: str, payload: str) -> None:
        r.lpush(self.key("queue"), f"{job}|{payload}")

    def on_start(self, w: Any) -> None:
        """At start only: every process whose heartbeat expired has its private list put back."""
        w.rec.call("reap", lambda: self.recover_orphans(w.r, w.name))
        w.r.sadd(self.key("processes"), w.name)

    def recover_orphans(self, r: Any, me: str) -> list[str]:
        back = []
        for proc in r.smembers(self.key("processes")):
            if proc == me or r.exists(self.key(f"heartbeat:{proc}")):
                continue
            while (msg := r.lmove(self.key(f"working:{proc}"), self.key("queue"), "RIGHT", "LEFT")) is not None:
                back.append(split(msg)[0])
            r.srem(self.key("processes"), proc)
        return back

    def fetch(self, r: Any, worker: str) -> tuple[str, str, int] | None:
        r.set(self.key(f"heartbeat:{worker}"), "1", px=HEARTBEAT_MS)  # the beat says: alive
        msg = r.lmove(self.key("queue"), self.key(f"working:{worker}"), "RIGHT", "LEFT")
        if msg is None:
            return None
        job, payload = split(msg)
        return job, payload, self.delivery(r, job)

    def ack(self, r: Any, worker: str, job: str, token: int) -> str:
        working = self.key(f"working:{worker}")
        for msg in r.lrange(working, 0, -1):
            if split(msg)[0] == job:
                p = r.pipeline(transaction=True)
                p.lrem(working, 1, msg)
                self.record(p, job, "completed", token)
                p.execute()
                return "ok"
        return "gone"

    def final(self, r: Any) -> FinalState:
        pending = {split(m)[0] for m in r.lrange(self.key("queue"), 0, -1)}
        active: set[str] = set()
        orphaned: set[str] = set()
        for proc in r.smembers(self.key("processes")):
            held = {split(m)[0] for m in r.lrange(self.key(f"working:{proc}"), 0, -1)}
            # a live process still works on its list; a dead one's waits for a start that may never come
            (active if r.exists(self.key(f"heartbeat:{proc}")) else orphaned).update(held)
        rows = {j: {"state": "held by a dead process"} for j in orphaned}
        rows.update({j: {"state": "pending"} for j in pending} | {j: {"state": "active"} for j in active})
        return state({"pending": pending, "active": active}, rows, self.endings(r))


Model = SidekiqOrphans
