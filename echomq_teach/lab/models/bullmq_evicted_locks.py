"""Case 6 — bullmq's job locks are keys with a TTL, and a node under ``volatile-lru`` evicts them.

The reports (taskforcesh/bullmq #1046 and #2215, langfuse/langfuse #15509):
a worker holds each job by a lock key that expires unless renewed. On a node
shared with a cache and set to ``volatile-lru``, a full memory evicts keys that
carry a TTL — the cache's, and the locks. A job whose lock was evicted looks
stalled: the stalled check moves it back to wait, another worker runs it while
the first still does, and the first worker's own completion is refused for the
missing lock (langfuse's worker then stopped consuming, for days, while
reported healthy). bullmq's answer: warn at start unless the policy is
``noeviction``.
"""

from __future__ import annotations

from typing import Any

from .bull_stall_scan import BullLike

# KEYS: [1] active, [2] wait; ARGV: [1] the base
# reply: the ids moved back to wait: every active job whose lock is gone (one step, as bullmq's is)
MOVE_STALLED = """
local back = {}
for _, id in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  if redis.call('EXISTS', ARGV[1] .. 'lock:' .. id) == 0 then
    redis.call('LREM', KEYS[1], 0, id)
    redis.call('RPUSH', KEYS[2], id)
    back[#back + 1] = id
  end
end
return back
"""


class BullmqEvictedLocks(BullLike):
    name = "bullmq_evicted_locks"
    sweep_op = "stalled"

    def sweep(self, r: Any) -> list[str]:
        return list(r.eval(MOVE_STALLED, 2, self.key("active"), self.key("wait"), self.key("")))


Model = BullmqEvictedLocks
