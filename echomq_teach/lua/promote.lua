-- @promote: return due scheduled jobs to pending (EchoMQ.Jobs.promote/3)
-- KEYS: [1] schedule, [2] pending, [3] the base emq:{q}:
-- ARGV: [1] limit, the most members moved in one call
-- reply: the ids promoted, oldest run-at first
-- @include args
-- @include types
-- @include back_to_pending
local bad = refuse_positive('limit', ARGV[1])
if bad then return bad end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
-- a pending that is not a sorted set would fail the first move after its ZREM
bad = #due > 0 and refuse_type(KEYS[2], 'zset')
if bad then return bad end
for _, id in ipairs(due) do
  back_to_pending(KEYS[1], KEYS[2], KEYS[3], id)
end
return due
