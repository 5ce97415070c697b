-- renew.lua · your queue's lease renewal (stage 02.2), which a handler that outlives its lease calls
-- KEYS: [1] active, [2] the job's row
-- ARGV: [1] the job's id, [2] the caller's token (the attempts its claim answered), [3] lease_ms
-- reply: 1 when it renewed the lease, 0 when the caller no longer holds the job (nothing written)
-- What it must do: notebook 02, "Your queue, stage 1". Write its body in the place of the line below.
return redis.error_reply('MYQUEUE renew.lua is not written yet')
