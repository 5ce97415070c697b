-- @retry: answer a handler's error, fenced by the token: park it, or bury it at the cap (EchoMQ.Jobs.retry/7)
-- KEYS: [1] active, [2] schedule, [3] dead, [4] the row; a flow child adds [5] parent's :dependencies, [6] its :unsuccessful, [7] the parent row
-- ARGV: [1] id, [2] token, [3] delay_ms, [4] max_attempts, [5] reason, [6] the base p, [7] parent id ('' if none), [8] record, optional ('1' adds a death, and a parent's it causes, to stream:completions)
-- reply: 'scheduled' or 'dead', or 0 when stale (token moved on, or the row is no longer active): nothing written
-- @include args
-- @include types
-- @include same_flow
-- @include child_death
local p = ARGV[6]
-- every check before the first write, as EMQ.FAIL makes them: a refused retry leaves the job where it was;
-- seven ARGV, or eight with the record flag (absent: not recorded), as @complete takes five or six
local record = record_flag(8)
local bad = refuse_count('@retry', 7, true) or refuse_positive('token', ARGV[2]) or refuse_positive('delay_ms', ARGV[3])
  or refuse_positive('max_attempts', ARGV[4]) or refuse_record(record)
if bad then return bad end
local stream = p .. 'stream:completions'
if #KEYS ~= 4 and #KEYS ~= 7 then return redis.error_reply('EMQARG @retry takes 4 keys, or 7 for a flow child') end
local row = redis.call('HMGET', KEYS[4], 'attempts', 'state', 'prior_attempts')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
-- attempts runs on across a reprocess, so a token never repeats (D-5 in docs/decisions.md); the cap counts this life's
-- claims only: attempts minus prior_attempts, where the reprocess started this life
local prior = tonumber(row[3] or '0')
if not prior then return redis.error_reply('EMQSTATE ' .. KEYS[4] .. ' prior_attempts is not an integer') end
local below_cap = tonumber(row[1]) - prior < tonumber(ARGV[4])
if below_cap then
  bad = refuse_type(KEYS[2], 'zset')
else
  bad = refuse_type(KEYS[3], 'zset') or (record == '1' and refuse_type(stream, 'stream')) or nil
  if not bad and KEYS[5] then
    bad = refuse_type(KEYS[5], 'string') or refuse_type(KEYS[6], 'hash') or refuse_type(KEYS[7], 'hash')
  end
end
if bad then return bad end
local was_active = redis.call('ZREM', KEYS[1], ARGV[1])
-- the lease ends here, and a native claim's lease_epoch with it
redis.call('HDEL', KEYS[4], 'lease_epoch')
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
-- below the cap: the schedule set is a visibility fence, not a second queue
if below_cap then
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
  redis.call('HSET', KEYS[4], 'state', 'scheduled', 'last_error', ARGV[5])
  return 'scheduled'
end
-- at the cap this life's claims equal max attempts: the job goes to the morgue
redis.call('ZADD', KEYS[3], now, ARGV[1])
redis.call('HSET', KEYS[4], 'state', 'dead', 'last_error', ARGV[5])
if record == '1' then
  redis.call('XADD', stream, '*', 'id', ARGV[1], 'outcome', 'dead',
    'attempts', ARGV[2], 'error', ARGV[5])
end
-- a dying flow child: its parent_policy decides, inside the once-only branch
if KEYS[5] and was_active == 1 then
  child_death(KEYS[4], ARGV[1], KEYS[5], KEYS[6], KEYS[7], ARGV[7], KEYS[3], p .. 'pending', ARGV[5], now,
    record == '1' and stream)
end
return 'dead'
