# %% [markdown]
# # The Queue · 05 — flows: a parent and its children
#
# In a **flow**, one parent job depends on a plain list of child jobs. The children run like any other
# job; the parent waits, held out of pending, until every child is done — then it is released, and
# its handler reads what the children produced. The whole trick is one counter.
#
# **Goals**
#
# 1. Land a flow in one atomic `@enqueue_flow`, and see where each part goes.
# 2. Read the fan-in branch inside `@complete`, and watch the counter tick to zero.
# 3. See the two layers that keep a completion from counting twice: the token fence, and the
#    once-only branch.
# 4. Choose what a dying child does to its parent: the four policies.
# 5. Read the children's results from the parent's handler.
# 6. Grow your queue's completion to flow children whose parent needs only a quorum of them, and have
#    the checker judge it under faults (05.2).

# %%
import time

from echomq_teach import flows, jobs, keyspace, scripts, snapshots, start_node

node = start_node()
conn = node.connector()
Q = "flows"
# a classroom node keeps what an earlier run left: start this notebook's queues empty
for q in (Q, "once", "guard", "policy-fail", "policy-ignore", "policy-remove", "policy-wait"):
    jobs.drop(conn, q)
conn.clear_trace()  # the trace starts with the notebook's own calls

# %% [markdown]
# ## The land — `EchoMQ.Flows.add/3` → `flows.add(conn, queue, parent, children)`
#
# A single script writes the whole flow. Each child gets a row and a place in pending, so a worker
# can take it straight away. The parent gets a row too, in state `awaiting_children`, but no place
# in any of the four sets. And the parent's counter, `emq:{q}:job:<parent>:dependencies`, starts at
# the number of children N (a plain **SET**). The parent and every child also carry the flow's number,
# `flow`, which the land draws from the queue's counter `emq:{q}:flows`: a child counts only toward
# the flow it was landed with ("A parent id used again", below, shows why).

# %%
print(scripts.show("enqueue_flow"))

# %%
flow = flows.add(conn, Q, "send the digest", ["render page 1", "render page 2", "render page 3"])
s = snapshots.snapshot(conn, Q)
print(s.render())
parent = flow.parent_id
assert s.state(parent) == "awaiting_children" and s.where(parent) == []
assert all(s.where(c) == ["pending"] for c in flow.child_ids)
assert flows.dependencies(conn, Q, parent) == 3

# %% [markdown]
# A flow lands on **one queue**: `flows.add` takes one queue, and every key the land wrote — the
# children's rows and pending entries, the parent's row and its counter — carries that queue's
# hashtag, so one atomic script can write them all and one cluster slot holds them:

# %%
from redis.crc import key_slot

land_entry = next(e for e in conn.last(12) if e.script == "@enqueue_flow")
land_keys = land_entry.args[3 : 3 + int(land_entry.args[2])]  # EVALSHA sha numkeys key…
print(len(land_keys), "keys declared by the land, in", len({key_slot(k.encode()) for k in land_keys}), "slot")
assert all(k.startswith(keyspace.base(Q)) for k in land_keys) and len({key_slot(k.encode()) for k in land_keys}) == 1

# %% [markdown]
# The land also wrote each child's `parent` field, so a child completed the moment it lands still
# finds its parent. The course page has the host write each child's `parent_policy` a moment later,
# once the script has returned. The kit lands it in the same script instead, as the last ARGV (one
# policy per child): a child claimed and failed in that moment would otherwise be judged by the
# default policy. Nothing reads the field unless that child dies. The trace holds the one land, and
# no write after it:

# %%
sent = [e for e in conn.last(12) if e.script != "@snapshot"]
landed_at = next(i for i, e in enumerate(sent) if e.script == "@enqueue_flow")
land = sent[landed_at]
print(land.line[:72], "…", *land.args[-3:])
print("after the land:", [e.line.split(" ")[0] for e in sent[landed_at + 1 :]])
assert all(s.rows[c]["parent"] == parent and s.rows[c]["parent_policy"] == "fail" for c in flow.child_ids)
assert land.args[-3:] == ["fail"] * 3 and not any(e.args[0] == "HSET" for e in sent[landed_at + 1 :])

