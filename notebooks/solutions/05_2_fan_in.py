FAN_IN = """
-- quorum fan-in: complete a flow child; its parent goes once `quorum` of its children completed
-- KEYS: [1] active, [2] the child's row, [3] the parent's :dependencies, [4] its :processed, [5] the parent's row
-- ARGV: [1] the child's id, [2] the caller's token, [3] the base p (emq:{q}:), [4] the parent's id, [5] the result
-- reply: 1 when this call completed the child, 0 when the caller no longer held it (nothing written)
-- the fence: the caller holds the child while the row's attempts are its token AND the row is active
-- (a sweep that put it back in pending leaves the token as it was; the state is what tells)
local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
-- once-only: count only a completion that took the child out of active, and only while the parent still
-- waits; after its quorum (released, running, or completed and gone) a completion counts nothing
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 and redis.call('HGET', KEYS[5], 'state') == 'awaiting_children' then
  redis.call('DECR', KEYS[3])
  redis.call('HSET', KEYS[4], ARGV[1], ARGV[5])
  if redis.call('HLEN', KEYS[4]) >= tonumber(redis.call('HGET', KEYS[5], 'quorum')) then
    redis.call('ZADD', ARGV[3] .. 'pending', 0, ARGV[4])
    redis.call('HSET', KEYS[5], 'state', 'pending')
  end
end
redis.call('DEL', KEYS[2])
return 1
"""


def fan_in():
    return FAN_IN
