-- complete.lua · your queue's completion (stage 03.3; a flow child's from stage 05.2), in the place of @complete
-- KEYS: [1] active, [2] the row; a flow child adds [3] its parent's :dependencies, [4] its :processed, [5] the parent's row
-- ARGV: [1] id, [2] token, [3] the base emq:{q}:, [4] the parent's id ('' if none), [5] result, [6] record (optional)
-- reply: 1 when this call completed the job, 0 when the caller no longer holds it (nothing written)
-- the fence: the caller holds the job while the row's attempts are its token AND the row is active (a sweep
-- that put it back in pending leaves the token as it was; the state is what tells)
local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
-- the job's one ending, in the same atomic step as the settle itself
if ARGV[6] == '1' then
  redis.call('XADD', ARGV[3] .. 'stream:completions', '*', 'id', ARGV[1], 'outcome', 'completed',
    'attempts', ARGV[2], 'result', ARGV[5])
end
redis.call('DEL', KEYS[2])
return 1
