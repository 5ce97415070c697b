-- @reap: return up to 100 lapsed leases to pending, on the server clock (EchoMQ.Jobs.reap/2)
-- KEYS: [1] active, [2] pending, [3] the base emq:{q}:
-- ARGV: none
-- reply: the ids reaped, earliest deadline first; attempts stay as they are, so the next claim moves the token
-- @include types
-- @include back_to_pending
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
-- a lease is lapsed once the clock has passed its deadline (the active score)
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, 100)
-- a pending that is not a sorted set would fail the first move after its ZREM
local bad = #lapsed > 0 and refuse_type(KEYS[2], 'zset')
if bad then return bad end
for _, id in ipairs(lapsed) do
  back_to_pending(KEYS[1], KEYS[2], KEYS[3], id)
end
return lapsed
