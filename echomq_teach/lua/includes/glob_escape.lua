-- glob_escape: a key prefix as a SCAN pattern that matches it literally (a queue name may hold * ? [ ] \)
local function glob_escape(s)
  return (string.gsub(s, '([%*%?%[%]\\])', '\\%1'))
end
