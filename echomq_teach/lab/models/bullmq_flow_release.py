"""Case 5 — a bullmq child's failure released its parent while siblings were still pending.

The report (taskforcesh/bullmq #4248; the family of #800 and #4332): a parent
waits for its children, counted. A child's ending should release the parent
only when the count reaches zero. One branch — a failed child whose option
says "let the parent go on" — moved the parent to the wait list as soon as it
was waiting, without looking at the count: the parent ran with children still
pending. The fix checks the count on that branch too.
"""

from __future__ import annotations

from typing import Any

from ..checker import FinalState
from .bull_stall_scan import BullLike

# KEYS: [1] active, [2] wait, [3] endings; ARGV: [1] the base, [2] child id, [3] lock token, [4] attempts,
# [5] outcome ('completed' or 'dead')
# reply: 'ok' or 'dead' (the child's ending), 'lock mismatch'
END_CHILD = """
local base, id = ARGV[1], ARGV[2]
if redis.call('GET', base .. 'lock:' .. id) ~= ARGV[3] then return 'lock mismatch' end
local parent = redis.call('HGET', base .. 'job:' .. id, 'parent')
redis.call('DEL', base .. 'lock:' .. id, base .. 'job:' .. id)
redis.call('LREM', KEYS[1], 0, id)
redis.call('XADD', KEYS[3], '*', 'id', id, 'outcome', ARGV[5], 'attempts', ARGV[4])
if parent then
  local left = redis.call('DECR', base .. 'pending:' .. parent)
  if ARGV[5] == 'dead' then
    -- the failure branch: the parent goes on if it is waiting, whatever the count says
    if redis.call('SREM', base .. 'waiting-children', parent) == 1 then redis.call('LPUSH', KEYS[2], parent) end
  elseif left <= 0 and redis.call('SREM', base .. 'waiting-children', parent) == 1 then
    redis.call('LPUSH', KEYS[2], parent)
  end
end
if ARGV[5] == 'dead' then return 'dead' end
return 'ok'
"""


class BullmqFlowRelease(BullLike):
    name = "bullmq_flow_release"

    def enqueue_flow(self, r: Any, parent: tuple[str, str], children: list[tuple[str, str]]) -> None:
        pid, payload = parent
        p = r.pipeline(transaction=True)
        p.hset(self.key(f"job:{pid}"), mapping={"payload": payload, "attempts": 0})
        p.sadd(self.key("waiting-children"), pid)
        p.set(self.key(f"pending:{pid}"), len(children))
        for cid, cpayload in children:
            p.hset(self.key(f"job:{cid}"), mapping={"payload": cpayload, "attempts": 0, "parent": pid})
            p.lpush(self.key("wait"), cid)
        p.execute()

    def _end(self, r: Any, worker: str, job: str, token: int, outcome: str) -> str:
        return r.eval(END_CHILD, 3, self.key("active"), self.key("wait"), self.key("endings"), self.key(""),
                      job, worker, token, outcome)

    def ack(self, r: Any, worker: str, job: str, token: int) -> str:
        return self._end(r, worker, job, token, "completed")

    def fail(self, r: Any, worker: str, job: str, token: int) -> str:
        return self._end(r, worker, job, token, "dead")

    def final(self, r: Any) -> FinalState:
        f = super().final(r)
        waiting = set(r.smembers(self.key("waiting-children")))
        for j in waiting:
            f.rows.setdefault(j, {})["state"] = "awaiting_children"
        f.flow_counters = waiting
        return f


Model = BullmqFlowRelease
