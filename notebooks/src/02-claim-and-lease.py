# %% [markdown]
# # The Queue · 02 — claim and the lease
#
# The claim is the heart of the queue: one atomic step that hands a job to exactly one worker,
# for a limited time, with a number that later proves who may finish it.
#
# **Goals**
#
# 1. Read `claim/3` and the `@claim2` script line by line.
# 2. See that the lease deadline comes from the **server's** clock.
# 3. Use `attempts` as a fencing token.
# 4. Feed the ghost guard, and watch a paused queue answer empty.

# %%
import inspect as source

from echomq_teach import jobs, keyspace, scripts, snapshots, start_node

node = start_node()
conn = node.connector()
raw = node.client()
Q = "lease"
# a classroom node keeps what an earlier run left: start this notebook's queues empty
for q in (Q, "fence", "ghosts", "paused"):
    jobs.drop(conn, q)
conn.clear_trace()  # the trace starts with the notebook's own calls

# %% [markdown]
# ## The handle: `claim/3` → `jobs.claim(conn, queue, lease_ms)`
#
# The course's `EchoMQ.Jobs.claim/3` is a thin handle around the script. The kit's Python twin does
# the same three things: refuse a lease that is not a positive integer, read the pause flag in its
# own round trip (the course's `paused?/2`, in Python `jobs.paused(conn, queue)`), and only then send
# `@claim2` with three keys and one argument. Here is the kit's code, read from the module itself:

# %%
print(source.getsource(jobs.claim))

# %% [markdown]
# The three keys are the pending set, the active set and the **base** `emq:{q}:`; the one argument
# is the lease in milliseconds. The reply is either empty (`:empty`, Python `None`) or
# `[id, payload, attempts]`. A lease of 0, a negative one, a float or a string never gets that far:
# Python refuses it and sends nothing. On this still-empty queue the claim goes out and answers empty:

# %%
for bad in (0, -5, 1.5, "30000"):
    try:
        jobs.claim(conn, Q, bad)
        raise AssertionError(f"a lease of {bad!r} was accepted")
    except jobs.BadInput:
        pass
assert len(conn.trace) == 0  # four refusals, not one command sent
assert jobs.paused(conn, Q) is False and jobs.claim(conn, Q, 30_000) is None
print(conn.show_trace(3))
assert [e.script or e.args[0] for e in conn.trace] == ["EXISTS", "EXISTS", "@claim2"]
assert conn.last()[0].reply == []

# %% [markdown]
# ## The script: `@claim2`
#
# The whole claim is this one file. It runs atomically: no other command on the node runs between
# its first line and its last.

# %%
claim2 = scripts.load("claim2")
for n, line in enumerate(claim2.source.splitlines(), 1):
    print(f"{n:2}  {line}")

# %% [markdown]
# Line by line:
#
# - **`ZPOPMIN`** takes the member with the lowest score. Every pending score is 0, so ties are
#   broken by the member itself — the lowest id, which is the oldest mint.
# - **Nothing pending** answers `{}`, which the handle maps to `:empty`.
# - **The row key** is built from the declared base `KEYS[3]`, so it carries the same `{q}` hashtag.
# - **The ghost guard**: an id with no row is consumed by the pop and answers `{}` — it mints nothing.
# - **`HINCRBY attempts 1`**: the *new* attempts is the fencing token.
# - **`TIME`**: the server's clock, in milliseconds — never the caller's.
# - **`ZADD active now+lease`**: the active score *is* the lease deadline.

# %% [markdown]
# ## Oldest first
#
# Mint three ids and claim three times: they come out in the order they went in.

# %%
minted = [jobs.enqueue(conn, Q, f"job {i}") for i in range(3)]
assert minted == sorted(minted)  # mint order is id order
got = [jobs.claim(conn, Q, 30_000).id for _ in range(3)]
print("minted :", minted)
print("claimed:", got)
assert got == minted
reply = conn.last()[0].reply  # the script's own reply: [id, payload, attempts]
assert reply == [minted[-1], "job 2", 1]
# the row the script built from KEYS[3] is the row the kit names: same base, same {q} hashtag
assert raw.hget(keyspace.job_key(Q, minted[-1]), "state") == "active"

# %% [markdown]
# ## The deadline lives on the server's clock
#
# Read the server's `TIME` just before and just after a claim. The active score minus the lease
# must fall between the two: the deadline was stamped by the server, inside the script.

# %%
def server_ms() -> int:
    sec, usec = raw.time()
    return sec * 1000 + usec // 1000


job = jobs.enqueue(conn, Q, "watch the clock")
t0 = server_ms()
claimed = jobs.claim(conn, Q, 30_000)
t1 = server_ms()
deadline = int(raw.zscore(keyspace.queue_key(Q, "active"), job))
print("lease 30000 ms; deadline - lease lies within the claim's window:", t0 <= deadline - 30_000 <= t1)
assert t0 <= deadline - 30_000 <= t1

# %% [markdown]
# Why the server's clock? Because the deadline is read later by `@reap`, which also runs on the
# server. One clock stamps the lease and one clock judges it, whatever the clocks of the workers say.

