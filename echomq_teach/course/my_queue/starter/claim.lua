-- claim.lua · your queue's claim (stage 02.2), run in the place of the kit's @claim2
-- KEYS: [1] pending, [2] active, [3] the base emq:{q}: (a job's row is KEYS[3] .. 'job:' .. id)
-- ARGV: [1] lease_ms
-- reply: {} when no job can be handed out, else {id, payload, attempts}
-- What it must do: notebook 02, "Your queue, stage 1". Write its body in the place of the line below.
return redis.error_reply('MYQUEUE claim.lua is not written yet')
