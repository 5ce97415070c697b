-- @stalled_check: the counted stall sweep over lapsed leases (EchoMQ.Stalled.check/3)
-- KEYS: [1] active, [2] pending, [3] dead, [4] the base emq:{q}:
-- ARGV: [1] max_stalled, the stalls a job may have before it is buried
-- reply: {requeued ids, dead ids}; each lapsed lease adds 1 to the row's stalled count, up to 100 per call
-- @include child_death
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local max_stalled = tonumber(ARGV[1])
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, 100)
local requeued, dead = {}, {}
for _, id in ipairs(lapsed) do
  redis.call('ZREM', KEYS[1], id)
  local jk = KEYS[4] .. 'job:' .. id
  if redis.call('EXISTS', jk) == 1 then
    local stalled = redis.call('HINCRBY', jk, 'stalled', 1)
    if stalled > max_stalled then
      redis.call('ZADD', KEYS[3], now, id)
      redis.call('HSET', jk, 'state', 'dead', 'last_error', 'stalled')
      dead[#dead + 1] = id
      -- a buried flow child answers to its parent's policy, as a retry at the cap does
      local pid = redis.call('HGET', jk, 'parent')
      if pid then
        local pk = KEYS[4] .. 'job:' .. pid
        if redis.call('EXISTS', pk) == 1 then
          child_death(jk, id, pk .. ':dependencies', pk .. ':unsuccessful', pk, pid, KEYS[3], KEYS[2], 'stalled', now)
        end
      end
    else
      redis.call('ZADD', KEYS[2], 0, id)
      redis.call('HSET', jk, 'state', 'pending')
      requeued[#requeued + 1] = id
    end
  end
end
return {requeued, dead}
