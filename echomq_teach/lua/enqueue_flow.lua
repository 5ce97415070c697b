-- @enqueue_flow: land a parent, its children and their policies in one atomic step (EchoMQ.Flows.add/3)
-- KEYS: [1] pending, [2] the parent row, [3] its :dependencies, [4] its :processed, [5] its :unsuccessful, [6..] the child rows; the flow counter emq:{q}:flows is built from KEYS[1]'s base
-- ARGV: [1] parent id, [2] parent payload, then each child's id and payload, then each child's parent_policy (all 'fail' if none is given)
-- reply: N, the child count, or the error EMQDUP when any of these keys already exists: nothing written
-- @include types
local n = #KEYS - 5
if n < 1 or (#ARGV ~= 2 + 2 * n and #ARGV ~= 2 + 3 * n) then
  return redis.error_reply('EMQARG a flow needs at least one child, an id and payload per child key, then a policy for each or none')
end
-- every check before the first write, so a refused land writes nothing (D-2 in docs/decisions.md: never overwrite)
local policies = {}
for i = 1, n do
  local policy = ARGV[2 + 2 * n + i] or 'fail'
  if policy ~= 'fail' and policy ~= 'ignore' and policy ~= 'remove' and policy ~= 'wait' then
    return redis.error_reply('EMQARG unknown policy \'' .. policy .. '\' for child ' .. ARGV[1 + 2 * i]
      .. ': use fail, ignore, remove or wait')
  end
  policies[i] = policy
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return redis.error_reply('EMQDUP job ' .. ARGV[1] .. ' already exists')
end
-- leftover flow keys would mix an earlier flow's counter or results into this one
for i = 3, 5 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return redis.error_reply('EMQDUP parent ' .. ARGV[1] .. ' still has ' .. KEYS[i] .. ' from an earlier flow')
  end
end
for i = 1, n do
  if redis.call('EXISTS', KEYS[5 + i]) == 1 then
    return redis.error_reply('EMQDUP job ' .. ARGV[1 + 2 * i] .. ' already exists')
  end
end
-- the queue's flow counter, in the queue's slot: KEYS[1] is <base>pending
if string.sub(KEYS[1], -7) ~= 'pending' then
  return redis.error_reply('EMQKEYS KEYS[1] must be the queue\'s pending set, got ' .. KEYS[1])
end
local counter = string.sub(KEYS[1], 1, -8) .. 'flows'
local bad = refuse_type(KEYS[1], 'zset') or refuse_type(counter, 'string')
if bad then return bad end
local last = redis.call('GET', counter)
if last and not string.match(last, '^%d+$') then
  return redis.error_reply('EMQSTATE ' .. counter .. ' is not a count that can grow')
end
-- this flow's own number, on the parent and on each child: an id used again for a later flow gets a
-- later number, so a child of the earlier flow never counts toward it (same_flow, in @complete and
-- child_death)
local flow = redis.call('INCR', counter)
-- the parent is held out of pending: only the fan-in in @complete releases it
redis.call('HSET', KEYS[2], 'state', 'awaiting_children', 'attempts', 0, 'payload', ARGV[2], 'flow', flow)
redis.call('SET', KEYS[3], n)
for i = 1, n do
  -- parent and parent_policy land with the row: a child completed at once still takes the fan-in
  -- branch, and a child that dies at once is judged by its own policy
  redis.call('HSET', KEYS[5 + i], 'state', 'pending', 'attempts', 0, 'payload', ARGV[2 + 2 * i],
    'parent', ARGV[1], 'parent_policy', policies[i], 'flow', flow)
  redis.call('ZADD', KEYS[1], 0, ARGV[1 + 2 * i])
end
return n
