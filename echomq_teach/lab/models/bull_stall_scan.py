"""Case 4 — bull's stalled-job check reads the active list in one round trip and takes a job in another.

The report (OptimalBits/bull #356, fixed by PR #359): to find jobs whose
worker died, a queue read the whole active list, then looked at each job in
turn and took any job that was not in the completed set and held no lock. A
job that finished (and was removed, a common option) between the read and the
look was in neither place, so it was taken and run a second time. The fix did
the read, the check and the take in one script.
"""

from __future__ import annotations

from typing import Any

from ..checker import FinalState
from .base import Model, state

# KEYS: [1] wait, [2] active; ARGV: [1] the base case:{q}:, [2] the worker's lock token, [3] lease ms
# reply: {id, payload, attempts}, or nil when wait is empty
FETCH = """
local id = redis.call('RPOPLPUSH', KEYS[1], KEYS[2])
if not id then return nil end
redis.call('SET', ARGV[1] .. 'lock:' .. id, ARGV[2], 'PX', ARGV[3])
local n = redis.call('HINCRBY', ARGV[1] .. 'job:' .. id, 'attempts', 1)
return {id, redis.call('HGET', ARGV[1] .. 'job:' .. id, 'payload'), n}
"""
# KEYS: [1] active, [2] endings; ARGV: [1] the base, [2] id, [3] lock token, [4] attempts
# reply: 'ok', 'missing' (no such job), or 'lock mismatch'
COMPLETE = """
local job = ARGV[1] .. 'job:' .. ARGV[2]
if redis.call('EXISTS', job) == 0 then return 'missing' end
if redis.call('GET', ARGV[1] .. 'lock:' .. ARGV[2]) ~= ARGV[3] then return 'lock mismatch' end
redis.call('DEL', ARGV[1] .. 'lock:' .. ARGV[2], job)
redis.call('LREM', KEYS[1], 0, ARGV[2])
redis.call('XADD', KEYS[2], '*', 'id', ARGV[2], 'outcome', 'completed', 'attempts', ARGV[4])
return 'ok'
"""
# KEYS: [1] completed; ARGV: [1] the base, [2] id, [3] lock token, [4] lease ms
# reply: 1 when this caller took the job's lock (not completed, not locked), else 0
TAKE_STALLED = """
if redis.call('SISMEMBER', KEYS[1], ARGV[2]) == 1 then return 0 end
if redis.call('SET', ARGV[1] .. 'lock:' .. ARGV[2], ARGV[3], 'NX', 'PX', ARGV[4]) then return 1 end
return 0
"""


class BullLike(Model):
    """A wait list, an active list, a hash per job and a lock key per job (``SET … PX``)."""

    def enqueue(self, r: Any, job: str, payload: str) -> None:
        p = r.pipeline(transaction=True)
        p.hset(self.key(f"job:{job}"), mapping={"payload": payload, "attempts": 0})
        p.lpush(self.key("wait"), job)
        p.execute()

    def fetch(self, r: Any, worker: str) -> tuple[str, str, int] | None:
        got = r.eval(FETCH, 2, self.key("wait"), self.key("active"), self.key(""), worker, self.lease_ms)
        return (got[0], got[1] or "", int(got[2])) if got else None

    def ack(self, r: Any, worker: str, job: str, token: int) -> str:
        return r.eval(COMPLETE, 2, self.key("active"), self.key("endings"), self.key(""), job, worker, token)

    def final(self, r: Any) -> FinalState:
        wait, active = set(r.lrange(self.key("wait"), 0, -1)), set(r.lrange(self.key("active"), 0, -1))
        rows = {k.rsplit(":", 1)[1]: r.hgetall(k) for k in r.scan_iter(match=self.key("job:*"), count=500)}
        return state({"pending": wait, "active": active}, rows, self.endings(r))


class BullStallScan(BullLike):
    name = "bull_stall_scan"
    #: how often each worker runs the stalled-job check (every other beat: bull ran it on a timer in
    #: every worker, so several checks overlap each other and the jobs they look at)
    every = 2

    def beat(self, w: Any) -> bool:
        w.beats = getattr(w, "beats", 0) + 1
        if w.beats % self.every == 0:
            self.check_stalled(w)
        return super().beat(w)

    def check_stalled(self, w: Any) -> None:
        r = w.r
        listed = r.lrange(self.key("active"), 0, -1)  # round trip 1: the list as it was
        p = r.pipeline(transaction=False)
        for job in listed:
            p.hgetall(self.key(f"job:{job}"))
        seen = p.execute()  # and every listed job's data, read with it, before any take
        for job, data in zip(listed, seen):
            if not data:
                continue
            token = int(data.get("attempts", 0)) + 1

            def take(job: str = job) -> Any:
                return r.eval(TAKE_STALLED, 1, self.key("completed"), self.key(""), job, w.name, self.lease_ms)

            # one round trip per job, each later than the read: a job that ended meanwhile has no lock
            took = w.rec.call("claim", take, shape=lambda t, job=job, token=token: {"job": job, "token": token}
                              if t else {}, extra={"lease_ms": self.lease_ms, "via": "stalled check"})
            if took:  # round trip 2 said: no lock, not completed; this queue runs the job itself
                ok = w.run(job, data.get("payload", ""), token)
                self.settle(w, job, token, ok)


Model = BullStallScan
