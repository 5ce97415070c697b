# %% [markdown]
# # The Queue · 01 — the lifecycle
#
# A job's whole life is a walk across four sorted sets, with one hash — its **row** — riding along.
#
# **Goals**
#
# 1. Name the four sets, what each score means, and the fields of the row.
# 2. See every state a row can be in, and which transition puts it there.
# 3. Walk the happy path (enqueue → claim → complete) with real calls, and step it in a widget.
# 4. Read the table that maps the course's Elixir answers to the kit's Python values.

# %%
from echomq_teach import jobs, keyspace, scripts, snapshots, start_node

node = start_node()
conn = node.connector()
Q = "lifecycle"
# a classroom node keeps what an earlier run left: start this notebook's queues empty
jobs.drop(conn, Q)
conn.clear_trace()  # the trace starts with the notebook's own calls

# %% [markdown]
# ## The keyspace
#
# Every key of a queue `q` carries the hashtag `{q}`, so the whole queue lives in one cluster slot
# and one script may touch all of it atomically. The base is `emq:{q}:`.
#
# | key | type | holds |
# | --- | --- | --- |
# | `emq:{q}:pending` | sorted set | claimable ids, every score 0: the lowest id is the oldest mint |
# | `emq:{q}:active` | sorted set | claimed ids; the score **is** the lease deadline (server ms) |
# | `emq:{q}:schedule` | sorted set | ids parked until the score (run-at ms): the retry's visibility fence |
# | `emq:{q}:dead` | sorted set | ids that spent their attempts; the score is the time of death |
# | `emq:{q}:job:<id>` | hash | the row: `state`, `attempts`, `payload`, `last_error`, … |

# %%
for name in keyspace.SETS:
    print(f"{name:<9}", keyspace.queue_key(Q, name))
print(f"{'row':<9}", keyspace.job_key(Q, "JOB0KHTOWnGLuC"))
assert keyspace.base(Q).startswith("emq:{") and keyspace.base(Q).endswith("lifecycle}:")

from redis.crc import key_slot

# one hashtag, so one cluster slot: the slot is computed from the {q} part alone
every_key = [keyspace.queue_key(Q, name) for name in keyspace.SETS] + [keyspace.job_key(Q, "JOB0KHTOWnGLuC")]
assert len({key_slot(k.encode()) for k in every_key}) == 1

# %% [markdown]
# ## The states
#
# A row's `state` field always says where the job is. Each state has one set — except
# `awaiting_children`, a flow's parent held out of every set until its children are done (notebook 05).
#
# | state | set | put there by |
# | --- | --- | --- |
# | `pending` | pending | enqueue, promote, reap, reprocess |
# | `active` | active | claim |
# | `scheduled` | schedule | retry below the cap |
# | `dead` | dead | retry at the cap, the stall sweep |
# | `awaiting_children` | none | a flow's land |
#
# A completed job has no state at all: **its row is deleted**, and the metric
# `emq:{q}:metrics:completed` counts it.

# %% [markdown]
# ## The happy path, by hand
#
# ### enqueue — `enqueue/5` → `@enqueue`
#
# `jobs.enqueue(conn, queue, payload)` mints an id host-side, then one script writes the row and the
# pending entry. Here is the script as the kit sends it:

# %%
print(scripts.show("enqueue"))

# %%
job_id = jobs.enqueue(conn, Q, '{"to": "ada", "body": "hello"}')
s = snapshots.snapshot(conn, Q)
print(s.render())
assert s.where(job_id) == ["pending"] and s.sets["pending"][job_id] == 0
assert s.rows[job_id]["state"] == "pending" and s.rows[job_id]["attempts"] == "0"

# %% [markdown]
# The id sits in pending at score 0. Ids are minted as `JOB` plus eleven base62 characters — the
# millisecond clock, then a counter — so with every score equal, the set's order by member is the
# order of minting: the oldest job is always the head. Five quick mints, most of them inside one
# millisecond, on a queue of their own (and a connector of their own, so the walk's trace below
# stays clean):

# %%
from echomq_teach import ids

side = node.connector()
batch = [ids.mint() for _ in range(5)]
for n, minted_id in enumerate(batch):
    jobs.enqueue(side, "mint-order", f"job {n}", job_id=minted_id)
in_pending = side.call("ZRANGE", keyspace.queue_key("mint-order", "pending"), 0, -1)
print("JOB + 11 base62 characters each:", all(ids.is_job_id(i) for i in batch + [job_id]))
print("pending hands them out in mint order:", in_pending == batch)
assert all(ids.is_job_id(i) and len(i) == len("JOB") + 11 for i in batch + [job_id])
assert batch == sorted(batch) and in_pending == batch
for minted_id in batch:
    jobs.remove(side, "mint-order", minted_id)
side.close()

# %% [markdown]
# ### claim — `claim/3` → `@claim2`
#
# `jobs.claim(conn, queue, lease_ms)` pops the head of pending, adds 1 to `attempts`, marks the row
# `active` and puts the id in active with a score that is the **lease deadline**: server now plus
# `lease_ms`. Notebook 02 reads the script line by line; here we watch what it does.

# %%
before = snapshots.snapshot(conn, Q)
claimed = jobs.claim(conn, Q, 30_000)
after = snapshots.snapshot(conn, Q)
print(claimed)
for change in snapshots.diff(before, after):
    print(" ·", change)
assert after.where(job_id) == ["active"]
assert after.rows[job_id]["state"] == "active" and claimed.attempts == 1
assert 29_000 < after.relative("active", job_id) <= 30_000

