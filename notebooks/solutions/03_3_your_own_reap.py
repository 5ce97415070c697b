def your_own_reap():
    # A lease has lapsed when the server's clock has passed its deadline (the active score). Take at most N
    # of those, earliest first, and put each back in pending at score 0 with its row's state pending.
    # attempts is left as it is: the next claim raises it, and that is what fences out the dead worker.
    return """
-- my_reap: move up to N lapsed leases back to pending, on the server's clock
-- KEYS[1] active    the queue's active set (score: the lease's deadline, server ms)
-- KEYS[2] pending   the queue's pending set (score 0)
-- KEYS[3] base      emq:{q}: (a job's row is base .. 'job:' .. id)
-- ARGV[1] limit     at most this many leases per call
-- reply   the ids moved back, earliest deadline first
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, id in ipairs(lapsed) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], 0, id)
  redis.call('HSET', KEYS[3] .. 'job:' .. id, 'state', 'pending')
end
return lapsed
"""
