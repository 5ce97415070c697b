"""Wrong answers to 05.2 (the quorum fan-in under kills), each with the finding that must name why; and the copy
attempts: the kit's @complete, printed in notebook 03 and its fan-in branch again in 05, as it is and with the one
edit that reads the quorum."""

from echomq_teach import scripts

HEADER = """
-- KEYS: [1] active, [2] the child's row, [3] the parent's :dependencies, [4] its :processed, [5] the parent's row
-- ARGV: [1] the child's id, [2] the caller's token, [3] the base p (emq:{q}:), [4] the parent's id, [5] the result
-- reply: 1 when this call completed the child, 0 when the caller no longer held it (nothing written)
"""
FENCE = """
local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
"""
RELEASE = """
    redis.call('ZADD', ARGV[3] .. 'pending', 0, ARGV[4])
    redis.call('HSET', KEYS[5], 'state', 'pending')
"""


def quorum(fence: str = FENCE, release: str = RELEASE, *, waiting: str = " and redis.call('HGET', KEYS[5], 'state') "
           "== 'awaiting_children'", reached: str = ">= tonumber(redis.call('HGET', KEYS[5], 'quorum'))") -> str:
    """The quorum fan-in with one piece written wrong: the fence, the release, the guard, the count."""
    return HEADER + fence + f"""
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1{waiting} then
  redis.call('DECR', KEYS[3])
  redis.call('HSET', KEYS[4], ARGV[1], ARGV[5])
  if redis.call('HLEN', KEYS[4]) {reached} then{release}  end
end
redis.call('DEL', KEYS[2])
return 1
"""


# no fence: "it is my job" is taken on trust; a zombie's late completion counts its child a second time
NO_FENCE = quorum(fence="\n")

# the token, not the state: a worker that wakes after a sweep put its child back in pending (no claim since, so its
# token is still the row's attempts) completes it: the child counts, its row goes, and a ghost stays in pending
TOKEN_NOT_STATE = quorum(fence="""
if redis.call('HGET', KEYS[2], 'attempts') ~= ARGV[2] then return 0 end
""")

# the parent put in pending, its row not told: it still says awaiting_children (until a claim overwrites it)
ROW_LEFT_WAITING = quorum(release="""
    redis.call('ZADD', ARGV[3] .. 'pending', 0, ARGV[4])
""")

# the quorum read, the guard forgotten: every later completion counts, and releases the parent again (a running
# parent lands in pending as well as active, and its row is told pending)
NO_GUARD = quorum(waiting="")

# the count compared before it is made: the quorum-th completion sees one fewer, the parent waits for one more
COUNTED_LATE = quorum(reached="> tonumber(redis.call('HGET', KEYS[5], 'quorum'))")

# a runtime error on line 7 (the base is ARGV[3], not a global): named by line, not a crash
RUNTIME = HEADER + """
local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')
if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
local left = redis.call('DECR', KEYS[3]) + parents_left
redis.call('DEL', KEYS[2])
return 1
"""


# -- copy attempts: the kit's @complete, as it is and with the one edit that reads the quorum -------------------
def complete_as_it_is():
    # @complete: the fence, once-only and the fan-in the course shows; it releases a parent when ALL its children
    # completed, whatever its quorum
    return scripts.load("complete").source


def complete_with_the_quorum():
    # @complete with its release line made to read the quorum: released at the quorum, but every later completion
    # still counts (and releases again) because nothing asks whether the parent still waits
    src = scripts.load("complete").source
    edited = src.replace("if left <= 0 then",
                         "if redis.call('HLEN', KEYS[4]) >= tonumber(redis.call('HGET', KEYS[5], 'quorum')) then")
    assert edited != src
    return edited
