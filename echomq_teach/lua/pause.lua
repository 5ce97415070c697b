-- @pause: hold a queue's claims (EchoMQ.Jobs.pause/2)
-- KEYS: [1] the flag emq:{q}:paused
-- ARGV: none
-- reply: 1 when this call paused it, 0 when it was paused already
-- present = paused (D-1 in docs/decisions.md): the value is only a marker
if redis.call('SET', KEYS[1], '1', 'NX') then return 1 end
return 0
