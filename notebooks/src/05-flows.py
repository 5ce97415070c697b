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
# 3. See that a redelivered or stale completion never counts twice.
# 4. Choose what a dying child does to its parent: the four policies.
# 5. Read the children's results from the parent's handler.

# %%
import time

from echomq_teach import flows, jobs, keyspace, scripts, snapshots, start_node

node = start_node()
conn = node.connector()
Q = "flows"
# a classroom node keeps what an earlier run left: start this notebook's queues empty
for q in (Q, "once", "policy-fail", "policy-ignore", "policy-remove", "policy-wait"):
    jobs.drop(conn, q)
conn.clear_trace()  # the trace starts with the notebook's own calls

# %% [markdown]
# ## The land — `EchoMQ.Flows.add/3` → `flows.add(conn, queue, parent, children)`
#
# A single script writes the whole flow. Each child gets a row and a place in pending, so a worker
# can take it straight away. The parent gets a row too, in state `awaiting_children`, but no place
# in any of the four sets. And the parent's counter, `emq:{q}:job:<parent>:dependencies`, starts at
# the number of children N (a plain **SET**).

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
# ## The fan-in, inside `@complete`
#
# Before it sends anything, `complete/5` looks at the job's row (`HGET … parent`, host-side). A flow
# child names its parent there, so the call adds the parent's three keys to the script's KEYS.
# Inside the script, this branch runs:

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
    ticks.append(flows.dependencies(conn, Q, parent))
    print(f":dependencies = {ticks[-1]}  parent {snapshots.snapshot(conn, Q).state(parent)}")
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
# ## Never twice
#
# Only a completion that really took the child out of active reaches the `DECR`. So the counter
# cannot be hit twice for one child: not by the same completion delivered again (the same token),
# and not by a worker whose token is old (its lease lapsed, a reap ran and someone else claimed).

# %%
Q2 = "once"
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
# ## When a child dies: the four policies
#
# A child that spends its attempts dies like any job. What happens to its parent is the child's
# `parent_policy`:
#
# | policy | when the child dies |
# | --- | --- |
# | `fail` (default) | the parent goes to dead, its `last_error` naming the child |
# | `ignore` | the failure is recorded in `:unsuccessful` and counts as done |
# | `remove` | it counts as done, with no record |
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
# ## Flows run only as scripts
#
# The module registers four commands and none of them lands a flow, so `flows.add` sends
# `@enqueue_flow` even on a wire 6 connector. `EMQ.COMPLETE` and `EMQ.FAIL` both turn a flow child
# away before they write anything. So on a wire 6 connector `jobs.complete` sends the `@complete`
# script for a flow child:

# %%
native = start_node(native=True)
n_conn = native.connector()
jobs.drop(n_conn, Q)  # a classroom's native node keeps an earlier run's flow too
nf = flows.add(n_conn, Q, "parent", ["only child"])
assert n_conn.last()[0].script == "@enqueue_flow"  # the land went out as the script
module_commands = sorted(c.lower() for c in n_conn.client.command_list(module="trafikey"))
assert module_commands == ["emq.claim", "emq.complete", "emq.fail", "emq.stalled.check"]  # no flow command
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
assert jobs.complete(n_conn, Q, child.id, child.attempts, "done") == jobs.OK
print("jobs.complete sent:", n_conn.last()[0].line.split()[0], n_conn.last()[0].script)
assert n_conn.last()[0].script == "@complete"
n_conn.close()
native.stop()

# %% [markdown]
# ## Compose one yourself
#
# The flow composer lands a flow of N children, completes them one by one (or fails one under a
# policy you choose), and plots the `:dependencies` counter ticking to zero.

# %%
from echomq_widgets import FlowComposer

composer = FlowComposer(conn, "compose", children=3)
composer

# %% [markdown]
# Its buttons are real calls, so code can press them too: land a flow of three, complete every child,
# and the counter reads 3, 2, 1, 0 — then land a fresh one for you to play with.

# %%
composer.land_button.click()
for _ in range(3):
    composer.complete_button.click()
print(composer.caption)
assert composer.counter == [3, 2, 1, 0] and composer.parent_state == "pending"
composer.land_button.click()
assert composer.counter == [3]

# %% [markdown]
# ## Exercises
#
# ### 05.1 · Land a flow of four
#
# Land a flow whose parent has the payload `"assemble"` and four children, and return what
# `flows.add` answered. The check wants the parent held (awaiting_children) with `:dependencies` = 4.

# %%
from echomq_teach import exercises


def land_four(conn, queue):
    # your code here
    raise NotImplementedError


print(exercises.check("05.1", land_four, conn))

# %% [markdown]
# ### 05.2 · Release the parent
#
# The check lands a flow of three children and hands you the parent's id. Complete every child —
# each with a result — then claim the parent and return `flows.children_values` for it.

# %%
def release_the_parent(conn, queue, parent_id):
    # your code here
    raise NotImplementedError


print(exercises.check("05.2", release_the_parent, conn))

# %% [markdown]
# ## Recap
#
# - `@enqueue_flow` lands a flow atomically: children pending, parent held, `:dependencies` = N.
# - The fan-in lives in `@complete`'s once-only branch: DECR, record in `:processed`, release at zero.
# - A dying child's `parent_policy` decides: fail, ignore, remove or wait.
# - Flows run only as scripts; the native commands refuse a flow child.
#
# Next: **06-workshop** — the whole machine, end to end.


# %% [markdown]
# ## When you are done
#
# The nodes the kit started for this notebook stop with its kernel (a classroom's shared node stays
# up), so there is nothing to stop by hand: when you leave, shut the kernel down (**Kernel → Shut
# Down Kernel**). Until then the widgets above keep working, even after **Run All** — each click is
# still a real call.
