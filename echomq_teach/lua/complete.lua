-- @complete: settle a claimed job, fenced by its token (EchoMQ.Jobs.complete/5)
-- KEYS: [1] active, [2] the row; a flow child adds [3] parent's :dependencies, [4] its :processed, [5] the parent row
-- ARGV: [1] id, [2] token, [3] the base p, [4] parent id ('' if none), [5] result, [6] record ('1' adds to stream:completions)
-- reply: 1 when settled, 0 when stale (token moved on, or the row is no longer active): nothing written
local p = ARGV[3]
-- the token fence (D-3): the claim count must still be this token and the row still active
local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
local was_active = redis.call('ZREM', KEYS[1], ARGV[1])
-- record the settle in the same atomic step, so a crash can never leave one without the other
if ARGV[6] == '1' then
  redis.call('XADD', p .. 'stream:completions', '*', 'id', ARGV[1], 'outcome', 'completed',
    'attempts', ARGV[2], 'result', ARGV[5])
end
-- once-only: the branch runs only when this completion removed the child from active
if KEYS[3] and was_active == 1 then
  -- one fewer outstanding child
  local left = redis.call('DECR', KEYS[3])
  -- record the child's result in :processed
  redis.call('HSET', KEYS[4], ARGV[1], ARGV[5])
  -- the last child: release the parent to pending
  if left <= 0 then
    redis.call('ZADD', p .. 'pending', 0, ARGV[4])
    redis.call('HSET', KEYS[5], 'state', 'pending')
  end
end
-- every completion: the completing row goes, and the metric counts it
redis.call('DEL', KEYS[2])
redis.call('HINCRBY', p .. 'metrics:completed', 'count', 1)
return 1