# %% [markdown]
# ### 05.1 · Which lands are refused (predict)
#
# A queue holds a job that was claimed and completed, a job that died at its cap (in dead), and a
# flow of two children whose parent waits for them. Three lands follow, each of a new parent and
# its children: **predict** what each answers — `"BadInput"`, `"DuplicateJob"` or `"landed"` — and
# how many jobs (rows) the queue holds after all three:
#
# 1. `"a dead job's id, with a policy list one short"`: three children, the first given as
#    `(id, payload)` with the dead job's id, and a policy list of two;
# 2. `"a child's id is a completed job's"`: two children, the first with the completed job's id;
# 3. `"a child's id is a waiting parent's"`: two children, the first with the waiting parent's id;
#
# and 4. `"jobs in the queue after the three"`: a number. Only once your answer is kept does the check
# build that queue and try the three lands. *Solution: `solutions/05_1_refused_lands.py`.*
#
# A prediction is your answer itself, written as data: replace each `...`. Your **first** answer of the
# right form is kept and graded (it survives a kernel restart): think it through before you run the cell.
# Each check of this notebook says what is not yet true; `exercises.hint("05.1")` (and so on) gives a
# hint once a try did not pass (a prediction's, once it is kept), and `exercises.catalog()` lists every
# exercise with its kind.

# %%
from echomq_teach.course import exercises  # noqa: E402

refused_lands = {  # your prediction
    "a dead job's id, with a policy list one short": ...,
    "a child's id is a completed job's": ...,
    "a child's id is a waiting parent's": ...,
    "jobs in the queue after the three": ...,
}
print(exercises.check("05.1", refused_lands, conn))

# %% [markdown]
# ## The fan-in, inside `@complete`
#
# Before it sends anything, `complete/5` looks at the job's row (`HGET … parent`, host-side). A flow
# child names its parent there, so the call adds the parent's three keys to the script's KEYS: the
# **five-key form** of `@complete` (a plain job's completion declares two). This branch is the course
# page's own excerpt; the token fence at the top of the script is the kit's
# (D-3 in [`docs/decisions.md`](docs/decisions.md)). Inside the script, this branch runs:

# %%
source = scripts.load("complete").source.splitlines()
start = next(i for i, ln in enumerate(source) if "once-only" in ln)
print("\n".join(source[start:]))

# %% [markdown]
# `was_active` is the reply of the `ZREM` from active: the branch runs only for the completion that
# actually took the child out of active. Complete the children one by one and watch the counter:

# %%
ticks = [flows.dependencies(conn, Q, parent)]
for child in flow.child_ids:
    c = jobs.claim(conn, Q, 30_000)
    assert c.id == child  # children come out oldest first
    jobs.complete(conn, Q, c.id, c.attempts, f"{c.payload}: done")
    sent = conn.last()[0]
    assert sent.script == "@complete" and int(sent.args[2]) == 5  # five keys: the child's two, the parent's three
    ticks.append(flows.dependencies(conn, Q, parent))
    print(f":dependencies = {ticks[-1]}  parent {snapshots.snapshot(conn, Q).state(parent)}")
print("the last child's completion:", sent.line[:110], "…")
assert ticks == [3, 2, 1, 0]
assert snapshots.snapshot(conn, Q).where(parent) == ["pending"]

# %% [markdown]
# At zero the parent went to pending. When a worker claims it, its handler can look at what the
# children left behind through three read-only calls; they write nothing:
#
# | Elixir | Python | reads |
# | --- | --- | --- |
# | `children_values/3` | `flows.children_values(conn, queue, parent)` | `HGETALL …:processed` |
# | `dependencies/3` | `flows.dependencies(conn, queue, parent)` | `GET …:dependencies` (0 when absent) |
# | `ignored_failures/3` | `flows.ignored_failures(conn, queue, parent)` | `HGETALL …:unsuccessful` |

# %%
p = jobs.claim(conn, Q, 30_000)
before = snapshots.snapshot(conn, Q)
values = flows.children_values(conn, Q, p.id)
assert flows.dependencies(conn, Q, p.id) == 0 and flows.ignored_failures(conn, Q, p.id) == {}
assert snapshots.snapshot(conn, Q).state_only() == before.state_only()  # three reads, nothing written
summary = f"{p.payload}: {len(values)} pages → " + "; ".join(values[c] for c in flow.child_ids)
print(summary)
assert p.id == parent and len(values) == 3
assert jobs.complete(conn, Q, p.id, p.attempts, summary) == jobs.OK

