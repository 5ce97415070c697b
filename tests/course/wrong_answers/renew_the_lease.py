"""Wrong answers to 02.2 (renew the lease), each with the finding that must name why; and the copy attempts:
the nearest things notebook 02 shows, taken as they are or fitted to the renewal's keys and arguments."""

from echomq_teach import scripts

HEADER = """
-- KEYS[1] active, KEYS[2] row; ARGV[1] id, ARGV[2] token, ARGV[3] lease_ms; reply 1 renewed, 0 not
"""

# the naive extension: "still in active" is taken for "still mine"; the token is never read
NO_TOKEN = HEADER + """
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), ARGV[1])
return 1
"""

# the token, but not "still in active": a worker that wakes after a sweep put its job back in pending (no claim
# since, so its token is still the row's attempts) renews it, and the job is in pending and active at once
TOKEN_NOT_STATE = HEADER + """
if redis.call('HGET', KEYS[2], 'attempts') ~= ARGV[2] then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
return 1
"""

# the fence is right, but the deadline is pushed on from the old one, not set from the server's now: a lease
# that lapsed stays lapsed, and a long one grows without end
OLD_DEADLINE = HEADER + """
local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then
  return 0
end
redis.call('ZINCRBY', KEYS[1], tonumber(ARGV[3]), ARGV[1])
return 1
"""

# the fence is right, but the score written is the lease itself: a deadline in 1970, lapsed at once
NO_CLOCK = HEADER + """
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
if redis.call('HGET', KEYS[2], 'attempts') ~= ARGV[2] then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', tonumber(ARGV[3]), ARGV[1])
return 1
"""

SYNTAX = HEADER + """
if redis.call('HGET', KEYS[2], 'attempts') ~= ARGV[2] then
  return 0
local t = redis.call('TIME')
return 1
"""

RUNTIME = HEADER + """
if redis.call('HGET', KEYS[2], 'attempts') ~= ARGV[2] then
  return 0
end
local now = redis.call('TIME')[1] * 1000 + clock_offset
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), ARGV[1])
return 1
"""


# -- copy attempts: what notebook 02 prints, taken as it is -------------------------------------------------
def claim2_as_it_is():
    # @claim2, printed in full in 02: it pops the job out of active and fails on the key it is not handed
    return scripts.load("claim2").source


def complete_as_it_is():
    # @complete, whose fence the renewal needs: called with a renewal's keys, it refuses its argument count
    return scripts.load("complete").source


# @claim2's last lines, the clock and the ZADD, fitted to the renewal's keys and arguments: no fence at all
CLAIM2_DEADLINE = HEADER + """
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
return 1
"""
