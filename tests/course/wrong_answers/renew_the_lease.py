"""Wrong answers to 02.2 (renew the lease), each with the finding that must name why."""

NO_TOKEN = """
-- KEYS[1] active, KEYS[2] row; ARGV[1] id, ARGV[2] token, ARGV[3] lease_ms; reply 1 renewed, 0 not
-- the naive extension: "still in active" is taken for "still mine"; the token is never read
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), ARGV[1])
return 1
"""

NO_CLOCK = """
-- KEYS[1] active, KEYS[2] row; ARGV[1] id, ARGV[2] token, ARGV[3] lease_ms; reply 1 renewed, 0 not
-- the fence is right, but the score written is the lease itself: a deadline in 1970, lapsed at once
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
if redis.call('HGET', KEYS[2], 'attempts') ~= ARGV[2] then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', tonumber(ARGV[3]), ARGV[1])
return 1
"""

SYNTAX = """
-- KEYS[1] active, KEYS[2] row; ARGV[1] id, ARGV[2] token, ARGV[3] lease_ms; reply 1 renewed, 0 not
if redis.call('HGET', KEYS[2], 'attempts') ~= ARGV[2] then
  return 0
local t = redis.call('TIME')
return 1
"""

RUNTIME = """
-- KEYS[1] active, KEYS[2] row; ARGV[1] id, ARGV[2] token, ARGV[3] lease_ms; reply 1 renewed, 0 not
if redis.call('HGET', KEYS[2], 'attempts') ~= ARGV[2] then
  return 0
end
local now = redis.call('TIME')[1] * 1000 + clock_offset
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), ARGV[1])
return 1
"""
