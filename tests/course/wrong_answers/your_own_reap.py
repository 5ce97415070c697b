"""Wrong answers to 03.3 (your own reap, bounded), each with the finding that must name why; and the copy
attempts: the kit's @reap and @stalled_check, printed in notebook 03, as they are and fitted to the exercise's
keys and arguments."""

from echomq_teach import scripts

HEADER = """
-- KEYS[1] active, [2] pending, [3] dead, [4] base emq:{q}:; ARGV[1] limit, [2] max_attempts
-- reply {the ids moved back, the ids buried}
"""
NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""
BURY = """
    redis.call('ZADD', KEYS[3], now, id)
    redis.call('HSET', row, 'state', 'dead')
    redis.call('XADD', KEYS[4] .. 'stream:completions', '*', 'id', id, 'outcome', 'stalled', 'attempts', n,
      'error', 'lapsed at the cap')
    buried[#buried + 1] = id
"""


def bounded(back_to_pending: str, *, lapsed: str = "'(' .. now, 'LIMIT', 0, tonumber(ARGV[1])",
            bury: str = BURY, now: str = NOW, first: str = "") -> str:
    """The bounded reap with one piece written wrong: what goes back to pending, which leases, the burial."""
    return HEADER + now + f"""
local back, buried = {{}}, {{}}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', {lapsed})) do
  local row = KEYS[4] .. 'job:' .. id
  local n = redis.call('HGET', row, 'attempts')
  {first}redis.call('ZREM', KEYS[1], id)
  if tonumber(n) >= tonumber(ARGV[2]) then{bury}  else{back_to_pending}    back[#back + 1] = id
  end
end
return {{back, buried}}
"""


RIGHT_BACK = """
    redis.call('ZADD', KEYS[2], 0, id)
    redis.call('HSET', row, 'state', 'pending')
"""

# moved back to pending, its row still saying active: the dead worker wakes before the next claim, its token still
# the row's attempts and its row still 'active', and the fence lets its completion through (a ghost stays behind)
STATE_LEFT_ACTIVE = bounded("""
    redis.call('ZADD', KEYS[2], 0, id)
""")

# a fresh claim token is what fences out the dead worker: this reap hands the next claim the old one
RESETS_ATTEMPTS = bounded(RIGHT_BACK + """
    redis.call('HINCRBY', row, 'attempts', -1)
""")

# the lease leaves active and its row says pending, but the id never reaches the pending set
LOSES_THE_JOB = bounded("""
    redis.call('HSET', row, 'state', 'pending')
""")

# every lapsed lease in one call, however many: the limit is never read
NO_LIMIT = bounded(RIGHT_BACK, lapsed="'(' .. now")

# the server's TIME read as seconds: every deadline (in ms) lies in the far future, nothing ever lapses
SECONDS_CLOCK = bounded(RIGHT_BACK, now="\nlocal now = tonumber(redis.call('TIME')[1])\n")

# no deadline read at all: "in active too long" taken for "in active"
EVERY_LEASE = bounded(RIGHT_BACK, lapsed="'+inf', 'LIMIT', 0, tonumber(ARGV[1])")

# a "margin" added the wrong way round: leases due within the next 500 ms count as lapsed already, so a healthy
# handler's job is taken from it mid-work (the dry run's live lease, a minute long, is not touched)
EARLY_MARGIN = bounded(RIGHT_BACK, now=NOW + "now = now + 500\n")

# the cap read, the burial half done: in dead, but no ending recorded on the completions stream
UNRECORDED_BURIAL = bounded(RIGHT_BACK, bury="""
    redis.call('ZADD', KEYS[3], now, id)
    redis.call('HSET', row, 'state', 'dead')
    buried[#buried + 1] = id
""")

# the counted sweep's rule: lapses counted in the row's stalled field, a job buried once it stalled more than
# the cap allows. A job whose attempts went to handler errors has stalled once at its last attempt: back it goes
STALLS_COUNTED = bounded(RIGHT_BACK, first="n = redis.call('HINCRBY', row, 'stalled', 1) + 1\n  ")

SYNTAX = HEADER + """
local t = redis.call('TIME')
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, 0)) do
  redis.call('ZREM', KEYS[1], id)
return {{}, {}}
"""


# -- copy attempts: what notebook 03 prints, as it is and fitted ------------------------------------------------
def reap_as_it_is():
    # @reap, printed in full in 03: it reads its base from KEYS[3], here the dead set
    return scripts.load("reap").source


def reap_fitted():
    # @reap with the exercise's base (KEYS[4]) and limit (ARGV[1]): it forgives every lapse, the last one too
    src = scripts.load("reap").source
    return src.replace("KEYS[3]", "KEYS[4]").replace("'LIMIT', 0, 100)", "'LIMIT', 0, tonumber(ARGV[1]))")


def stalled_check_as_it_is():
    # @stalled_check, printed in 03 below the reap: it takes ARGV[2] for its record flag, and refuses a 3
    return scripts.load("stalled_check").source


def stalled_check_fitted():
    # @stalled_check with the exercise's arguments (its cap from ARGV[2], its limit from ARGV[1], recording on):
    # it counts stalls, not attempts, and sends back a job whose attempts went to its handler's errors
    src = scripts.load("stalled_check").source
    return (src.replace("local record = record_flag(2)", "local record = '1'")
            .replace("refuse_positive('max_stalled', ARGV[1])", "refuse_positive('max_stalled', ARGV[2])")
            .replace("local max_stalled = tonumber(ARGV[1])", "local max_stalled = tonumber(ARGV[2]) - 1")
            .replace("'LIMIT', 0, 100)", "'LIMIT', 0, tonumber(ARGV[1]))"))
