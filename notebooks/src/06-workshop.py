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
# 4. Name the pattern behind it all, and where each piece is grounded.

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
# the command as sent, the server's reply, and the four sets with the changes marked. The code below
# walks the failure fork to its end first, so the stepper shows the job in dead; press **Reset**, or
# pick another path, to walk one yourself.

# %%
from echomq_widgets import LifecycleStepper, Settings

trace = LifecycleStepper(conn, "workshop", path="failure", settings=Settings(retry_delay_ms=20))
assert trace.path_buttons.options == ("happy", "failure", "recovery") and trace.index == 0
outcomes = trace.run_all()
assert trace.set_view.snapshot.where(trace.job_id) == ["dead"] and trace.step_button.description == "done ✓"
print(" → ".join(o.step.name for o in outcomes))
trace

# %% [markdown]
# The same three paths, run straight through in code, with the end state of each checked against
# what the course says (the checks are folded: click the `…` to read them):

# %% jupyter={"source_hidden": true}
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
# `attempts`, which is the token a completion must present. One times the work — one holder per lease
# ([ledger](docs/guarantees.md#one-holder-per-lease)), and a sweep may hand a lapsed job to another
# worker, so a handler may run more than once; the other decides whose answer counts — one settle per
# job in each of its lives ([ledger](docs/guarantees.md#one-settle-per-life)).

# %% [markdown]
# ## The claim, natively
#
# Load the `trafikey` module and the claim becomes a single command, `EMQ.CLAIM`. It takes the very
# same keys and lease, in the very same positions, and answers in the same shape.

# %%
native = start_node(native=True)
n_conn = native.connector()
lines = []
for cn in (conn, n_conn):
    # a classroom's native node, and a re-run of this cell, keep an earlier run's job: start empty
    jobs.drop(cn, "q")
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
# the counter down, and the parent goes to pending when it hits zero. The code lands one flow and
# completes its children first, so the composer and the plot below show a finished run; press
# **land the flow** for your own.

# %%
from echomq_widgets import CounterPlot, FlowComposer

composer = FlowComposer(conn, "workshop-flow", children=3)
sizes = CounterPlot(title="the composer's queue: set sizes after each click")
sizes.follow(composer)
composer.land_button.click()
for _ in range(3):
    composer.complete_button.click()
assert composer.counter == [3, 2, 1, 0] and composer.parent_state == "pending"
composer

# %% [markdown]
# A second plot follows the same composer: the size of each set after every click — the children
# leave pending one by one, and at the end the released parent is the one id in pending.

# %%
assert sizes.series.labels == ["land", "c1", "c2", "c3"] and sizes.series.sizes["pending"] == [3, 2, 1, 1]
sizes

# %% [markdown]
# And in code: a flow of three, completed child by child.

# %%
Q = "compose"
jobs.drop(conn, Q)  # a re-run of this cell starts from an empty queue, as the first run did
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
# even write to disk.) A consumer started with `record=True` appends every finished job — completed
# or dead — to the stream `emq:{q}:stream:completions`, inside the same script that settles it: on
# one node, one entry per ending in each life, never two, never none
# ([ledger](docs/guarantees.md#one-ending-one-entry)). That stream is still memory: it goes with a
# node that restarts without persistence (08), a failover can lose an entry with its settle (09), and
# trimming it deletes. Notebook 08 folds it into a durable floor before it trims.

# %%
from echomq_teach import keyspace
from echomq_teach.consumer import Consumer, Error

Q = "floor"
jobs.drop(conn, Q)  # a re-run of this cell starts from an empty queue, as the first run did
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
assert [fields["id"] for _, fields in entries] == floor_ids  # one entry per ending, on this node
# never two: the same completion sent again is stale, and the stream stays as it was
assert jobs.complete(conn, Q, floor_ids[0], 1, "again", record=True) == jobs.STALE
assert conn.call("XLEN", stream) == 5

# %% [markdown]
# ## Pattern & implementation
#
# **The pattern.** Underneath the Queue are two ideas from the catalogue of patterns built on Redis
# and Valkey. A *reliable queue* gets a job back from a crashed worker, as long as a client sweeps
# ([ledger](docs/guarantees.md#at-least-once-runs)): the job is handed out and
# marked in one atomic step, it stays visible to the system while a worker holds it, and if the worker
# does not confirm within a time, the job becomes claimable again. *Flow control* — one job waiting on
# others — is the same reliable queue used as a building block: each child is an ordinary reliable job,
# and the parent waits on a count of them. In three words each: **confirm atomically, recover by
# timeout, compose by counting.**
#
# **The implementation.** The Queue holds those ideas in four sorted sets and one row per job:
#
# - *confirm atomically* — every move is one script (or one native command) that the server runs
#   whole: the claim pops and marks in one step, the completion checks the token, removes the job and
#   retires its row in one step;
# - *recover by timeout* — the active score is the lease deadline on the server's clock, and a sweep a
#   client calls (reap, or the counted stall sweep) returns what is past it; the token fences the
#   crashed worker's late answer;
# - *compose by counting* — a flow is one atomic land and a counter; each child's once-only completion
#   takes one off, and zero releases the parent.
#
# Each was shown on this node above; the cell below checks the three against the runs of this notebook.

# %%
# confirm atomically: the stale completion of the recovery path answered stale and wrote nothing,
# and the happy path's completion took the job from active and deleted its row in one call
assert jobs.complete(conn, "trace", job, crashed.attempts) == jobs.STALE
# recover by timeout: the crashed worker's lease lapsed and one reap returned it, with no heartbeat
assert rescued.attempts == crashed.attempts + 1
# compose by counting: the flow's counter went 3, 2, 1, 0 and the parent was released
assert counter == [3, 2, 1, 0]
print("confirm atomically, recover by timeout, compose by counting: each held on this node")

