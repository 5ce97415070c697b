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
# 4. Know what "oldest first" promises, and what it does not.
#
# (The words used here — mint, lease, token, sweep — and the table of Elixir answers and Python values
# are in `00-start-here.ipynb`.)

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
# | `emq:{q}:pending` | sorted set | claimable ids, every score 0: the lowest id is claimed first |
# | `emq:{q}:active` | sorted set | claimed ids; the score **is** the lease deadline (server ms) |
# | `emq:{q}:schedule` | sorted set | ids parked until the score (run-at ms): the retry's visibility fence |
# | `emq:{q}:dead` | sorted set | ids that ended without completing (states below); the score is the time of death |
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
# ### Why sorted sets, when every pending score is 0?
#
# A list would pop its head just as well. But the queue needs more than a pop from one end:
#
# - **A member is there at most once.** Adding an id a set already holds changes its score and adds
#   no second entry, so a job cannot sit in pending twice, whatever a retry or a sweep does twice.
# - **Any member comes out by name**, cheaply (`ZREM`, logarithmic): a completion takes one id out of
#   active, a reprocess one out of dead. A list finds a member by walking it (`LREM`).
# - **One structure for all four sets.** In active, schedule and dead the score is a time, and the
#   sweeps read the due part by score (`ZRANGEBYSCORE`). Pending uses the same type with every score 0;
#   at equal scores the set orders members by their bytes — so the id itself is the order.
#
# On a scratch key, the first point:

# %%
scratch = node.client()
as_list, as_set = keyspace.queue_key("scratch", "as-list"), keyspace.queue_key("scratch", "as-set")
scratch.delete(as_list, as_set)
for _ in range(2):  # the same id added twice, as a careless sweep might
    scratch.rpush(as_list, "JOB0KHTOWnGLuC")
    scratch.zadd(as_set, {"JOB0KHTOWnGLuC": 0})
print("a list holds it", scratch.llen(as_list), "times; a sorted set", scratch.zcard(as_set), "time")
assert (scratch.llen(as_list), scratch.zcard(as_set)) == (2, 1)
scratch.delete(as_list, as_set)
scratch.close()

# %% [markdown]
# ## The states
#
# A row's `state` field says where the job is, after every transition that ran to its end (notebook
# 04 shows what a script that stops half-way leaves behind). Each state has
# one set — except `awaiting_children`, a flow's parent held out of every set until its children are
# done (notebook 05).
#
# Every way into each state, and the notebook that teaches it:
#
# | state | set | put there by | taught in |
# | --- | --- | --- | --- |
# | `pending` | pending | enqueue | 01 |
# | `pending` | pending | a flow's land, for each child | 05 |
# | `pending` | pending | the fan-in release of a parent: its last child completes | 05 |
# | `pending` | pending | the fan-in release of a parent: a child dies under `ignore` or `remove` | 05 |
# | `pending` | pending | promote, from schedule once the run-at has come | 03 |
# | `pending` | pending | reap, from active once the lease has lapsed | 03 |
# | `pending` | pending | the stall sweep below its cap, from active | 03, 04 |
# | `pending` | pending | reprocess, from dead | 03 |
# | `active` | active | claim (`@claim2`, or `EMQ.CLAIM`) | 02, 04 |
# | `scheduled` | schedule | retry below the cap (`@retry`, or `EMQ.FAIL`) | 03 |
# | `dead` | dead | retry at the cap | 03 |
# | `dead` | dead | the stall sweep over its cap | 03 |
# | `dead` | dead | a child dies under `fail`: its parent | 05 |
# | `awaiting_children` | none | a flow's land, for the parent | 05 |
#
# A completed job has no state at all: **its row is deleted**, and the metric
# `emq:{q}:metrics:completed` counts it. `remove` and `trim_dead` delete a row too, without counting.
#
# The cell below takes one job down each of these ways, each on a queue of its own, and prints where
# it landed; the cell after it checks that against the table. Each move is taught in the notebook
# named in the table (the calls themselves are in `echomq_teach/ways_in.py`).

