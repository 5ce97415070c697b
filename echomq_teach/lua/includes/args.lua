-- args: a script's argument checks, run before its first write and worded as the native commands word them
-- each answers nil when the value passes, else the error reply the script returns as it is
-- 2^52: every deadline now + n stays below 2^53, where a sorted-set score stops holding integers exactly
local MAX_NUMBER = 4503599627370496
-- strict decimal, as the server writes an integer: digits only, no sign, space or leading zero
local function refuse_number(name, v, least)
  local word = least > 0 and ' must be a positive integer' or ' must be a non-negative integer'
  if type(v) ~= 'string' or not (v == '0' or string.match(v, '^[1-9]%d*$')) then
    return redis.error_reply('EMQARG ' .. name .. word)
  end
  -- above a 64-bit integer the native parse refuses the word itself
  if #v > 19 or (#v == 19 and v > '9223372036854775807') or tonumber(v) < least then
    return redis.error_reply('EMQARG ' .. name .. word)
  end
  if tonumber(v) > MAX_NUMBER then return redis.error_reply('EMQARG ' .. name .. ' is too large') end
end
local function refuse_positive(name, v) return refuse_number(name, v, 1) end
-- the record flag: '1' adds the ending to stream:completions, '0' does not; nothing else is a flag
local function refuse_record(v)
  if v ~= '0' and v ~= '1' then return redis.error_reply('EMQARG record must be 0 or 1') end
end
-- the record flag at ARGV[i], a script's optional last argument: absent means '0', so a call in the
-- page's own shape (no flag) is not recorded
local function record_flag(i) return ARGV[i] or '0' end
-- the argument count a script takes, as a command's arity: want, or want + 1 when the script
-- takes the record flag after them (recorded: true)
local function refuse_count(script, want, recorded)
  if #ARGV == want or (recorded and #ARGV == want + 1) then return nil end
  local also = recorded and (' (' .. (want + 1) .. ' with record)') or ''
  local word = want == 1 and ' argument' or ' arguments'
  return redis.error_reply('EMQARG ' .. script .. ' takes ' .. want .. word .. also .. ', got ' .. #ARGV)
end
