-- back_to_pending: move one id from a set back to pending at score 0, state pending (promote, reap)
-- src: the set it leaves; pending: the pending set; base: emq:{q}:; id: the job
-- an id whose row is gone leaves its set and goes nowhere: a removed job leaves no ghost in pending
local function back_to_pending(src, pending, base, id)
  redis.call('ZREM', src, id)
  local jk = base .. 'job:' .. id
  if redis.call('EXISTS', jk) == 1 then
    redis.call('ZADD', pending, 0, id)
    redis.call('HSET', jk, 'state', 'pending')
    -- whatever lease the job had has ended, and a native claim's lease_epoch with it
    redis.call('HDEL', jk, 'lease_epoch')
  end
end
