-- @stalled_check: the counted stall sweep over lapsed leases (EchoMQ.Stalled.check/3)
-- KEYS: [1] active, [2] pending, [3] dead, [4] the base emq:{q}:
-- ARGV: [1] max_stalled, the stalls a job may have before it is buried; [2] record, optional ('1' adds each burial, and a parent's it causes, to stream:completions)
-- reply: {requeued ids, dead ids}; each lapsed lease adds 1 to the row's stalled count, up to 100 per call
-- @include args
-- @include types
-- @include same_flow
-- @include child_death
local record = record_flag(2)
local bad = refuse_positive('max_stalled', ARGV[1]) or refuse_count('@stalled_check', 1, true) or refuse_record(record)
if bad then return bad end
if #KEYS ~= 4 then return redis.error_reply('EMQARG @stalled_check takes 4 keys, got ' .. #KEYS) end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local max_stalled = tonumber(ARGV[1])
-- a recording sweep writes each burial's entry, and a parent's it fails, in this same step
local stream = KEYS[4] .. 'stream:completions'
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, 100)
-- what the writes below would trip on, checked while nothing is written (a buried child's parent
-- keys are not: the sweep's own writes change them as it goes; EMQ.STALLED.CHECK judges those too)
if #lapsed > 0 then
  bad = refuse_type(KEYS[2], 'zset') or refuse_type(KEYS[3], 'zset') or (record == '1' and refuse_type(stream, 'stream'))
    or nil
  for _, id in ipairs(lapsed) do
    local jk = KEYS[4] .. 'job:' .. id
    bad = bad or refuse_type(jk, 'hash')
    local stalled = not bad and redis.call('HGET', jk, 'stalled')
    if stalled and not string.match(stalled, '^-?%d+$') then
      bad = redis.error_reply('EMQSTATE ' .. jk .. ' stalled is not an integer that can grow')
    end
  end
  if bad then return bad end
end
local requeued, dead = {}, {}
for _, id in ipairs(lapsed) do
  redis.call('ZREM', KEYS[1], id)
  local jk = KEYS[4] .. 'job:' .. id
  if redis.call('EXISTS', jk) == 1 then
    local stalled = redis.call('HINCRBY', jk, 'stalled', 1)
    -- the lease ends here, and a native claim's lease_epoch with it
    redis.call('HDEL', jk, 'lease_epoch')
    if stalled > max_stalled then
      redis.call('ZADD', KEYS[3], now, id)
      redis.call('HSET', jk, 'state', 'dead', 'last_error', 'stalled')
      dead[#dead + 1] = id
      if record == '1' then
        redis.call('XADD', stream, '*', 'id', id, 'outcome', 'stalled',
          'attempts', redis.call('HGET', jk, 'attempts') or '0', 'error', 'stalled')
      end
      -- a buried flow child answers to its parent's policy, as a retry at the cap does
      local pid = redis.call('HGET', jk, 'parent')
      if pid then
        local pk = KEYS[4] .. 'job:' .. pid
        child_death(jk, id, pk .. ':dependencies', pk .. ':unsuccessful', pk, pid, KEYS[3], KEYS[2], 'stalled', now,
          record == '1' and stream)
      end
    else
      redis.call('ZADD', KEYS[2], 0, id)
      redis.call('HSET', jk, 'state', 'pending')
      requeued[#requeued + 1] = id
    end
  end
end
return {requeued, dead}
