-- @drop: delete every key of one queue, its sets, rows, flow keys, metric and stream (EchoMQ.Jobs.drop/2)
-- KEYS: [1] the base emq:{q}:
-- ARGV: none
-- reply: how many keys were deleted; the node's brand and every other queue are left alone
-- @include glob_escape
local n = 0
local cursor = '0'
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', glob_escape(KEYS[1]) .. '*', 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    n = n + redis.call('DEL', k)
  end
until cursor == '0'
return n