# %% [markdown]
# `dependencies/3` answers 0 when the counter is absent, not an error: for an id that never was a
# parent, and for a parent whose counter has gone (after its completion the three keys expire in an
# hour, `flows.FLOW_KEYS_TTL_S`):

# %%
deps_key = keyspace.job_key(Q, parent) + ":dependencies"
print("after the parent completed, its counter expires within the hour:", 0 < conn.call("TTL", deps_key) <= 3600)
assert 0 < conn.call("TTL", deps_key) <= flows.FLOW_KEYS_TTL_S
conn.call("DEL", deps_key)  # as the expiry will
assert conn.call("GET", deps_key) is None
print("absent counter →", flows.dependencies(conn, Q, parent), "· never a parent →",
      flows.dependencies(conn, Q, "JOBneverparent"))
assert flows.dependencies(conn, Q, parent) == 0 and flows.dependencies(conn, Q, "JOBneverparent") == 0

# %% [markdown]
# ## Never twice: two layers
#
# A completion that must not count reaches one of two guards.
#
# **The token fence**, at the top of `@complete`: the row's `attempts` must equal the token and its
# state must be `active`, or the script answers 0 (stale) and writes nothing — no `DECR`, no
# `:processed`. A worker whose lease lapsed and was reaped (state `pending`, then a new claim and a new
# token) is stopped here; so is the same completion delivered twice (the first one deleted the row).

# %%
Q2 = "once"
jobs.drop(conn, Q2)  # a re-run of this cell starts from an empty queue, as the first run did
f2 = flows.add(conn, Q2, "parent", ["a", "b"])
a = jobs.claim(conn, Q2, 50)
time.sleep(0.08)
jobs.reap(conn, Q2)  # a's lease lapsed: back to pending
a2 = jobs.claim(conn, Q2, 30_000)
answers = [
    jobs.complete(conn, Q2, a.id, a.attempts, "late"),
    jobs.complete(conn, Q2, a2.id, a2.attempts, "on time"),
    jobs.complete(conn, Q2, a2.id, a2.attempts, "again"),
]
for label, answer in zip(("stale token:", "fresh token:", "redelivered:"), answers):
    print(label, answer)
assert answers == [jobs.STALE, jobs.OK, jobs.STALE]
print(":dependencies =", flows.dependencies(conn, Q2, f2.parent_id), "·",
      ":processed =", flows.children_values(conn, Q2, f2.parent_id))
assert flows.dependencies(conn, Q2, f2.parent_id) == 1
assert flows.children_values(conn, Q2, f2.parent_id) == {a.id: "on time"}

# %% [markdown]
# Both refusals above came from the fence: the once-only branch never ran. **The once-only branch**
# is the second layer, for a completion that passes the fence although the child is no longer in
# active. The fan-in runs only when this completion's `ZREM` took the child out of active
# (`was_active == 1`). One way to get there is notebook 04's half-done claim: a raw `@claim2` with a
# lease that is not a number pops the child, moves its token and marks the row `active`, then fails
# before it adds the child to active. The row says active with the current token, so the fence passes;
# the set says otherwise, so the branch does not count it:

# %%
Q3 = "guard"
jobs.drop(conn, Q3)  # a re-run of this cell starts from an empty queue, as the first run did
f3 = flows.add(conn, Q3, "parent", ["orphaned by a half-done claim", "fine"])
half = f3.child_ids[0]
keys = [keyspace.queue_key(Q3, "pending"), keyspace.queue_key(Q3, "active"), keyspace.queue_key(Q3, "")]
try:
    conn.call("EVALSHA", scripts.load("claim2").sha, 3, *keys, "soon")  # bypasses claim/3's lease check
except Exception:  # noqa: BLE001 - the script fails after its first writes
    pass
row = snapshots.snapshot(conn, Q3).rows[half]
in_active = snapshots.snapshot(conn, Q3).where(half)
print("the row:", row["state"], "with token", row["attempts"], "· in active:", in_active == ["active"])
assert (row["state"], row["attempts"], in_active) == ("active", "1", [])
passed = jobs.complete(conn, Q3, half, 1, "done")
print("the completion passes the fence:", passed, "· :dependencies still", flows.dependencies(conn, Q3, f3.parent_id),
      "· :processed", flows.children_values(conn, Q3, f3.parent_id))
