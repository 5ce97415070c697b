-- @floor_release: give the archive driver's lease back, if this driver still holds it
-- KEYS: [1] the lease emq:{q}:floor:driver
-- ARGV: [1] token, [2] holder
-- reply: 1 when released, 0 when the lease was not this driver's (nothing written)
if redis.call('GET', KEYS[1]) ~= ARGV[1] .. ' ' .. ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
return 1
