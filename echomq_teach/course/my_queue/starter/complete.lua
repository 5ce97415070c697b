-- complete.lua · your queue's completion (stage 03.3; a flow child's from stage 05.2), in the place of @complete
-- KEYS: [1] active, [2] the row; a flow child adds [3] its parent's :dependencies, [4] its :processed, [5] the parent's row
-- ARGV: [1] id, [2] token, [3] the base emq:{q}:, [4] the parent's id ('' if none), [5] result, [6] record (optional)
-- reply: 1 when this call completed the job, 0 when the caller no longer holds it (nothing written)
-- What it must do: notebook 03, "Your queue, stage 2" (and 05, "stage 5"). Write its body in the place of the line below.
return redis.error_reply('MYQUEUE complete.lua is not written yet')