assert passed == jobs.OK and flows.dependencies(conn, Q3, f3.parent_id) == 2
assert flows.children_values(conn, Q3, f3.parent_id) == {}

# %% [markdown]
# The guard did its job — a child that was not active is not counted — and the price is visible: that
# child's row is gone, the counter will never reach 0, and the parent waits until an operator repairs
# it. The queue does not promise more than that on a faulty path; `07-when-things-fail.ipynb` walks
# through such crash points.

# %% [markdown]
# ### 05.2 · Your queue, stage 5: a parent that needs only a quorum
#
# A search fans out to five mirrors and answers as soon as three of them replied: the parent should run
# once **a quorum** of its children completed, not all of them. Your queue's completion grows:
# **`my_queue/complete.lua`** now also completes a flow child, with `@complete`'s keys and arguments for
# a child: KEYS `[1]` active, `[2]` the child's row, `[3]` the parent's `:dependencies`, `[4]` its
# `:processed`, `[5]` the parent's row; ARGV `[1]` the child's id, `[2]` the caller's token, `[3]` the base
# `emq:{q}:`, `[4]` the parent's id, `[5]` the result, `[6]` the record flag. A plain job (two keys) still
# completes as stage 2 asked. Each parent's row holds its quorum in the field `quorum` (the judge writes it
# when the flow lands; `:dependencies` still starts at the number of children; a parent without one waits
# for all its children, as the kit's does).
#
# - It answers 1 when this call completed the child (its row deleted, out of active), 0 when the
#   caller no longer holds it — and then writes nothing.
# - The completion that makes the quorum releases the parent to pending (its row saying so), once.
# - A completion after that settles its own child and **counts nothing**: the parent is not counted
#   down, not given a result, not released again, and not written at all once it is gone.
#
# The check runs stages 1 to 4's checks again. It records a zombie's completion of a child as a run records
# it and hands the history to the checker (a parent released before its quorum is a counterexample), then
# calls your script on three small flows whose answers are known, holding the queue to notebook 01's table
# after every call, waking a worker whose child a sweep put back in pending, and completing a child whose
# claim stopped half-done (the guard cell above). Then, on two seeds it draws,
# three worker processes beat with **your** beat.py and scripts through two flows of five children, quorum
# three, while a seeded nemesis kills workers and freezes one inside its handler past its lease (a zombie).
# It passes only when every answer is right and, on every seed, the checker says **valid**, the queue keeps
# the table, no parent was claimed before three of its children completed, and each parent's `:processed`
# holds three results. About ten seconds a check.

# %%
from echomq_teach.course import my_queue

mine = my_queue.folder()  # my_queue/ beside the notebooks
print(mine.begin("05.2"))

# %% [markdown]
# Write them in JupyterLab's editor, then run the check. *Reference: `solutions/my_queue/05_2/`
# (`mine.load_reference("05.2")`).*

# %%
exercises.check("05.2", mine)

# %% [markdown]
# ## When a child dies: the four policies
#
# A child that spends its attempts dies like any job. What happens to its parent is the child's
# `parent_policy`:
#
# | policy | when the child dies |
# | --- | --- |
# | `fail` (default) | the parent goes to dead, its `last_error` naming the child |
# | `ignore` | the failure is recorded in `:unsuccessful` and counts as done |
# | `remove` | it counts as done, with no entry in `:unsuccessful` |
# | `wait` | nothing: the parent waits until the child is reprocessed and completes |
#
# Four flows of two children each; in every one, the first child dies and the second completes.

# %%
outcomes, parents, doomed_ids, errors = {}, {}, {}, {}
for policy in flows.POLICIES:
    q = f"policy-{policy}"
    f = flows.add(conn, q, "parent", ["dies", "succeeds"], policy=policy)
    doomed = jobs.claim(conn, q, 30_000)
    assert jobs.retry(conn, q, doomed.id, doomed.attempts, "boom", max_attempts=1) == jobs.DEAD
    doomed_ids[policy] = doomed.id
    ok = jobs.claim(conn, q, 30_000)
    if ok is not None:
        jobs.complete(conn, q, ok.id, ok.attempts, "fine")
    s = snapshots.snapshot(conn, q)
    parents[policy] = f.parent_id
    outcomes[policy] = (s.state(f.parent_id), flows.ignored_failures(conn, q, f.parent_id))
    errors[policy] = s.rows[f.parent_id].get("last_error")
    print(f"{policy:<7} parent {s.state(f.parent_id):<18} unsuccessful {outcomes[policy][1]}",
          f"last_error: {s.rows[f.parent_id].get('last_error', '—')[:40]}")

