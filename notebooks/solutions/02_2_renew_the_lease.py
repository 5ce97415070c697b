def renew_the_lease():
    # The caller holds the job while it is in active AND its row's attempts equal the caller's token:
    # a reap takes it out of active, a new claim raises attempts. Only then is the score moved.
    return """
-- renew_lease: renew a claimed job's lease, only while the caller's token still holds
-- KEYS[1] active    the queue's active set (score: the lease's deadline, server ms)
-- KEYS[2] row       the job's row
-- ARGV[1] id        the job's id
-- ARGV[2] token     the caller's token: the attempts its claim answered
-- ARGV[3] lease_ms  the new lease, counted from the server's clock now
-- reply   1 when the lease was renewed; 0 when the caller no longer holds the job (nothing written)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
if redis.call('HGET', KEYS[2], 'attempts') ~= ARGV[2] then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), ARGV[1])
return 1
"""
