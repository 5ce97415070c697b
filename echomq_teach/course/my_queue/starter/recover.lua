-- recover.lua · your queue's recovery of lapsed leases (stage 03.6), in the place of the kit's @stalled_check
-- KEYS: [1] active, [2] pending, [3] dead, [4] the base emq:{q}: (a job's row is KEYS[4] .. 'job:' .. id)
-- ARGV: [1] max_attempts (the cap, when a row carries none of its own), [2] record (optional)
-- reply: {the ids moved back to pending, the ids buried in dead}
-- What it must do: notebook 03, "Your queue, stage 3". Write its body in the place of the line below.
return redis.error_reply('MYQUEUE recover.lua is not written yet')
