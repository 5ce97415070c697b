-- same_flow: whether the parent row prow is still the flow this child was landed with (docs/decisions.md)
-- prow: the parent's row key; flow: the child's own flow field (false when it carries none)
-- @enqueue_flow stamps a parent and its children with one number from emq:{q}:flows. A removed parent
-- has no row; a row landed later under the same parent id carries a later number: neither is the
-- child's flow, and the child's ending must count toward neither
local function same_flow(prow, flow)
  local t = redis.call('TYPE', prow)['ok']
  if t == 'none' then return false end
  -- not a row at all: the caller's own type checks refuse it, as they did before flows had numbers
  if t ~= 'hash' then return true end
  return redis.call('HGET', prow, 'flow') == flow
end
