"""Wrong answers to 05.2 (the fan-in under kills), each with the finding that must name why."""

HEADER = """
-- KEYS: [1] active, [2] the child's row, [3] the parent's :dependencies, [4] its :processed, [5] the parent's row
-- ARGV: [1] the child's id, [2] the caller's token, [3] the base p (emq:{q}:), [4] the parent's id, [5] the result
-- reply: 1 when this call completed the child, 0 when the caller no longer held it (nothing written)
"""

# no fence: "it is my job" is taken on trust; a zombie's late completion counts its child a second time
NO_FENCE = HEADER + """
redis.call('ZREM', KEYS[1], ARGV[1])
local left = redis.call('DECR', KEYS[3])
redis.call('HSET', KEYS[4], ARGV[1], ARGV[5])
if left <= 0 then
  redis.call('ZADD', ARGV[3] .. 'pending', 0, ARGV[4])
  redis.call('HSET', KEYS[5], 'state', 'pending')
end
redis.call('DEL', KEYS[2])
return 1
"""

# the counter read before it is counted down: the last child sees 1, and no parent is ever released
READ_BEFORE_DECR = HEADER + """
local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  local left = tonumber(redis.call('GET', KEYS[3]))
  redis.call('DECR', KEYS[3])
  redis.call('HSET', KEYS[4], ARGV[1], ARGV[5])
  if left <= 0 then
    redis.call('ZADD', ARGV[3] .. 'pending', 0, ARGV[4])
    redis.call('HSET', KEYS[5], 'state', 'pending')
  end
end
redis.call('DEL', KEYS[2])
return 1
"""

# the release not tied to the count: the first child to complete lets its parent go
EVERY_CHILD_RELEASES = HEADER + """
local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('DECR', KEYS[3])
  redis.call('HSET', KEYS[4], ARGV[1], ARGV[5])
  if redis.call('HGET', KEYS[5], 'state') == 'awaiting_children' then
    redis.call('ZADD', ARGV[3] .. 'pending', 0, ARGV[4])
    redis.call('HSET', KEYS[5], 'state', 'pending')
  end
end
redis.call('DEL', KEYS[2])
return 1
"""

# a runtime error on line 6 (the base is ARGV[3], not a global): named by line, not a crash
RUNTIME = HEADER + """
local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
local left = redis.call('DECR', KEYS[3]) + parents_left
redis.call('DEL', KEYS[2])
return 1
"""
