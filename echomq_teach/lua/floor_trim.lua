-- @floor_trim: trim the archived head of the completions stream, only while this driver holds the lease (XTRIM … MINID)
-- KEYS: [1] the stream emq:{q}:stream:completions, [2] the lease emq:{q}:floor:driver
-- ARGV: [1] token, [2] holder, [3] MINID (every entry below it is on the floor), [4] lease_ms, [5] the floor's cursor
-- reply: the number of entries trimmed; -1 when the lease is not this driver's, -2 when the stream's ids run below the cursor
if redis.call('GET', KEYS[2]) ~= ARGV[1] .. ' ' .. ARGV[2] then return -1 end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
-- a stream deleted and made again starts its ids afresh: below the cursor, its entries are not the floor's
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local last
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then last = info[i + 1] end
end
local lms, lseq = string.match(last, '^(%d+)-(%d+)$')
local cms, cseq = string.match(ARGV[5], '^(%d+)-(%d+)$')
lms, lseq, cms, cseq = tonumber(lms), tonumber(lseq), tonumber(cms), tonumber(cseq)
if lms < cms or (lms == cms and lseq < cseq) then return -2 end
return redis.call('XTRIM', KEYS[1], 'MINID', ARGV[3])
