-- @claim2: claim the oldest pending job under a lease (EchoMQ.Jobs.claim/3)
-- KEYS: [1] pending, [2] active, [3] the base emq:{q}:
-- ARGV: [1] lease_ms
-- reply: {} when nothing is pending or the head is a ghost, else {id, payload, attempts}
-- the @claim2 script — KEYS[1] = pending, KEYS[2] = active, KEYS[3] = the base; ARGV[1] = lease_ms
-- pop the oldest pending id: every pending score is 0, so the lowest id, the oldest mint
local popped = redis.call('ZPOPMIN', KEYS[1])
-- nothing pending: an empty reply, which claim/3 maps to :empty
if #popped == 0 then return {} end
local id = popped[1]
-- the row key, derived from the declared root KEYS[3]: it shares the queue's hashtag
local jk = KEYS[3] .. 'job:' .. id
-- the ghost guard: an id with no row is consumed by the pop and mints nothing
if redis.call('EXISTS', jk) == 0 then return {} end
-- the NEW attempts is the fencing token
local att = redis.call('HINCRBY', jk, 'attempts', 1)
redis.call('HSET', jk, 'state', 'active')
-- the server clock, not the caller's: TIME in milliseconds
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
-- the active score IS the lease deadline
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), id)
return {id, redis.call('HGET', jk, 'payload'), att}
