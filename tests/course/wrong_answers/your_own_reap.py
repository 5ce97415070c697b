"""Wrong answers to 03.3 (your own reap), each with the finding that must name why."""

HEADER = """
-- KEYS[1] active, KEYS[2] pending, KEYS[3] base emq:{q}:; ARGV[1] limit; reply the ids moved back
"""

# a fresh claim token is what fences out the dead worker: this reap hands the next claim the old one
RESETS_ATTEMPTS = HEADER + """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, id in ipairs(lapsed) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], 0, id)
  -- "a fresh start": the attempt that died does not count
  redis.call('HINCRBY', KEYS[3] .. 'job:' .. id, 'attempts', -1)
  redis.call('HSET', KEYS[3] .. 'job:' .. id, 'state', 'pending')
end
return lapsed
"""

# the lease leaves active and its row says pending, but the id never reaches the pending set
LOSES_THE_JOB = HEADER + """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, id in ipairs(lapsed) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('HSET', KEYS[3] .. 'job:' .. id, 'state', 'pending')
end
return lapsed
"""

# every lapsed lease in one call, however many: the limit is never read
NO_LIMIT = HEADER + """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)
for _, id in ipairs(lapsed) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], 0, id)
  redis.call('HSET', KEYS[3] .. 'job:' .. id, 'state', 'pending')
end
return lapsed
"""

# the server's TIME read as seconds: every deadline (in ms) lies in the far future, nothing ever lapses
SECONDS_CLOCK = HEADER + """
local now = tonumber(redis.call('TIME')[1])
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, id in ipairs(lapsed) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], 0, id)
end
return lapsed
"""

# no deadline read at all: "in active too long" taken for "in active"
EVERY_LEASE = HEADER + """
local taken = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
for _, id in ipairs(taken) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], 0, id)
  redis.call('HSET', KEYS[3] .. 'job:' .. id, 'state', 'pending')
end
return taken
"""

SYNTAX = HEADER + """
local t = redis.call('TIME')
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, 0)) do
  redis.call('ZREM', KEYS[1], id)
return {}
"""

# a "margin" added the wrong way round: leases due within the next 500 ms count as lapsed already, so a
# healthy handler's job is taken from it mid-work (the dry run's live lease, a minute long, is not touched)
EARLY_MARGIN = HEADER + """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + 500
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, id in ipairs(lapsed) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], 0, id)
  redis.call('HSET', KEYS[3] .. 'job:' .. id, 'state', 'pending')
end
return lapsed
"""