# %%
assert outcomes["fail"] == ("dead", {}) and errors["fail"] == f"child {doomed_ids['fail']} failed: boom"
assert outcomes["ignore"] == ("pending", {doomed_ids["ignore"]: "boom"})
assert outcomes["remove"] == ("pending", {})
assert outcomes["wait"] == ("awaiting_children", {})
assert [errors[pol] for pol in ("ignore", "remove", "wait")] == [None, None, None]

# %% [markdown]
# Under `wait`, the parent is released once the dead child is reprocessed and completes:

# %%
q = "policy-wait"
dead_child = snapshots.snapshot(conn, q).dead[0]
jobs.reprocess(conn, q, dead_child)
again = jobs.claim(conn, q, 30_000)
jobs.complete(conn, q, again.id, again.attempts, "second time lucky")
released = snapshots.snapshot(conn, q)
print("after the reprocessed child completes, the parent is", released.state(parents["wait"]))
assert released.where(parents["wait"]) == ["pending"]

# %% [markdown]
# A child can also die without ever failing: the counted stall sweep (03) buries a child whose
# workers keep vanishing. The burial is a death like any other, and the child's policy decides for
# the parent the same way. Four more flows; in each, the first child is claimed under a 20 ms lease
# twice, its worker gone each time, and swept with `max_stalled=1`:

# %%
from echomq_teach import stalled

swept = {}
for policy in flows.POLICIES:
    q = f"swept-{policy}"
    jobs.drop(conn, q)
    f = flows.add(conn, q, "parent", ["vanishes", "succeeds"], policy=policy)
    for _ in range(2):
        lost = jobs.claim(conn, q, 20)  # the worker dies holding it
        time.sleep(0.03)
        sweep = stalled.check(conn, q, max_stalled=1)
    ok = jobs.claim(conn, q, 30_000)
    jobs.complete(conn, q, ok.id, ok.attempts, "fine")
    s = snapshots.snapshot(conn, q)
    swept[policy] = (sweep.dead == [lost.id], s.state(f.parent_id), s.rows[f.parent_id].get("last_error"))
    print(f"{policy:<7} child buried: {swept[policy][0]} · parent {swept[policy][1]:<18}",
          f"last_error: {(swept[policy][2] or '—')[:45]}")
assert all(buried for buried, _, _ in swept.values())
assert swept["fail"][1] == "dead" and swept["fail"][2].endswith("failed: stalled")
assert [swept[p][1] for p in ("ignore", "remove", "wait")] == ["pending", "pending", "awaiting_children"]

# %% [markdown]
# ### 05.3 · Why do these parents never release? (diagnose and repair)
#
# "These parents have been waiting for an hour. Most had two children; the first of each finished long
# ago." The check builds those flows, each second child held up in a way of its own (each check deals
# them afresh), beside other jobs of the queue, and hands you the parents' ids. **Diagnose** which
# parents are stuck and which child holds each, **repair** them so that every stuck parent is released
# with both its children's results (you act as the worker: claim the child and complete it), and leave
# alone what is not stuck, whatever else you find in the queue's sets. Return a dict from each stuck
# parent to the child that held it. *Solution: `solutions/05_3_never_releases.py`.*

# %%
def never_releases(conn, queue, parents):
    # your code here
    raise NotImplementedError


print(exercises.check("05.3", never_releases, conn))

