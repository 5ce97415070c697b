# %% [markdown]
# # The Queue · 06 — workshop: trace a job, compose a flow
#
# This is the last stop of the chapter, and it runs everything you have met so far in one place:
# a job walked across the four sets on each of its three paths, the claim sent both as a script and
# as a native command, and a flow whose parent waits for a counter to reach zero.
#
# **Goals**
#
# 1. Trace one job through its lifecycle, on all three paths, one real call per step.
# 2. Run the claim as a script and as `EMQ.CLAIM`, and read the two replies.
# 3. Compose a flow and see the fan-in let the parent go.

# %%
import time

from echomq_teach import flows, jobs, snapshots, start_node

node = start_node()
conn = node.connector()
# a classroom node keeps what an earlier run left: start this notebook's queues empty
for q in ("trace", "q", "compose", "floor"):
    jobs.drop(conn, q)
conn.clear_trace()  # the trace starts with the notebook's own calls

# %% [markdown]
# ## Trace a job through its lifecycle
#
# Every transition is one script that runs start to finish with nothing in between. On the happy
# path a job needs three of them. On the failure fork it needs more: a retry that parks it, a
# promote that brings it back, a second claim, and a last retry that buries it. Recovery needs just
# one, a reap, and only happens when some client calls it.
#
# Choose a path in the stepper and press **Step**. Each press is one real call; you see its caption,
# the command as sent, the server's reply, and the four sets with the changes marked.

# %%
from echomq_widgets import LifecycleStepper

trace = LifecycleStepper(conn, "workshop", path="happy")
assert trace.path_buttons.options == ("happy", "failure", "recovery") and trace.index == 0
trace

# %% [markdown]
# The same three paths, run straight through in code, with the end state of each checked against
# what the course says:

# %%
Q = "trace"
# the happy path: enqueue → claim → complete
job = jobs.enqueue(conn, Q, "happy")
c = jobs.claim(conn, Q, 30_000)
assert jobs.complete(conn, Q, c.id, c.attempts) == jobs.OK
assert job not in snapshots.snapshot(conn, Q).rows  # retired: the row is deleted

# the failure fork: error → retry → promote → claim → final retry into dead
job = jobs.enqueue(conn, Q, "fork")
c = jobs.claim(conn, Q, 30_000)
assert jobs.retry(conn, Q, c.id, c.attempts, "first error", delay_ms=50, max_attempts=2) == jobs.SCHEDULED
time.sleep(0.08)
assert jobs.promote(conn, Q) == [job]
c = jobs.claim(conn, Q, 30_000)
assert jobs.retry(conn, Q, c.id, c.attempts, "final error", delay_ms=50, max_attempts=2) == jobs.DEAD
s = snapshots.snapshot(conn, Q)
assert s.where(job) == ["dead"]
assert s.rows[job]["attempts"] == "2" and s.rows[job]["last_error"] == "final error"

# recovery: a lapsed lease waits in active until a client sweeps
job = jobs.enqueue(conn, Q, "crash")
crashed = jobs.claim(conn, Q, 50)
time.sleep(0.08)
assert snapshots.snapshot(conn, Q).where(job) == ["active"]  # nothing moves on its own
assert jobs.reap(conn, Q) == [job]
rescued = jobs.claim(conn, Q, 30_000)
assert jobs.complete(conn, Q, job, crashed.attempts) == jobs.STALE
assert jobs.complete(conn, Q, job, rescued.attempts) == jobs.OK
print("happy path, failure fork and recovery: each ended where the course says")

# %% [markdown]
# Two numbers did all the work there: the active score, which is when the lease runs out, and
# `attempts`, which is the token a completion must present. One bounds the time a worker has; the
# other decides whose answer counts.

# %% [markdown]
# ## The claim, natively
#
# Load the `trafikey` module and the claim becomes a single command, `EMQ.CLAIM`. It takes the very
# same keys and lease, in the very same positions, and answers in the same shape.

# %%
native = start_node(native=True)
n_conn = native.connector()
lines = []
jobs.drop(n_conn, "q")  # a classroom's native node keeps an earlier run's job too
for cn in (conn, n_conn):
    jobs.enqueue(cn, "q", "<payload>", job_id="JOB0KHTOWnGLuC")
    jobs.claim(cn, "q", 30_000)
    lines.append(cn.last()[0].line)
    print(cn.last()[0].line)
    print("  →", cn.last()[0].reply_text)
