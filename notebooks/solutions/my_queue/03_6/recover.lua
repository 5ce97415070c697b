-- recover.lua · your queue's recovery of lapsed leases (stage 03.6), in the place of the kit's @stalled_check
-- KEYS: [1] active, [2] pending, [3] dead, [4] the base emq:{q}: (a job's row is KEYS[4] .. 'job:' .. id)
-- ARGV: [1] max_attempts (the cap, when a row carries none of its own), [2] record (optional)
-- reply: {the ids moved back to pending, the ids buried in dead}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- a lease has lapsed once the server's clock passed its deadline; at most 100 a call, earliest first
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, 100)
local back, buried = {}, {}
for _, id in ipairs(lapsed) do
  redis.call('ZREM', KEYS[1], id)
  local row = KEYS[4] .. 'job:' .. id
  local r = redis.call('HMGET', row, 'attempts', 'prior_attempts', 'max_attempts')
  -- an id whose row is gone goes nowhere: a removed job leaves no ghost
  if r[1] then
    local tries = tonumber(r[1]) - tonumber(r[2] or '0')
    if tries < tonumber(r[3] or ARGV[1]) then
      -- attempts stay as they are: the next claim moves the token past the one the lapsed worker holds
      redis.call('ZADD', KEYS[2], 0, id)
      redis.call('HSET', row, 'state', 'pending')
      back[#back + 1] = id
    else
      -- the lapse of its last try: a poison job stops here, with its one ending
      redis.call('ZADD', KEYS[3], now, id)
      redis.call('HSET', row, 'state', 'dead', 'last_error', 'stalled')
      if ARGV[2] == '1' then
        redis.call('XADD', KEYS[4] .. 'stream:completions', '*', 'id', id, 'outcome', 'stalled',
          'attempts', r[1], 'error', 'stalled')
      end
      buried[#buried + 1] = id
    end
  end
end
return {back, buried}
