-- retry.lua · your queue's answer to a handler's error (stage 03.3), in the place of the kit's @retry
-- KEYS: [1] active, [2] schedule, [3] dead, [4] the row
-- ARGV: [1] id, [2] token, [3] delay_ms, [4] max_attempts, [5] reason, [6] the base, [7] parent id, [8] record (optional)
-- reply: 'scheduled' or 'dead', or 0 when the caller no longer holds the job (nothing written)
-- What it must do: notebook 03, "Your queue, stage 2". Write its body in the place of the line below.
return redis.error_reply('MYQUEUE retry.lua is not written yet')