assert conn.last()[0].reply == n_conn.last()[0].reply == ["JOB0KHTOWnGLuC", "<payload>", 1]
# past the first words the two lines are equal: a <sha> for the script, a name for the command
assert lines[0].removeprefix("EVALSHA <sha> ") == lines[1].removeprefix("EMQ.CLAIM ")

# %%
from echomq_widgets import ExecutorView

executors = ExecutorView(conn, n_conn, "claim")
assert executors.comparison.undocumented == []  # nothing differs but the four documented differences
executors

# %% [markdown]
# ## Compose a small flow
#
# A parent and its children land together through `flows.add` (in the course's Elixir,
# `EchoMQ.Flows.add/3`): one `@enqueue_flow` call puts the children in pending, keeps the parent out
# of every set in state `awaiting_children`, and sets its counter to the number of children. In the
# composer, pick how many children, land the flow, and finish them one at a time; the plot follows
# the counter down, and the parent goes to pending when it hits zero.

# %%
from echomq_widgets import CounterPlot, FlowComposer

composer = FlowComposer(conn, "workshop-flow", children=3)
sizes = CounterPlot(title="the composer's queue: set sizes after each click")
sizes.follow(composer)
composer

# %% [markdown]
# A second plot follows the same composer: the size of each set after every click. It stays empty
# until you land a flow.

# %%
assert len(sizes.series) == 0
sizes

# %% [markdown]
# And in code: a flow of three, completed child by child.

# %%
Q = "compose"
flow = flows.add(conn, Q, "parent", ["one", "two", "three"])
counter = [flows.dependencies(conn, Q, flow.parent_id)]
for _ in flow.child_ids:
    c = jobs.claim(conn, Q, 30_000)
    jobs.complete(conn, Q, c.id, c.attempts, f"{c.payload} done")
    counter.append(flows.dependencies(conn, Q, flow.parent_id))
print(" → ".join(map(str, counter)), "· parent", snapshots.snapshot(conn, Q).state(flow.parent_id))
assert counter == [3, 2, 1, 0] and snapshots.snapshot(conn, Q).where(flow.parent_id) == ["pending"]

# %% [markdown]
# ## The durable floor
#
# The queue is no archive. A finished job's row is gone the moment it completes, and a dead job
# waits only until someone reprocesses, removes or trims it. (The node your kernel started does not
# even write to disk.) If you need a record that lasts, a consumer started with `record=True`
# appends every finished job — completed or dead — to the stream `emq:{q}:stream:completions`,
# inside the same script that settles it: one entry per settle, never two, never none.

# %%
from echomq_teach import keyspace
from echomq_teach.consumer import Consumer, Error

Q = "floor"
if node.owned:
    assert node.client().config_get("appendonly")["appendonly"] == "no"
floor_ids = [jobs.enqueue(conn, Q, f"job {i}") for i in range(5)]
worker = Consumer(conn, Q, lambda j: Error("no") if j.payload == "job 4" else "yes",
                  record=True, max_attempts=1)
report = worker.run(timeout=10, until_idle=True)
stream = keyspace.queue_key(Q, "stream:completions")
entries = node.client().xrange(stream)
outcomes = [fields["outcome"] for _, fields in entries]
print(report.outcomes, "·", len(entries), "stream entries:", outcomes)
assert outcomes == ["completed"] * 4 + ["dead"]
assert [fields["id"] for _, fields in entries] == floor_ids  # one entry per settle
# never two: the same completion sent again is stale, and the stream stays as it was
assert jobs.complete(conn, Q, floor_ids[0], 1, "again", record=True) == jobs.STALE
assert conn.call("XLEN", stream) == 5

# %% [markdown]
# ## Recap — the machine, end to end
#
# - A job's life is a handful of scripts: enqueue, claim, complete when all goes well; after a failed
#   first claim, retry, promote, claim and a last retry into dead; and one reap, called by a client,
#   when a worker vanishes. On a native node the claim is one command with the same reply.
# - The lease (the active score) limits how long a worker may hold a job; the token (`attempts`)
#   decides whose completion counts.
# - A flow is one atomic land plus a counter; each child's completion takes one off, and zero
#   releases the parent.
# - Four sorted sets and one hash per job: that is the whole queue.


# %% [markdown]
# ## When you are done
#
# The nodes the kit started for this notebook stop with its kernel (a classroom's shared node stays
# up), so there is nothing to stop by hand: when you leave, shut the kernel down (**Kernel → Shut
# Down Kernel**). Until then the widgets above keep working, even after **Run All** — each click is
# still a real call.
