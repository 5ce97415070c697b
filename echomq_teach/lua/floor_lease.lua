-- @floor_lease: take or renew the archive driver's lease on one completions stream (EchoStore.StreamArchive.Driver)
-- KEYS: [1] the lease emq:{q}:floor:driver ("<token> <holder>"), [2] the fence counter emq:{q}:floor:fence
-- ARGV: [1] holder (host:pid:nonce), [2] lease_ms, [3] the highest token the floor has seen
-- reply: {token, ''} when this holder has the lease, or {0, other holder, its ms left} when another driver has it
local held = redis.call('GET', KEYS[1])
if held then
  local token, who = string.match(held, '^(%d+) (.*)$')
  if who == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {tonumber(token), ''}
  end
  return {0, who or held, redis.call('PTTL', KEYS[1])}
end
-- a new holder gets a new token; the floor outlives a node without persistence, so the counter
-- never hands out a token the floor has already seen
local token = redis.call('INCR', KEYS[2])
if token <= tonumber(ARGV[3]) then
  token = tonumber(ARGV[3]) + 1
  redis.call('SET', KEYS[2], token)
end
redis.call('SET', KEYS[1], token .. ' ' .. ARGV[1], 'PX', ARGV[2])
return {token, ''}
