-- @reprocess: give a dead job a fresh start in pending (EchoMQ.Jobs.reprocess/3)
-- KEYS: [1] dead, [2] pending, [3] the row
-- ARGV: [1] id
-- reply: 1, or the error EMQSTATE when the job is not in dead: nothing written
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return redis.error_reply('EMQSTATE job ' .. ARGV[1] .. ' is not dead')
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
-- attempts start again from 0; last_error stays as a record of why it died
redis.call('HSET', KEYS[3], 'state', 'pending', 'attempts', 0)
redis.call('HDEL', KEYS[3], 'stalled')
return 1
