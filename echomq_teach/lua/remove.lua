-- @remove: delete one job wherever it is (EchoMQ.Jobs.remove/3)
-- KEYS: [1] pending, [2] active, [3] schedule, [4] dead, [5] the row, [6] its :dependencies, [7] its :processed, [8] its :unsuccessful
-- ARGV: [1] id
-- reply: 1 when a row or a set entry was removed, else 0
-- @include types
-- a set that is not a sorted set would fail its ZREM after the ones before it
for i = 1, 4 do
  local bad = refuse_type(KEYS[i], 'zset')
  if bad then return bad end
end
local n = 0
for i = 1, 4 do n = n + redis.call('ZREM', KEYS[i], ARGV[1]) end
n = n + redis.call('DEL', KEYS[5], KEYS[6], KEYS[7], KEYS[8])
if n > 0 then return 1 end
return 0
