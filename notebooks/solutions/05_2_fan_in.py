FAN_IN = """
-- the fan-in: complete a flow child, and count it toward its parent once
-- KEYS: [1] active, [2] the child's row, [3] the parent's :dependencies, [4] its :processed, [5] the parent's row
-- ARGV: [1] the child's id, [2] the caller's token, [3] the base p (emq:{q}:), [4] the parent's id, [5] the result
-- reply: 1 when this call completed the child, 0 when the caller no longer held it (nothing written)
local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  local left = redis.call('DECR', KEYS[3])
  redis.call('HSET', KEYS[4], ARGV[1], ARGV[5])
  if left <= 0 then
    redis.call('ZADD', ARGV[3] .. 'pending', 0, ARGV[4])
    redis.call('HSET', KEYS[5], 'state', 'pending')
  end
end
redis.call('DEL', KEYS[2])
return 1
"""


def fan_in():
    return FAN_IN
