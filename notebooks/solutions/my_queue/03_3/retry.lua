-- retry.lua · your queue's answer to a handler's error (stage 03.3), in the place of the kit's @retry
-- KEYS: [1] active, [2] schedule, [3] dead, [4] the row
-- ARGV: [1] id, [2] token, [3] delay_ms, [4] max_attempts, [5] reason, [6] the base, [7] parent id, [8] record (optional)
-- reply: 'scheduled' or 'dead', or 0 when the caller no longer holds the job (nothing written)
local row = redis.call('HMGET', KEYS[4], 'attempts', 'state', 'prior_attempts', 'max_attempts')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
-- this life's tries: a reprocess starts a new life at prior_attempts; a job's own cap wins over the caller's
local tries = tonumber(row[1]) - tonumber(row[3] or '0')
local cap = tonumber(row[4] or ARGV[4])
redis.call('ZREM', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tries < cap then
  -- the backoff doubles with each try of this life: delay, 2 delay, 4 delay, ...
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]) * 2 ^ (tries - 1), ARGV[1])
  redis.call('HSET', KEYS[4], 'state', 'scheduled', 'last_error', ARGV[5])
  return 'scheduled'
end
redis.call('ZADD', KEYS[3], now, ARGV[1])
redis.call('HSET', KEYS[4], 'state', 'dead', 'last_error', ARGV[5])
if ARGV[8] == '1' then
  redis.call('XADD', ARGV[6] .. 'stream:completions', '*', 'id', ARGV[1], 'outcome', 'dead',
    'attempts', ARGV[2], 'error', ARGV[5])
end
return 'dead'