# %% [markdown]
# ### 06.1 · Trace a flow child (predict)
#
# The paths above, put together on one flow: a parent and two children `a` and `b`, each with the policy
# `ignore`. Then, one step at a time:
#
# 1. `a` is claimed and its handler fails: a retry, due in 50 ms, 3 attempts allowed;
# 2. a promote, once the retry is due;
# 3. `a` is claimed with a 20 ms lease, its worker dies, and a reap runs once the lease has lapsed;
# 4. `a` is claimed and completed;
# 5. `b` is claimed and fails at a cap of 1 attempt.
#
# **Predict**: where `a` is after each step (`"pending"`, `"active"`, `"schedule"`, `"dead"` or
# `"nowhere"`), the parent's `:dependencies` after each step, the token `a`'s completion carried, and the
# parent's state at the end. Only once your answer is kept does the check land that flow and run the
# five steps; after that, `exercises.hint("06.1")` gives a hint if it did not match.
# *Solution: `solutions/06_1_trace_a_flow_child.py`.*
#
# A prediction is your answer itself, written as data (no function: nothing of yours runs before the
# check does): replace each `...`. Your **first** answer of the right form is kept and graded (it survives a
# kernel restart): think it through before you run the cell.

# %%
from echomq_teach.course import exercises  # noqa: E402

trace_a_flow_child = {  # your prediction
    "where a is after each step": [..., ..., ..., ..., ...],
    ":dependencies after each step": [..., ..., ..., ..., ...],
    "a's token when it completed": ...,
    "the parent at the end": ...,
}
print(exercises.check("06.1", trace_a_flow_child, conn))

# %% [markdown]
# ## References
#
# Where each piece is grounded, in the Valkey command reference and in this repository:
#
# - **`ZPOPMIN`** — the claim's pop: the member with the lowest score, and at equal scores (pending's
#   0) the lowest member by its bytes, so the oldest mint.
# - **`ZADD`** — the insert every transition ends with: pending at 0, active at the lease deadline,
#   schedule at the run-at, dead at the time of death.
# - **`ZRANGEBYSCORE`** — promote and the sweeps read the due or lapsed members by score.
# - **`DECR`** — the fan-in's one-fewer on a parent's `:dependencies`.
# - **`EVALSHA`** — how each script runs after it is loaded once; a node that forgot it answers
#   `NOSCRIPT`, and the kit loads it again.
# - **Modules** (`loadmodule`, the module API) — how `trafikey` registers `EMQ.CLAIM` and its siblings;
#   our declarations of the API are described in [`docs/decisions.md`](docs/decisions.md).
# - **This course** — `01-lifecycle.ipynb` (the state machine), `02-claim-and-lease.ipynb` (the lease
#   and the token), `03-completion-and-recovery.ipynb` (complete, retry, the sweeps),
#   `04-two-executors.ipynb` (the script and the command, body by body), `05-flows.ipynb` (the land and
#   the fan-in), `07-when-things-fail.ipynb` (races and crash points),
#   `08-the-durable-floor.ipynb` (an archive of every recorded ending), `09-cluster.ipynb` (shards and a
#   failover), `10-case-files.ipynb` (other queues' failures, judged by the same checker).

# %% [markdown]
# ## Recap — the machine, end to end
#
# - A job's life is a handful of scripts: enqueue, claim, complete when all goes well; after a failed
#   first claim, retry, promote, claim and a last retry into dead; and one reap, called by a client,
#   when a worker vanishes. On a native node the claim is one command with the same reply.
# - The lease (the active score) keeps every other claim on its node away from the job until its
#   deadline — one holder per lease ([ledger](docs/guarantees.md#one-holder-per-lease)). It bounds
#   neither how long the handler runs nor whether its worker lives: a handler may run again after a
#   sweep hands a lapsed job on. The token (`attempts`) decides whose completion counts, so each job
#   settles once in each of its lives ([ledger](docs/guarantees.md#one-settle-per-life)).
# - A flow is one atomic land plus a counter; each child's completion takes one off, and zero
#   releases the parent.
# - Four sorted sets and one hash per job: that is the whole queue. The pattern: confirm atomically,
#   recover by timeout, compose by counting.
#
# Next: **07-when-things-fail** — races, crashes, frozen workers and the checker.


# %% [markdown]
# ## Check yourself
#
# Each question is answered by this notebook's own cells: run them again, read their traces and the
# scripts they print. Nothing grades these; the section a question comes from holds its answer.
#
# 1. Which scripts does a job go through on the happy path, on the failure path, and when its worker
#    vanishes?
# 2. What does `record=True` add, in which step, and what can still lose that entry?
# 3. What are the three ideas of the pattern, and which mechanism carries each one in this queue?

# %% [markdown]
# ## Further reading
#
# - [`LMOVE` and its reliable-queue pattern][r1]: the pattern this workshop builds on, in its list form.
# - [Tyler Treat, *You cannot have exactly-once delivery* (2015)][r2]: why at-least-once runs and
#   idempotent effects are the honest pair.
# - [The ledger of guarantees](docs/guarantees.md): every promise this course makes, with its scope
#   and its proof.
#
# [r1]: https://valkey.io/commands/lmove/
# [r2]: https://bravenewgeek.com/you-cannot-have-exactly-once-delivery/

# %% [markdown]
# ## When you are done
#
# The nodes the kit started for this notebook stop with its kernel (a classroom's shared node stays
# up), so there is nothing to stop by hand: when you leave, shut the kernel down (**Kernel → Shut
# Down Kernel**). Until then the widgets above keep working, even after **Run All** — each click is
# still a real call.