# %% [markdown]
# ### complete — `complete/5` → `@complete`
#
# The worker calls `jobs.complete(conn, queue, job_id, token, result)`, handing back the id **and the
# attempts it was given** — its fencing token. The script checks the token, removes the active
# entry, deletes the row and counts the completion.

# %%
before = snapshots.snapshot(conn, Q)
outcome = jobs.complete(conn, Q, claimed.id, claimed.attempts, "sent")
after = snapshots.snapshot(conn, Q)
print(outcome)
for change in snapshots.diff(before, after):
    print(" ·", change)
assert outcome == jobs.OK and not after.where(job_id) and job_id not in after.rows
assert after.completed == before.completed + 1

# %% [markdown]
# Three moves, three scripts, and the queue is empty again. Here is the trace of the whole walk,
# leaving out the `@snapshot` reads (that was the notebook looking, not the job moving). Two plain
# reads sit between the scripts: `EXISTS …:paused` is claim/3's own pause check, and `HGET … parent`
# is complete/5 looking whether the job is a flow child (notebook 05) before it picks its keys.

# %%
walk = [entry for entry in conn.last(20) if entry.script != "@snapshot"]
for entry in walk:
    print(entry.line)
assert [e.script or e.args[0] for e in walk] == ["@enqueue", "EXISTS", "@claim2", "HGET", "@complete"]

# %% [markdown]
# ## Step it yourself
#
# The **lifecycle stepper** runs the same walk one real call per click. Each step shows a caption
# in the course's style, the command that was sent, the reply, and the four sets with what changed
# highlighted. *Back* replays from a reset, on a fresh queue.

# %%
from echomq_widgets import LifecycleStepper

stepper = LifecycleStepper(conn, "walk", path="happy")
stepper

# %% [markdown]
# The stepper's buttons are ordinary calls too. Here the code presses *Step* three times and checks
# that the job walked pending → active → gone exactly as above; then it presses *Back* once (a fresh
# queue, replayed up to the claim) and resets the stepper for you.

# %%
seen, places = [], []
for _ in range(3):
    stepper.step_button.click()
    seen.append(stepper.outcome.headline)
    places.append(stepper.set_view.snapshot.where(stepper.job_id))
print("\n".join(seen))
assert [h.split(" — ")[0] for h in seen] == ["enqueue", "claim", "complete"]
assert places == [["pending"], ["active"], []]
assert stepper.set_view.snapshot.total() == 0 and stepper.set_view.snapshot.completed == 1
first_queue = stepper.queue
stepper.back_button.click()  # Back: a fresh queue, replayed up to the claim
assert stepper.index == 2 and stepper.queue != first_queue
assert stepper.set_view.snapshot.where(stepper.job_id) == ["active"]
stepper.reset_button.click()
assert stepper.index == 0

# %% [markdown]
# ## Elixir answers, Python values
#
# The course's Elixir functions answer tuples and atoms. The kit's Python functions answer plain
# values instead — one table for the whole course:
#
# | Elixir | Python |
# | --- | --- |
# | `{:ok, id}` from `enqueue/5` | the id, a `str` |
# | `:empty` from `claim/3` | `None` |
# | `{:ok, {id, payload, att}}` from `claim/3` | `Claimed(id, payload, attempts)` |
# | `:ok` from `complete/5` | `"ok"` (`jobs.OK`) |
# | `{:error, :stale}` | `"stale"` (`jobs.STALE`) |
# | `{:ok, :scheduled}` / `{:ok, :dead}` from `retry/7` | `"scheduled"` / `"dead"` |
# | `{:ok, ids}` from `promote/3`, `reap/2` | a `list` of ids |
# | a refused argument | `BadInput` raised **before** anything is sent |

# %%
assert jobs.claim(conn, Q, 30_000) is None  # :empty — nothing is pending
assert jobs.complete(conn, Q, job_id, 1) == jobs.STALE  # that row is gone: {:error, :stale}
last_sent = conn.trace[-1]
try:
    jobs.claim(conn, Q, 0)
    refused = None
except jobs.BadInput as exc:
    refused = exc
    print("BadInput:", exc)
assert refused is not None and conn.trace[-1] is last_sent  # refused before anything was sent

# %% [markdown]
# ## Exercises
#
# ### 01.1 · Fill the queue
#
# Enqueue three jobs with the payloads `"a"`, `"b"` and `"c"`, in that order. The check reads your
# node: three ids in pending, rows in state pending, payloads in id order.

# %%
from echomq_teach import exercises


def fill_the_queue(conn, queue):
    # your code here: three calls to jobs.enqueue
    raise NotImplementedError


print(exercises.check("01.1", fill_the_queue, conn))

# %% [markdown]
# ### 01.2 · Walk the happy path
#
# The check puts one job in pending and hands you its id. Take it through claim and complete.

# %%
def happy_path(conn, queue, job_id):
    # your code here: claim it, then complete it with the token the claim gave you
    raise NotImplementedError


print(exercises.check("01.2", happy_path, conn))

# %% [markdown]
# ## Recap
#
# - Four sorted sets and a row: pending (score 0), active (score = lease deadline), schedule
#   (score = run-at), dead (score = time of death).
# - The row's `state` names the set; a completed row is deleted and counted.
# - The happy path is three atomic scripts: `@enqueue`, `@claim2`, `@complete`.
#
# Next: **02-claim-and-lease** — the claim, line by line.


# %% [markdown]
# ## When you are done
#
# The nodes the kit started for this notebook stop with its kernel (a classroom's shared node stays
# up), so there is nothing to stop by hand: when you leave, shut the kernel down (**Kernel → Shut
# Down Kernel**). Until then the widgets above keep working, even after **Run All** — each click is
# still a real call.
