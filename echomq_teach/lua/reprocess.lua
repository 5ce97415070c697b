-- @reprocess: give a dead job a new life in pending, with a full count against its cap (EchoMQ.Jobs.reprocess/3)
-- KEYS: [1] dead, [2] pending, [3] the row
-- ARGV: [1] id
-- reply: 1, or the error EMQSTATE when the job is not in dead: nothing written
-- @include types
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return redis.error_reply('EMQSTATE job ' .. ARGV[1] .. ' is not dead')
end
local att = redis.call('HGET', KEYS[3], 'attempts') or '0'
local bad = refuse_type(KEYS[2], 'zset')
if bad then return bad end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
-- attempts runs on, so the next claim's token is one no earlier claim had (D-5 in docs/decisions.md); prior_attempts
-- marks where this life starts, and @retry counts only the claims after it against the cap.
-- last_error stays as a record of why it died
redis.call('HSET', KEYS[3], 'state', 'pending', 'prior_attempts', att)
redis.call('HDEL', KEYS[3], 'stalled', 'lease_epoch')
return 1
