-- complete.lua · your queue's completion (stage 03.3; a flow child's from stage 05.2), in the place of @complete
-- KEYS: [1] active, [2] the row; a flow child adds [3] its parent's :dependencies, [4] its :processed, [5] the parent's row
-- ARGV: [1] id, [2] token, [3] the base emq:{q}:, [4] the parent's id ('' if none), [5] result, [6] record (optional)
-- reply: 1 when this call completed the job, 0 when the caller no longer holds it (nothing written)
-- the fence: the caller holds the job while the row's attempts are its token AND the row is active
local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
local was_active = redis.call('ZREM', KEYS[1], ARGV[1])
if ARGV[6] == '1' then
  redis.call('XADD', ARGV[3] .. 'stream:completions', '*', 'id', ARGV[1], 'outcome', 'completed',
    'attempts', ARGV[2], 'result', ARGV[5])
end
-- a flow child counts once, toward a parent still waiting: after its quorum (released, running, or
-- completed and gone) a completion counts nothing
if KEYS[3] and was_active == 1 and redis.call('HGET', KEYS[5], 'state') == 'awaiting_children' then
  local left = redis.call('DECR', KEYS[3])
  redis.call('HSET', KEYS[4], ARGV[1], ARGV[5])
  -- released at its quorum; a parent whose row names none waits for all its children, as the kit's does
  local quorum = redis.call('HGET', KEYS[5], 'quorum')
  if (quorum and redis.call('HLEN', KEYS[4]) >= tonumber(quorum)) or (not quorum and left <= 0) then
    redis.call('ZADD', ARGV[3] .. 'pending', 0, ARGV[4])
    redis.call('HSET', KEYS[5], 'state', 'pending')
  end
end
redis.call('DEL', KEYS[2])
return 1