# %% [markdown]
# ### 05.4 · Predict the counter (predict)
#
# A flow of four children, `a`, `b`, `c` and `d`, each with its own policy: `a` `fail`, `b` `wait`,
# `c` `remove`, `d` `ignore`. **Predict** `:dependencies` after each of these steps:
#
# 1. `a`'s worker completes it after its 30 ms lease lapsed, no sweep since;
# 2. `b`'s worker dies holding a 20 ms lease; once it lapsed a reap runs; then that worker wakes and
#    completes `b` with its token;
# 3. `b` is claimed again and fails at its cap of 2 attempts;
# 4. `c` is claimed and fails at its cap of 1;
# 5. `d` is claimed and fails at its cap of 1;
# 6. `b` is reprocessed, claimed and completed;
#
# and the parent's state at the end, and how many entries its `:unsuccessful` holds then. Only once your
# answer is kept does the check land that flow and run the six steps.
# *Solution: `solutions/05_4_predict_the_counter.py`.*
#
# A prediction is your answer itself, written as data: replace each `...`. Your **first** answer of the
# right form is kept and graded (it survives a kernel restart): think it through before you run the cell.

# %%
predict_the_counter = {  # your prediction
    "dependencies after each step": [..., ..., ..., ..., ..., ...],
    "the parent's state at the end": ...,
    "entries in the parent's :unsuccessful at the end": ...,
}
print(exercises.check("05.4", predict_the_counter, conn))

# %% [markdown]
# ## A buried child, brought back
#
# Under `ignore`, a child's death counts as done. What if an operator then reprocesses that child and
# it completes after all? Its death was counted once, when it died, and `child_death` detached it then
# (its `parent` field went), so its new life settles as a plain job: it counts nothing toward the
# parent, which was released once, by the counter reaching zero. A child under `ignore`, buried by the
# counted stall sweep, its sibling completed, then the child reprocessed and completed while a worker
# holds the released parent:

# %%
Q6 = "brought-back"
jobs.drop(conn, Q6)  # a re-run of this cell starts from an empty queue, as the first run did
f6 = flows.add(conn, Q6, "parent", ["vanishes", "succeeds"], policy="ignore")
buried_child = f6.child_ids[0]
for _ in range(2):
    jobs.claim(conn, Q6, 20)  # its worker dies holding it
    time.sleep(0.03)
    sweep = stalled.check(conn, Q6, max_stalled=1)
sib = jobs.claim(conn, Q6, 30_000)
jobs.complete(conn, Q6, sib.id, sib.attempts, "fine")
s = snapshots.snapshot(conn, Q6)
print("buried by the sweep:", sweep.dead == [buried_child], "· its link to the parent kept:",
      "parent" in s.rows[buried_child], "· the parent:", s.state(f6.parent_id))
assert sweep.dead == [buried_child] and "parent" not in s.rows[buried_child]
assert s.where(f6.parent_id) == ["pending"] and flows.dependencies(conn, Q6, f6.parent_id) == 0
held_parent = jobs.claim(conn, Q6, 30_000)  # a worker takes the released parent ...
jobs.reprocess(conn, Q6, buried_child)  # ... while an operator brings the child back
back = jobs.claim(conn, Q6, 30_000)
late_ok = jobs.complete(conn, Q6, back.id, back.attempts, "done after all")
s = snapshots.snapshot(conn, Q6)
print("the reprocessed child completes:", late_ok, "· :dependencies", flows.dependencies(conn, Q6, f6.parent_id),
      "· :processed", flows.children_values(conn, Q6, f6.parent_id),
      "· :unsuccessful", flows.ignored_failures(conn, Q6, f6.parent_id))
print("the parent is where its worker holds it:", s.where(f6.parent_id), "· in pending again:",
      f6.parent_id in s.pending)
assert held_parent.id == f6.parent_id and back.id == buried_child and late_ok == jobs.OK
assert flows.dependencies(conn, Q6, f6.parent_id) == 0 and flows.children_values(conn, Q6, f6.parent_id) == {
    sib.id: "fine"}
assert flows.ignored_failures(conn, Q6, f6.parent_id) == {buried_child: "stalled"}
assert s.where(f6.parent_id) == ["active"] and jobs.complete(conn, Q6, f6.parent_id, held_parent.attempts) == jobs.OK

# %% [markdown]
# ## A parent id used again
#
# Callers often choose a flow's parent id themselves, a business id such as `order-42`, and land the
# flow again when they resubmit. Suppose an operator removes the parent while one of its children is
# still running, and the caller then lands a new flow under the same id. When the old child ends, its
# completion finds a row under its parent's id again, but not its own flow's: the two `flow` numbers
# differ, so `@complete` settles it as a plain job, and it counts nothing toward the new flow
# (`docs/decisions.md`, "a flow's number"; the same holds when the old child dies or is buried):

