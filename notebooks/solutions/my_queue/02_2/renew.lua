-- renew.lua · your queue's lease renewal (stage 02.2), which a handler that outlives its lease calls
-- KEYS: [1] active, [2] the job's row
-- ARGV: [1] the job's id, [2] the caller's token (the attempts its claim answered), [3] lease_ms
-- reply: 1 when it renewed the lease, 0 when the caller no longer holds the job (nothing written)
-- the caller holds the job while it is in active (no sweep took it) and its token is the row's attempts
-- (no claim since); the clock decides nothing here
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
if redis.call('HGET', KEYS[2], 'attempts') ~= ARGV[2] then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), ARGV[1])
return 1
