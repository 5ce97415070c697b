#!lua flags=no-writes
-- @snapshot: one queue's whole state in one atomic read, for widgets and checks (EchoMQ.Inspect.snapshot/2)
-- KEYS: [1] the base emq:{q}:
-- ARGV: none
-- reply: {now_ms, paused, pending, active, schedule, dead, rows, counters, completed, stream_len}; sets as {id, score, ...}, rows as {key, {field, value, ...}, ...}
-- @include glob_escape
local b = KEYS[1]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local function zset(name)
  return redis.call('ZRANGE', b .. name, 0, -1, 'WITHSCORES')
end
-- every key under the base's job: prefix: rows, and a parent's flow keys
local rows, counters = {}, {}
local cursor = '0'
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', glob_escape(b) .. 'job:*', 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    local kind = redis.call('TYPE', k)['ok']
    if kind == 'hash' then
      rows[#rows + 1] = k
      rows[#rows + 1] = redis.call('HGETALL', k)
    elseif kind == 'string' then
      counters[#counters + 1] = k
      counters[#counters + 1] = redis.call('GET', k)
    end
  end
until cursor == '0'
local completed = redis.call('HGET', b .. 'metrics:completed', 'count') or '0'
local stream_len = 0
if redis.call('EXISTS', b .. 'stream:completions') == 1 then
  stream_len = redis.call('XLEN', b .. 'stream:completions')
end
return {now, redis.call('EXISTS', b .. 'paused'), zset('pending'), zset('active'), zset('schedule'),
  zset('dead'), rows, counters, completed, stream_len}
