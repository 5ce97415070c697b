def your_own_reap():
    # A lease has lapsed when the server's clock has passed its deadline (the active score). Take at most N of
    # those, earliest first. Below the cap, put each back in pending at score 0 with its row's state pending, and
    # leave attempts alone: the next claim raises it, and that new token is what the dead worker's settle cannot
    # match (while no one has claimed it yet, the row's state, pending, is what refuses that settle). At the cap,
    # the job has had all its tries: bury it in dead, its row saying so, and record its one ending on the
    # completions stream, so a poison job stops there.
    return """
-- bounded_reap: lapsed leases back to pending, or buried once their attempts reached the cap
-- KEYS[1] active    the queue's active set (score: the lease's deadline, server ms)
-- KEYS[2] pending   the queue's pending set (score 0)
-- KEYS[3] dead      the queue's dead set (score: when the job died, server ms)
-- KEYS[4] base      emq:{q}: (a job's row is base .. 'job:' .. id; the stream base .. 'stream:completions')
-- ARGV[1] limit     at most this many lapsed leases per call
-- ARGV[2] max       max_attempts: a lapse on a job whose attempts reached it buries the job
-- reply   {the ids moved back, the ids buried}, each earliest deadline first
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, tonumber(ARGV[1]))
local back, buried = {}, {}
for _, id in ipairs(lapsed) do
  local row = KEYS[4] .. 'job:' .. id
  redis.call('ZREM', KEYS[1], id)
  local attempts = redis.call('HGET', row, 'attempts')
  if attempts and tonumber(attempts) >= tonumber(ARGV[2]) then
    redis.call('ZADD', KEYS[3], now, id)
    redis.call('HSET', row, 'state', 'dead', 'last_error', 'its lease lapsed on its last attempt')
    redis.call('XADD', KEYS[4] .. 'stream:completions', '*', 'id', id, 'outcome', 'stalled',
      'attempts', attempts, 'error', 'its lease lapsed on its last attempt')
    buried[#buried + 1] = id
  elseif attempts then
    redis.call('ZADD', KEYS[2], 0, id)
    redis.call('HSET', row, 'state', 'pending')
    back[#back + 1] = id
  end
end
return {back, buried}
"""
