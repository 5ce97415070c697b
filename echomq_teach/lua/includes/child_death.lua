-- child_death: what a dying flow child does to its parent, by the child's parent_policy (D-4 in docs/decisions.md)
-- row/cid: the child's row and id; deps/unsuccessful/prow/pid: the parent's :dependencies, :unsuccessful, row, id
-- dead/pending: the queue's sets; reason: the child's last_error; now: server ms; stream: the completions
-- stream when the caller records (a parent it fails ends there too, as child_failed), else false or nil
-- the policy is read only now, once: the callers run this inside their once-only branch, and include
-- same_flow before it
local function child_death(row, cid, deps, unsuccessful, prow, pid, dead, pending, reason, now, stream)
  -- a parent an operator removed has nothing to answer to, nor has a later flow landed under its id
  -- (same_flow, included before this piece): none of its keys is written, the link stays
  if not same_flow(prow, redis.call('HGET', row, 'flow')) then return end
  local policy = redis.call('HGET', row, 'parent_policy') or 'fail'
  if policy == 'fail' then
    if redis.call('HGET', prow, 'state') == 'awaiting_children' then
      local why = 'child ' .. cid .. ' failed: ' .. reason
      redis.call('ZADD', dead, now, pid)
      redis.call('HSET', prow, 'state', 'dead', 'last_error', why)
      -- the parent's life ends here: one entry of its own, after its child's
      if stream then
        redis.call('XADD', stream, '*', 'id', pid, 'outcome', 'child_failed',
          'attempts', redis.call('HGET', prow, 'attempts') or '0', 'error', why)
      end
    end
  elseif policy == 'ignore' or policy == 'remove' then
    if policy == 'ignore' then redis.call('HSET', unsuccessful, cid, reason) end
    -- counted as done: the same release the fan-in in @complete makes
    local left = redis.call('DECR', deps)
    if left <= 0 and redis.call('HGET', prow, 'state') == 'awaiting_children' then
      redis.call('ZADD', pending, 0, pid)
      redis.call('HSET', prow, 'state', 'pending')
    end
  end
  -- a counted death detaches the child, so a later reprocess runs it as a plain job and its
  -- completion can neither count twice nor release a parent that died; 'wait' keeps the link:
  -- the parent waits until the child is reprocessed and completes
  if policy ~= 'wait' then
    redis.call('HDEL', row, 'parent', 'parent_policy')
  end
end
