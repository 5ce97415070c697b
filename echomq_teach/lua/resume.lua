-- @resume: let a paused queue's claims through again (EchoMQ.Jobs.resume/2)
-- KEYS: [1] the flag emq:{q}:paused
-- ARGV: none
-- reply: 1 when this call resumed it, 0 when it was not paused
return redis.call('DEL', KEYS[1])