# %%
from echomq_teach import ways_in

tour = node.connector()  # its own trace: the walk's trace below stays clean
landed = ways_in.walk(tour)  # one job down each way in: the calls are in echomq_teach/ways_in.py
print(ways_in.table(landed))

# %%
expected = {
    "enqueue": "pending", "claim": "active", "retry below the cap": "scheduled", "promote": "pending",
    "retry at the cap": "dead", "reprocess": "pending", "reap": "pending",
    "stall sweep, below its cap": "pending", "stall sweep, over its cap": "dead",
    "flow land: the parent": "awaiting_children", "flow land: a child": "pending",
    "fan-in release: the last child completes": "pending", "a child dies under ignore: the parent": "pending",
    "a child dies under remove: the parent": "pending", "a child dies under fail: the parent": "dead",
}
assert {way: state for way, (state, _) in landed.items()} == expected
# the row's state always names its set, except a held parent, which is in none
set_of = {"pending": "pending", "active": "active", "scheduled": "schedule", "dead": "dead", "awaiting_children": None}
assert all(where == ([set_of[state]] if set_of[state] else []) for state, where in landed.values())
tour.close()

# %% [markdown]
# ### 01.1 · Which transition put it there? (diagnose)
#
# Each exercise's check builds a fresh queue on your node, judges your function there, and says what
# is not yet true; after a try that did not pass, `exercises.hint("01.1")` (with the exercise's number) gives a
# hint. The reference solutions are in `solutions/`, one file per exercise — try first.
#
# The check walks six jobs down different ways into their sets and hands you their ids, not what it
# did (each check deals the ways to the ids afresh: their order tells nothing). Read the queue
# (`snapshots.snapshot(conn, queue)`: the sets, and each row's fields) and return a dict from each id to
# the transition that put the job where it is, one of `"enqueue"`, `"claim"`, `"retry"`,
# `"retry at the cap"`, `"reap"`, `"promote"`. Three of them end in pending: the set alone cannot tell
# them apart, the row's fields can (the table of the keyspace above names them). Read, and move
# nothing: the check wants the queue as it left it, and refuses a function that writes while it
# runs, even to a copy, even when it puts everything back (on a node of your own; on a classroom's
# shared node it compares only what is left behind).
# *Solution: `solutions/01_1_which_transition.py`.*

# %%
from echomq_teach.course import exercises  # noqa: E402


def which_transition(conn, queue, job_ids):
    # your code here
    raise NotImplementedError


print(exercises.check("01.1", which_transition, conn))

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
conn.clear_trace()  # the walk's trace starts here: the exercise above sent calls of its own
job_id = jobs.enqueue(conn, Q, '{"to": "ada", "body": "hello"}')
s = snapshots.snapshot(conn, Q)
print(s.render())
assert s.where(job_id) == ["pending"] and s.sets["pending"][job_id] == 0
assert s.rows[job_id]["state"] == "pending" and s.rows[job_id]["attempts"] == "0"

# %% [markdown]
# The id sits in pending at score 0. Ids are minted as `JOB` plus eleven base62 characters — the
# millisecond clock, then a counter — so with every score equal, the set's order by member is the
# order of minting **within one minting process**: the head is that process's oldest mint. Five
# quick mints, most of them inside one millisecond, on a queue of their own (and a connector of their
# own, so the walk's trace below stays clean):

# %%
from echomq_teach import ids

side = node.connector()  # ledger: minted-ids-are-fresh
jobs.drop(side, "mint-order")  # a re-run of this cell starts from an empty queue, as the first run did
batch = [ids.mint() for _ in range(5)]
for n, minted_id in enumerate(batch):
    jobs.enqueue(side, "mint-order", f"job {n}", job_id=minted_id)
in_pending = side.call("ZRANGE", keyspace.queue_key("mint-order", "pending"), 0, -1)
print("JOB + 11 base62 characters each:", all(ids.is_job_id(i) for i in batch + [job_id]))
print("pending hands them out in mint order:", in_pending == batch)
assert all(ids.is_job_id(i) and len(i) == len("JOB") + 11 for i in batch + [job_id])
assert batch == sorted(batch) and in_pending == batch

