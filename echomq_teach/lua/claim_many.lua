-- @claim_many: the kit's batch claim, up to k heads of pending in one call, each its own lease and token (jobs.claim_many/4)
-- KEYS: [1] pending, [2] active, [3] the base emq:{q}:
-- ARGV: [1] lease_ms, [2] k (1 to 1000: how many heads it pops at most)
-- reply: {} when paused or nothing is pending, else {{id, payload, attempts, parent}, ...} in pending order ('' for no parent); a ghost is popped and left out
-- @include args
-- @include types
-- a count HINCRBY can raise: absent, or strict decimal inside a signed 64-bit integer, below its top
local function grows(a)
  if not a or a == '0' then return true end
  local digits = string.match(a, '^-?([1-9]%d*)$')
  if not digits or #digits > 19 then return false end
  if #digits < 19 then return true end
  if string.sub(a, 1, 1) == '-' then return digits <= '9223372036854775808' end
  return digits < '9223372036854775807'
end
-- every check before the first write, as EMQ.CLAIM.MANY makes them: a refusal writes nothing
local bad = refuse_count('@claim_many', 2) or refuse_positive('lease_ms', ARGV[1]) or refuse_positive('k', ARGV[2])
if bad then return bad end
if #KEYS ~= 3 then return redis.error_reply('EMQARG @claim_many takes 3 keys, got ' .. #KEYS) end
local k = tonumber(ARGV[2])
if k > 1000 then return redis.error_reply('EMQARG k must be at most 1000') end
local b = KEYS[3]
local name = string.match(b, '^emq:{([^{}:]+)}:$')
if not name or string.find(name, '[%c ]') then
  return redis.error_reply('EMQKEYS base must look like emq:{q}:, got ' .. b)
end
for i, suffix in ipairs({'pending', 'active'}) do
  if KEYS[i] ~= b .. suffix then
    return redis.error_reply('EMQKEYS ' .. suffix .. ' must be ' .. b .. suffix .. ', got ' .. KEYS[i])
  end
end
-- the pause read, inside the call: a paused queue hands out nothing and nothing moves
if redis.call('EXISTS', b .. 'paused') == 1 then return {} end
-- the k oldest pending ids, read before any pop (every pending score is 0: the lowest ids, the oldest mints)
local ids = redis.pcall('ZRANGE', KEYS[1], 0, k - 1)
if ids.err then return ids end
if #ids == 0 then return {} end
-- each row read while nothing is written: a ghost (no row) is popped and mints nothing, as in @claim2
local rows, live = {}, 0
for i, id in ipairs(ids) do
  local jk = b .. 'job:' .. id
  local t = redis.call('TYPE', jk)['ok']
  if t == 'hash' then
    local f = redis.call('HMGET', jk, 'attempts', 'payload', 'parent')
    if not grows(f[1]) then
      return redis.error_reply('EMQSTATE ' .. jk .. ' attempts is not an integer that can grow')
    end
    rows[i] = f
    live = live + 1
  elseif t ~= 'none' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
end
if live > 0 then
  bad = refuse_type(KEYS[2], 'zset')
  if bad then return bad end
end
-- the first write: pop exactly the ids read (nothing runs between the read and the pop)
redis.call('ZPOPMIN', KEYS[1], #ids)
-- the server clock, not the caller's: one TIME for the whole batch, one deadline for every lease in it
local t = redis.call('TIME')
local deadline = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[1])
local out, scored = {}, {}
for i, id in ipairs(ids) do
  local f = rows[i]
  if f then
    local jk = b .. 'job:' .. id
    -- each job's NEW attempts is its own fencing token
    local att = redis.call('HINCRBY', jk, 'attempts', 1)
    redis.call('HSET', jk, 'state', 'active')
    scored[#scored + 1] = deadline
    scored[#scored + 1] = id
    out[#out + 1] = {id, f[2], att, f[3] or ''}
  end
end
-- each lease is its own member of active, scored by the deadline
if #scored > 0 then redis.call('ZADD', KEYS[2], unpack(scored)) end
return out
