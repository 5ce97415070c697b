-- @promote: return due scheduled jobs to pending (EchoMQ.Jobs.promote/3)
-- KEYS: [1] schedule, [2] pending, [3] the base emq:{q}:
-- ARGV: [1] limit, the most members moved in one call
-- reply: the ids promoted, oldest run-at first
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, id in ipairs(due) do
  redis.call('ZREM', KEYS[1], id)
  local jk = KEYS[3] .. 'job:' .. id
  -- a removed job leaves no ghost behind in pending
  if redis.call('EXISTS', jk) == 1 then
    redis.call('ZADD', KEYS[2], 0, id)
    redis.call('HSET', jk, 'state', 'pending')
  end
end
return due