# %%
Q5 = "reused"
jobs.drop(conn, Q5)  # a re-run of this cell starts from an empty queue, as the first run did
flows.add(conn, Q5, ("order-42", "first try"), [("old-a", "charge"), ("old-b", "ship")])
running = jobs.claim(conn, Q5, 30_000)  # old-a's worker is at work ...
jobs.remove(conn, Q5, "order-42")  # ... when the operator removes its parent
again = flows.add(conn, Q5, ("order-42", "second try"), [("new-a", "charge"), ("new-b", "ship")])
rows = snapshots.snapshot(conn, Q5).rows
print("old-a belongs to flow", rows["old-a"]["flow"], "· order-42's row now to flow", rows["order-42"]["flow"])
late = jobs.complete(conn, Q5, "old-a", running.attempts, "charged (first try)")
print("old-a completes:", late, "· the new flow still waits for", flows.dependencies(conn, Q5, again),
      "children · its results:", flows.children_values(conn, Q5, again))
assert (rows["old-a"]["flow"], rows["order-42"]["flow"]) == ("1", "2")
assert late == jobs.OK and flows.dependencies(conn, Q5, again) == 2 and flows.children_values(conn, Q5, again) == {}
for child in again.child_ids:  # the new flow's own children, and only they, release it
    c = jobs.claim(conn, Q5, 30_000)
    assert c.id == child and jobs.complete(conn, Q5, c.id, c.attempts, f"{c.payload}: done") == jobs.OK
print("after new-a and new-b: order-42 is", snapshots.snapshot(conn, Q5).state("order-42"),
      "with", flows.children_values(conn, Q5, again))
assert snapshots.snapshot(conn, Q5).where("order-42") == ["pending"]

# %% [markdown]
# ## Flows run only as scripts
#
# The module registers five commands — the twins of four flat transitions, and a batch claim — and
# none of them lands a flow, so `flows.add` sends `@enqueue_flow` even on a wire 6 connector.
# `EMQ.COMPLETE` and `EMQ.FAIL` both turn a flow child away before they write anything — a row that
# carries `parent`, and the flow's key layout itself (the five keys, or a parent id), whatever the
# row says. So on a wire 6 connector `jobs.complete` sends the `@complete` script for a flow child.
# The proof is long, so its code is folded: read what it prints, and click the `…` to open it.

# %% jupyter={"source_hidden": true}
native = start_node(native=True)
n_conn = native.connector()
jobs.drop(n_conn, Q)  # a classroom's native node keeps an earlier run's flow too
nf = flows.add(n_conn, Q, "parent", ["only child"])
assert n_conn.last()[0].script == "@enqueue_flow"  # the land went out as the script
module_commands = sorted(c.lower() for c in n_conn.client.command_list(module="trafikey"))
# the four twins of the page's flat transitions and the kit's batch claim: no flow command
assert module_commands == ["emq.claim", "emq.claim.many", "emq.complete", "emq.fail", "emq.stalled.check"]
child = jobs.claim(n_conn, Q, 30_000)
keys = [keyspace.queue_key(Q, "active"), keyspace.job_key(Q, child.id)]
argv = [child.id, child.attempts, keyspace.base(Q), "", "x", "0"]
before = snapshots.snapshot(n_conn, Q)
refusals = []
try:
    n_conn.call("EMQ.COMPLETE", 2, *keys, *argv)
except Exception as exc:  # noqa: BLE001
    refusals.append(str(exc))
fail_keys = [keyspace.queue_key(Q, s) for s in ("active", "schedule", "dead")] + [keyspace.job_key(Q, child.id)]
fail_argv = [child.id, child.attempts, 1_000, 3, "no", keyspace.base(Q), "", "0"]
try:
    n_conn.call("EMQ.FAIL", 4, *fail_keys, *fail_argv)
except Exception as exc:  # noqa: BLE001
    refusals.append(str(exc))
