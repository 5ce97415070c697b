-- @trim_dead: keep only the newest N dead jobs; trimming deletes, it does not archive (EchoMQ.Jobs.trim_dead/3)
-- KEYS: [1] dead, [2] the base emq:{q}:
-- ARGV: [1] keep, how many of the newest deaths stay
-- reply: the ids deleted, oldest death first
-- @include args
local bad = refuse_number('keep', ARGV[1], 0)
if bad then return bad end
local keep = tonumber(ARGV[1])
local n = redis.call('ZCARD', KEYS[1])
if n <= keep then return {} end
local old = redis.call('ZRANGE', KEYS[1], 0, n - keep - 1)
for _, id in ipairs(old) do
  redis.call('ZREM', KEYS[1], id)
  local jk = KEYS[2] .. 'job:' .. id
  redis.call('DEL', jk, jk .. ':dependencies', jk .. ':processed', jk .. ':unsuccessful')
end
return old
