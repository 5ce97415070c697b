-- @enqueue: write a new job's row and its pending entry (EchoMQ.Jobs.enqueue/5)
-- KEYS: [1] pending, [2] the row emq:{q}:job:<id>
-- ARGV: [1] id, [2] payload
-- reply: 1, or the error EMQDUP when a row with this id already exists
-- @include types
-- a duplicate id never overwrites: the existing row and its place stay as they are
if redis.call('EXISTS', KEYS[2]) == 1 then
  return redis.error_reply('EMQDUP job ' .. ARGV[1] .. ' already exists')
end
-- a pending that is not a sorted set would fail the ZADD after the row is written
local bad = refuse_type(KEYS[1], 'zset')
if bad then return bad end
redis.call('HSET', KEYS[2], 'state', 'pending', 'attempts', 0, 'payload', ARGV[2])
-- every pending score is 0: the id itself orders the set, oldest mint first
redis.call('ZADD', KEYS[1], 0, ARGV[1])
return 1
