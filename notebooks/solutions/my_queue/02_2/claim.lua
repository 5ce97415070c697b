-- claim.lua · your queue's claim (stage 02.2), run in the place of the kit's @claim2
-- KEYS: [1] pending, [2] active, [3] the base emq:{q}: (a job's row is KEYS[3] .. 'job:' .. id)
-- ARGV: [1] lease_ms
-- reply: {} when no job can be handed out, else {id, payload, attempts}
-- A ghost (an id in pending with no row) is dropped, and the claim goes on to the next id: at most ten ids a
-- call, so that a pile of ghosts never holds the node for long.
for _ = 1, 10 do
  local popped = redis.call('ZPOPMIN', KEYS[1])
  if #popped == 0 then return {} end
  local id = popped[1]
  local row = KEYS[3] .. 'job:' .. id
  if redis.call('EXISTS', row) == 1 then
    -- the token: the row's attempts, one more than any claim before had
    local token = redis.call('HINCRBY', row, 'attempts', 1)
    redis.call('HSET', row, 'state', 'active')
    -- the lease's deadline on the server's clock, in milliseconds: the active score
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), id)
    return {id, redis.call('HGET', row, 'payload'), token}
  end
end
return {}