# %% [markdown]
# ## Attempts is the fencing token
#
# A claim answers the new `attempts`. Suppose the worker stalls past its lease, a sweep returns the
# job to pending, and another worker claims it: attempts moves to 2. The first worker's completion,
# still carrying token 1, is now **stale** and writes nothing.

# %%
import time

Q2 = "fence"
job = jobs.enqueue(conn, Q2, "contested")
first = jobs.claim(conn, Q2, 50)  # a 50 ms lease, to lapse quickly
time.sleep(0.08)
reaped = jobs.reap(conn, Q2)
print("reaped:", reaped == [job])
assert reaped == [job]
second = jobs.claim(conn, Q2, 30_000)
print("tokens:", first.attempts, "then", second.attempts)
before = snapshots.snapshot(conn, Q2)
late = jobs.complete(conn, Q2, job, first.attempts)
assert snapshots.snapshot(conn, Q2).state_only() == before.state_only()  # stale: nothing written
print("the first worker's late completion:", late)
on_time = jobs.complete(conn, Q2, job, second.attempts)
print("the second worker's completion:", on_time)
assert (first.attempts, second.attempts, late, on_time) == (1, 2, jobs.STALE, jobs.OK)

# %% [markdown]
# Nothing else guards the job: there is no lock to take and no heartbeat to keep renewing. The
# second claim raised the token, and `@complete` compared the first worker's number with it.

# %% [markdown]
# ## The ghost guard
#
# A ghost is an id in pending with no row — left behind, say, by a hand-typed `ZADD`, or by a row
# deleted by hand (`DEL`) while its id stayed in pending. The claim pops it, finds no row, and
# answers empty **without minting one**.

# %%
Q3 = "ghosts"
raw.zadd(keyspace.queue_key(Q3, "pending"), {"JOBghost000000": 0})
before = snapshots.snapshot(conn, Q3)
ghost_claim = jobs.claim(conn, Q3, 30_000)
after = snapshots.snapshot(conn, Q3)
print("claim answered:", ghost_claim)
print("pending before:", before.pending, "after:", after.pending, "rows after:", after.rows)
assert ghost_claim is None and after.pending == [] and after.rows == {}

# %% [markdown]
# ## Pause
#
# A paused queue holds its claims. `claim/3` reads the flag `emq:{q}:paused` host-side, in its own
# round trip, and answers `:empty` without ever sending the script: pending is left untouched.

# %%
Q4 = "paused"
waiting = jobs.enqueue(conn, Q4, "after the break")
jobs.pause(conn, Q4)
conn.clear_trace()
held = jobs.claim(conn, Q4, 30_000)
sent = [e.line for e in conn.last(5)]
print("claim answered:", held)
print("sent:", sent)
assert held is None and sent == [f"EXISTS {keyspace.queue_key(Q4, 'paused')}"]
assert snapshots.snapshot(conn, Q4).pending == [waiting]

# %%
jobs.resume(conn, Q4)
resumed = jobs.claim(conn, Q4, 30_000)
print("after resume:", resumed.id == waiting)
assert resumed.id == waiting

# %% [markdown]
# ## Watch it
#
# The set view below redraws the `lease` queue from a real snapshot: its active set holds the jobs
# claimed above, each with its deadline counted from server now.

# %%
from echomq_widgets import SetView

view = SetView(conn, Q)
assert sorted(view.snapshot.active) == sorted(minted + [claimed.id])
view

# %% [markdown]
# ## Exercises
#
# ### 02.1 · A five-second lease
#
# One job waits in pending. Claim it with a lease of five seconds and return what the claim answered.

# %%
from echomq_teach import exercises


def five_second_lease(conn, queue, job_id):
    # your code here
    raise NotImplementedError


print(exercises.check("02.1", five_second_lease, conn))

# %% [markdown]
# ### 02.2 · Claim from a paused queue
#
# Pause the queue, then try to claim, and return what the claim answered. The check wants the job
# still in pending, untouched.

# %%
def paused_claim(conn, queue, job_id):
    # your code here
    raise NotImplementedError


print(exercises.check("02.2", paused_claim, conn))

# %% [markdown]
# ### 02.3 · Feed the ghost guard
#
# Put a ghost in an empty queue's pending set with a plain `conn.call("ZADD", …)`, then claim and
# return the answer. The check wants an empty answer, an empty pending set and no row minted.

# %%
def feed_the_ghost(conn, queue):
    # your code here
    raise NotImplementedError


print(exercises.check("02.3", feed_the_ghost, conn))

# %% [markdown]
# ## Recap
#
# - `claim/3` refuses a bad lease, reads the pause flag host-side, then sends `@claim2`.
# - `@claim2` pops the oldest id, guards against ghosts, moves the token, and stamps the deadline
#   from the server's `TIME`.
# - The lease lives in the active score, the fencing token in `attempts`.
#
# Next: **03-completion-and-recovery** — what the token is for.


# %% [markdown]
# ## When you are done
#
# The nodes the kit started for this notebook stop with its kernel (a classroom's shared node stays
# up), so there is nothing to stop by hand: when you leave, shut the kernel down (**Kernel → Shut
# Down Kernel**). Until then the widgets above keep working, even after **Run All** — each click is
# still a real call.
