-- types: refuse a key a script is about to write when it holds another type, before the first write
-- key: the key; want: 'zset', 'hash', 'string' or 'stream'; answers nil, or the error reply to return
-- worded as the native commands word it: a write to it would fail half-way, after earlier writes
local function refuse_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. t .. ', not a ' .. want)
  end
end