# %% [markdown]
# "Oldest mint" is not "oldest enqueued", and not "waiting longest". Three things break the order:
#
# - **a second producer**: another process (or machine) mints from its own clock; if that clock is
#   behind, its ids sort before yours though it enqueued later;
# - **a custom id**: `jobs.enqueue(conn, q, payload, job_id="A-rush")` is compared byte by byte like
#   any other, and `"A"` sorts before `"JOB…"`;
# - **a job sent back** by reap, promote, a stall sweep or reprocess returns at score 0 with its
#   *old* id, so it goes ahead of every job minted after it.
#
# One of them, on the same queue: a custom id enqueued after the five mints is claimed first.

# %%
rush = jobs.enqueue(side, "mint-order", "enqueued last", job_id="A-rush")
first_out = jobs.claim(side, "mint-order", 30_000)
print("enqueued last, claimed first:", first_out.id)
assert first_out.id == rush and side.call("ZRANGE", keyspace.queue_key("mint-order", "pending"), 0, 0) == [batch[0]]
jobs.drop(side, "mint-order")
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
# attempts it was given** — its fencing token. The script compares the token with the attempts in
# the row it completes (and wants that row active), removes the active entry, deletes the row and
# counts the completion.

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
# ### 01.2 · Put c last (repair)
#
# A producer meant three jobs, `"a"`, `"b"` and `"c"`, to be claimed in that order. It enqueued them
# in that order, but gave `c` a caller's id, `"A-c-urgent"`. The check builds that queue. **Repair**
# it with the kit's calls, so that the next three claims hand out `a`, `b`, `c`, each payload once.
# No handler has run any of them yet, and the queue's counters should still say so. Return nothing.
# *Solution: `solutions/01_2_put_c_last.py`.*

# %%
def put_c_last(conn, queue):
    # your code here
    raise NotImplementedError


print(exercises.check("01.2", put_c_last, conn))

# %% [markdown]
# ### 01.3 · Predict the claim order (predict)
#
# The check will fill a queue in this order: a job that is claimed and whose worker crashes (its lease
# lapses); two jobs minted by this process; a job with the caller's id `"A-rush"`, one with the id
# `"zz-late"`; and, last, a job from another producer whose clock is 5 seconds behind. Then a reap
# returns the crashed job to pending. The six jobs, by what they are: `"this process, first"`,
# `"this process, second"`, `"custom id A-rush"`, `"custom id zz-late"`,
# `"another producer, clock 5 s behind, enqueued last"` and `"reaped back to pending, minted before all"`.
#
# **Predict, do not claim**: list those six labels in the order the next six claims will hand the jobs
# out. Only once your answer is kept does the check build that queue, claim it and compare.
# *Solution: `solutions/01_3_predict_the_order.py`.*
#
# A prediction is your answer itself, written as data: replace the `...`. Your **first** answer of the
# right form is kept and graded (it survives a kernel restart): think it through before you run the cell.

# %%
predict_the_order = ...  # your prediction: a list of the six labels above, the first claimed first

print(exercises.check("01.3", predict_the_order, conn))

# %% [markdown]
# ### 01.4 · Whose token? (predict)
#
# The check will enqueue three jobs, `x`, `y` and `z`, in that order, and claim three times: each claim
# takes one of them, oldest first. Then it completes `z`, handing it the token `x`'s claim answered, and
# then `x`, with its own claim's token. **Predict** the three tokens the claims answer, in order; what
# each of the two completions answers, `"ok"` or `"stale"` (`jobs.OK`, `jobs.STALE`); and the queue's
# completed count at the end. *Solution: `solutions/01_4_whose_token.py`.*
#
# A prediction is your answer itself, written as data: replace each `...`. Your **first** answer of the
# right form is kept and graded (it survives a kernel restart): think it through before you run the cell.

