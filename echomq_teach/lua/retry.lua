-- @retry: answer a handler's error, fenced by the token: park it, or bury it at the cap (EchoMQ.Jobs.retry/7)
-- KEYS: [1] active, [2] schedule, [3] dead, [4] the row; a flow child adds [5] parent's :dependencies, [6] its :unsuccessful, [7] the parent row
-- ARGV: [1] id, [2] token, [3] delay_ms, [4] max_attempts, [5] reason, [6] the base p, [7] parent id ('' if none), [8] record ('1' adds a death to stream:completions)
-- reply: 'scheduled' or 'dead', or 0 when stale (token moved on, or the row is no longer active): nothing written
-- @include child_death
local p = ARGV[6]
local row = redis.call('HMGET', KEYS[4], 'attempts', 'state')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
local was_active = redis.call('ZREM', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
-- below the cap: the schedule set is a visibility fence, not a second queue
if tonumber(row[1]) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
  redis.call('HSET', KEYS[4], 'state', 'scheduled', 'last_error', ARGV[5])
  return 'scheduled'
end
-- at the cap the claim count equals max attempts: the job goes to the morgue
redis.call('ZADD', KEYS[3], now, ARGV[1])
redis.call('HSET', KEYS[4], 'state', 'dead', 'last_error', ARGV[5])
if ARGV[8] == '1' then
  redis.call('XADD', p .. 'stream:completions', '*', 'id', ARGV[1], 'outcome', 'dead',
    'attempts', ARGV[2], 'error', ARGV[5])
end
-- a dying flow child: its parent_policy decides, inside the once-only branch
if KEYS[5] and was_active == 1 then
  child_death(KEYS[4], ARGV[1], KEYS[5], KEYS[6], KEYS[7], ARGV[7], KEYS[3], p .. 'pending', ARGV[5], now)
end
return 'dead'
