-- @remove: delete one job wherever it is (EchoMQ.Jobs.remove/3)
-- KEYS: [1] pending, [2] active, [3] schedule, [4] dead, [5] the row, [6] its :dependencies, [7] its :processed, [8] its :unsuccessful, [9] stream:completions
-- ARGV: [1] id; [2] record, optional ('1' adds a job that had not ended, as removed, to stream:completions)
-- reply: 1 when a row or a set entry was removed, else 0
-- @include args
-- @include types
local record = record_flag(2)
local bad = refuse_count('@remove', 1, true) or refuse_record(record)
if bad then return bad end
if #KEYS ~= 9 then return redis.error_reply('EMQARG @remove takes 9 keys, got ' .. #KEYS) end
-- a set that is not a sorted set would fail its ZREM after the ones before it
for i = 1, 4 do
  bad = refuse_type(KEYS[i], 'zset')
  if bad then return bad end
end
-- a job that had not ended (any state but dead) ends here: a recording call writes its one entry; a
-- dead job ended when it died, and its entry (if its queue recorded) was written then
local row = redis.call('TYPE', KEYS[5])['ok'] == 'hash' and redis.call('HMGET', KEYS[5], 'state', 'attempts')
local ends = row and row[1] ~= 'dead' and record == '1'
bad = ends and refuse_type(KEYS[9], 'stream')
if bad then return bad end
local n = 0
for i = 1, 4 do n = n + redis.call('ZREM', KEYS[i], ARGV[1]) end
n = n + redis.call('DEL', KEYS[5], KEYS[6], KEYS[7], KEYS[8])
if ends then
  redis.call('XADD', KEYS[9], '*', 'id', ARGV[1], 'outcome', 'removed', 'attempts', row[2] or '0',
    'error', 'removed while ' .. (row[1] or 'in no state'))
end
if n > 0 then return 1 end
return 0
