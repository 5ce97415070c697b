-- @complete: settle a claimed job, fenced by its token (EchoMQ.Jobs.complete/5)
-- KEYS: [1] active, [2] the row; a flow child adds [3] parent's :dependencies, [4] its :processed, [5] the parent row
-- ARGV: [1] id, [2] token, [3] the base p, [4] parent id ('' if none), [5] result; the kit's [6] record, optional ('1' adds to stream:completions)
-- reply: 1 when settled, 0 when stale (token moved on, or the row is no longer active): nothing written
-- @include args
-- @include types
-- @include same_flow
local p = ARGV[3]
-- every check before the first write, as EMQ.COMPLETE makes them: a refusal writes nothing
-- the page's five ARGV, or six with the kit's record flag (absent: not recorded)
local record = record_flag(6)
local bad = refuse_count('@complete', 5, true) or refuse_positive('token', ARGV[2]) or refuse_record(record)
if bad then return bad end
if #KEYS ~= 2 and #KEYS ~= 5 then return redis.error_reply('EMQARG @complete takes 2 keys, or 5 for a flow child') end
-- the token fence (D-3 in docs/decisions.md): the claim count must still be this token and the row still active
local row = redis.call('HMGET', KEYS[2], 'attempts', 'state', 'flow')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
-- a child whose parent an operator removed settles as a plain job: a release would write a ghost parent;
-- so does one whose parent id now names a later flow's row (its own flow number differs): a child
-- counts only toward the flow it was landed with
local orphan = KEYS[3] and not same_flow(KEYS[5], row[3])
bad = (record == '1' and refuse_type(p .. 'stream:completions', 'stream')) or refuse_type(p .. 'metrics:completed', 'hash')
if not bad and KEYS[3] and not orphan then
  bad = refuse_type(KEYS[3], 'string') or refuse_type(KEYS[4], 'hash') or refuse_type(KEYS[5], 'hash')
end
if bad then return bad end
local count = redis.call('HGET', p .. 'metrics:completed', 'count')
if count and not string.match(count, '^-?%d+$') then
  return redis.error_reply('EMQSTATE ' .. p .. 'metrics:completed count is not an integer that can grow')
end
local was_active = redis.call('ZREM', KEYS[1], ARGV[1])
-- record the settle in the same atomic step, so a crash can never leave one without the other
if record == '1' then
  redis.call('XADD', p .. 'stream:completions', '*', 'id', ARGV[1], 'outcome', 'completed',
    'attempts', ARGV[2], 'result', ARGV[5])
end
-- a completing flow parent: its counter and results were kept for its handler; they stay readable
-- for an hour more (flows.FLOW_KEYS_TTL_S), then go
if redis.call('EXISTS', KEYS[2] .. ':dependencies') == 1 then
  for _, suffix in ipairs({':dependencies', ':processed', ':unsuccessful'}) do
    redis.call('EXPIRE', KEYS[2] .. suffix, 3600)
  end
end
-- an orphan ends as every completion ends (the lines at the bottom), without the fan-in
if orphan then
  redis.call('DEL', KEYS[2])
  redis.call('HINCRBY', p .. 'metrics:completed', 'count', 1)
  return 1
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