# %%
whose_token = {  # your prediction
    "the tokens the three claims answer, in order": [..., ..., ...],
    "z, completed with the token x's claim answered": ...,
    "x, then completed with its own claim's token": ...,
    "completed count at the end": ...,
}
print(exercises.check("01.4", whose_token, conn))

# %% [markdown]
# ## Step it yourself
#
# The **lifecycle stepper** runs the same walk one real call per click. Each step shows a caption
# in the course's style, the command that was sent, the reply, and the four sets with what changed
# highlighted. *Back* replays from a reset, on a fresh queue.
#
# Its buttons are ordinary calls too. Below, the code presses *Step* three times and checks that the
# job walked pending → active → gone exactly as above; then it presses *Back* once (a fresh queue,
# replayed up to the claim) and *Step* again. So the stepper shows its last step: press **Reset** and
# walk it yourself.

# %%
from echomq_widgets import LifecycleStepper

stepper = LifecycleStepper(conn, "walk", path="happy")
seen, places = [], []
for _ in range(3):
    stepper.step_button.click()
    seen.append(stepper.outcome.headline)
    places.append(stepper.set_view.snapshot.where(stepper.job_id))
assert [h.split(" — ")[0] for h in seen] == ["enqueue", "claim", "complete"]
assert places == [["pending"], ["active"], []]
assert stepper.set_view.snapshot.total() == 0 and stepper.set_view.snapshot.completed == 1
first_queue = stepper.queue
stepper.back_button.click()  # Back: a fresh queue, replayed up to the claim
assert stepper.index == 2 and stepper.queue != first_queue
assert stepper.set_view.snapshot.where(stepper.job_id) == ["active"]
stepper.step_button.click()
assert stepper.index == 3 and stepper.step_button.description == "done ✓"
stepper

# %% [markdown]
# ## Recap
#
# - Four sorted sets and a row: pending (score 0), active (score = lease deadline), schedule
#   (score = run-at), dead (score = time of death).
# - The row's `state` names the set; a completed row is deleted and counted.
# - The happy path is three atomic scripts: `@enqueue`, `@claim2`, `@complete`.
# - Every way into each set is one of those scripts or a sweep, a flow's land, its fan-in or a
#   child's death.
# - Pending hands out the smallest id: the oldest mint of one process, not the job that waited longest.
#
# Next: **02-claim-and-lease** — the claim, line by line.


# %% [markdown]
# ## Check yourself
#
# Each question is answered by this notebook's own cells: run them again, read their traces and the
# scripts they print. Nothing grades these; the section a question comes from holds its answer.
#
# 1. What is the score of a member of each of the four sets, and what does the row's `state` say
#    about them?
# 2. Where does a completed job's row go, and what on the node still counts it?
# 3. Name every way into `pending`: which scripts and sweeps put a job there?
# 4. Pending hands out the smallest id. When is that not the job that has waited longest?

# %% [markdown]
# ## Further reading
#
# - [`ZADD`][r1]: how a member and its score enter a sorted set; the four sets are all sorted sets.
# - [`ZPOPMIN`][r2]: the pop that hands out the lowest member of pending.
# - [`HSET`][r3]: and [`HGETALL`](https://valkey.io/commands/hgetall/), the job's row.
# - [`EXISTS`][r4]: and [`DEL`](https://valkey.io/commands/del/), the pause flag and a row's end.
# - [The ULID specification][r5]: ids whose text order is their time order, the idea behind the kit's
#   minted ids.
#
# [r1]: https://valkey.io/commands/zadd/
# [r2]: https://valkey.io/commands/zpopmin/
# [r3]: https://valkey.io/commands/hset/
# [r4]: https://valkey.io/commands/exists/
# [r5]: https://github.com/ulid/spec

# %% [markdown]
# ## When you are done
#
# The nodes the kit started for this notebook stop with its kernel (a classroom's shared node stays
# up), so there is nothing to stop by hand: when you leave, shut the kernel down (**Kernel → Shut
# Down Kernel**). Until then the widgets above keep working, even after **Run All** — each click is
# still a real call.