print("raw EMQ.COMPLETE:", refusals[0])
print("raw EMQ.FAIL:    ", refusals[1])
assert refusals == ["EMQSTATE complete flow not native", "EMQSTATE fail flow not native"]
assert snapshots.snapshot(n_conn, Q).state_only() == before.state_only()
# the flow layout alone is refused too: a plain job (no parent field), sent with the five keys
plain = jobs.enqueue(n_conn, Q, "a plain job")
pc = jobs.claim(n_conn, Q, 30_000)  # the child claimed above is still active; pending held only this job
assert pc.id == plain
parent_keys = [keyspace.job_key(Q, nf.parent_id) + s for s in (":dependencies", ":processed", "")]
five = [keyspace.queue_key(Q, "active"), keyspace.job_key(Q, plain), *parent_keys]
before = snapshots.snapshot(n_conn, Q)
try:
    n_conn.call("EMQ.COMPLETE", 5, *five, plain, pc.attempts, keyspace.base(Q), nf.parent_id, "x", "0")
    layout_refusal = None
except Exception as exc:  # noqa: BLE001
    layout_refusal = str(exc)
print("raw EMQ.COMPLETE, a plain job in the flow layout:", layout_refusal)
assert layout_refusal == "EMQSTATE complete flow not native"
assert snapshots.snapshot(n_conn, Q).state_only() == before.state_only()
assert jobs.complete(n_conn, Q, child.id, child.attempts, "done") == jobs.OK
print("jobs.complete sent:", n_conn.last()[0].line.split()[0], n_conn.last()[0].script)
assert n_conn.last()[0].script == "@complete"
n_conn.close()
native.stop()

# %% [markdown]
# ## Compose one yourself
#
# The flow composer lands a flow of N children, completes them one by one (or fails one under a
# policy you choose), and plots the `:dependencies` counter ticking to zero. Its buttons are real
# calls, so code can press them too: below, it lands a flow of three and completes every child, so the
# composer shows a finished run — the counter at 3, 2, 1, 0 and the parent released. Press
# **land the flow** to start one of your own.

# %%
from echomq_widgets import FlowComposer

composer = FlowComposer(conn, "compose", children=3)
composer.land_button.click()
for _ in range(3):
    composer.complete_button.click()
assert composer.counter == [3, 2, 1, 0] and composer.parent_state == "pending"
composer

# %% [markdown]
# ## Recap
#
# - `@enqueue_flow` lands a flow atomically: children pending, parent held, `:dependencies` = N.
# - The fan-in lives in `@complete`'s once-only branch (the five-key form): DECR, record in
#   `:processed`, release at zero. A flow lives on one queue.
# - Two layers keep a completion from counting twice: the token fence refuses stale and redelivered
#   completions; the once-only branch skips a child that passed the fence but was not in active.
# - A dying child's `parent_policy` decides: fail, ignore, remove or wait.
# - A child counts only toward the flow it was landed with: a parent id used again is a new flow,
#   with a new `flow` number.
# - Flows run only as scripts; the native commands refuse a flow child and the flow key layout.
# - `dependencies/3` answers 0 when the counter is absent.
# - Your queue's completion took flow children, released at a quorum, counting each child once (05.2).
#
# Next: **06-workshop** — the whole machine, end to end.


# %% [markdown]
# ## Check yourself
#
# Each question is answered by this notebook's own cells: run them again, read their traces and the
# scripts they print. Nothing grades these; the section a question comes from holds its answer.
#
# 1. Where does the parent wait while its children run, and what releases it?
# 2. Which two layers keep a completion from counting twice, and which one stopped each refused
#    completion in "Never twice"?
# 3. A child under `ignore` is buried by the sweep, then reprocessed, and completes. What does its
#    completion count toward the parent, and why?
# 4. A parent is removed while a child runs, and a new flow lands under the same id. Why does the
#    old child's completion count nothing toward the new flow?
# 5. Why does `flows.add` send the script even on a wire 6 connector, and which script does a flow
#    child's completion take?

# %% [markdown]
# ## Further reading
#
# - [`DECR`][r1]: the counter a child's completion takes one off.
# - [BullMQ: flows][r2]: parents and children in another queue, for comparison.
#
# [r1]: https://valkey.io/commands/decr/
# [r2]: https://docs.bullmq.io/guide/flows

# %% [markdown]
# ## When you are done
#
# The nodes the kit started for this notebook stop with its kernel (a classroom's shared node stays
# up), so there is nothing to stop by hand: when you leave, shut the kernel down (**Kernel → Shut
# Down Kernel**). Until then the widgets above keep working, even after **Run All** — each click is
# still a real call.
