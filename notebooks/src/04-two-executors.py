# %% [markdown]
# # The Queue · 04 — one transition, two executors
#
# The same claim can run two ways: as the `@claim2` script, sent by `EVALSHA`, or as **one native
# command**, `EMQ.CLAIM`, registered by the kit's own C module `trafikey`. Same keys, same
# arguments, in the same places; the same reply. This notebook puts the two side by side.
#
# **Goals**
#
# 1. Start a scripted node and a native node, and see each one's wire brand.
# 2. Send one claim both ways and compare the replies and the end states.
# 3. Show each of the four differences with a cell of its own.
# 4. Meet `EMQWIRE`, and the stall sweep's exemption for a lease taken before a restart.

# %%
import time

from echomq_teach import WireError, inspect, jobs, keyspace, stalled, start_node

scripted = start_node()
native = start_node(native=True)
s_conn = scripted.connector()  # wire 4
n_conn = native.connector()  # wire 6
s_raw, n_raw = scripted.client(), native.client()
print("scripted:", s_conn.wire, s_raw.get("{emq}:version"))
print("native:  ", n_conn.wire, n_raw.get("{emq}:version"))
assert (s_raw.get("{emq}:version"), n_raw.get("{emq}:version")) == ("echomq:4.0.0", "echomq:6.0.0")

# %% [markdown]
# The native node loaded the module when it started (`--loadmodule`); the scripted one has none.
# The kit compiled `native/` with the system C compiler on first use and cached the `.so`.

# %%
print("trafikey loaded — scripted node:", s_conn.module_loaded(), "· native node:", n_conn.module_loaded())
assert n_conn.module_loaded() and not s_conn.module_loaded()

# %% [markdown]
# ## One claim, two executors
#
# Enqueue the same job — same id, same payload — on each node, and claim it with the same lease.

# %%
Q = "twins"
same_id = "JOB0KHTOWnGLuC"
for conn in (s_conn, n_conn):
    jobs.enqueue(conn, Q, "<payload>", job_id=same_id)
s_claim = jobs.claim(s_conn, Q, 30_000)
n_claim = jobs.claim(n_conn, Q, 30_000)
print(s_conn.last()[0].line)
print(n_conn.last()[0].line)
print("replies:", s_conn.last()[0].reply, n_conn.last()[0].reply)
assert s_claim == n_claim == (same_id, "<payload>", 1)
typed_keys = " ".join(keyspace.queue_key(Q, k) for k in ("pending", "active", ""))
assert s_conn.last()[0].line == f"EVALSHA <sha> 3 {typed_keys} 30000"
assert n_conn.last()[0].line == f"EMQ.CLAIM 3 {typed_keys} 30000"

# %% [markdown]
# The `<sha>` gives way to the command name: there is nothing to load and no `NOSCRIPT` path.
# And the end states? The same sets and the same row — but for one field:

# %%
s_snap, n_snap = inspect.snapshot(s_conn, Q), inspect.snapshot(n_conn, Q)
s_row, n_row = s_snap.rows[same_id], n_snap.rows[same_id]
print("scripted row:", s_row)
print("native row:  ", n_row)
extra = sorted(set(n_row) - set(s_row))
print("fields only the native claim wrote:", extra)
assert s_snap.where(same_id) == n_snap.where(same_id) == ["active"]
assert {k: v for k, v in n_row.items() if k != "lease_epoch"} == s_row and extra == ["lease_epoch"]

# %% [markdown]
# ## The four differences
#
# On the ordinary path a caller gets the same reply and the same end state, with four differences.
#
# ### 1 · The pause read moves inside the command
#
# `claim/3` reads the pause flag host-side, in its own round trip, before it sends anything. The
# native command reads the flag itself: a raw `EMQ.CLAIM` on a paused queue answers the empty array.

# %%
Q1 = "paused"
waiting = jobs.enqueue(n_conn, Q1, "held")
jobs.pause(n_conn, Q1)
keys = [keyspace.queue_key(Q1, "pending"), keyspace.queue_key(Q1, "active"), keyspace.queue_key(Q1, "")]
raw_reply = n_conn.call("EMQ.CLAIM", 3, *keys, 30_000)
print("raw EMQ.CLAIM on a paused queue:", raw_reply)
print("pending untouched:", inspect.snapshot(n_conn, Q1).pending == [waiting])
assert raw_reply == [] and inspect.snapshot(n_conn, Q1).pending == [waiting]

# %% [markdown]
# The kit's `claim/3` on a wire 6 connector still makes its own pause read first, and so never
# sends the command to a paused queue:

# %%
n_conn.clear_trace()
assert jobs.claim(n_conn, Q1, 30_000) is None
print([e.line for e in n_conn.last(5)])
assert [e.line.split()[0] for e in n_conn.last(5)] == ["EXISTS"]

# %% [markdown]
# ### 2 · Every read and check comes before the first write
#
# A Lua script is atomic, but it is not a transaction that rolls back: whatever it wrote before an
# error stays written. Send `@claim2` a lease that is not a number — bypassing the kit's own check
# with a raw `EVALSHA` — and watch it pop the job, move the token, and only then fail:

# %%
from echomq_teach import scripts

Q2 = "half-done"
for conn in (s_conn, n_conn):
    jobs.enqueue(conn, Q2, "fragile", job_id="JOB0halfdone01")
keys = [keyspace.queue_key(Q2, "pending"), keyspace.queue_key(Q2, "active"), keyspace.queue_key(Q2, "")]
before = inspect.snapshot(s_conn, Q2)
try:
    s_conn.call("EVALSHA", scripts.load("claim2").sha, 3, *keys, "soon")
except Exception as exc:  # noqa: BLE001
    print("script error:", str(exc)[:100])
after = inspect.snapshot(s_conn, Q2)
for change in inspect.diff(before, after):
    print(" ·", change)
assert after.where("JOB0halfdone01") == [] and after.rows["JOB0halfdone01"]["state"] == "active"

# %% [markdown]
# The job is now in no set at all, with state `active` — lost until someone repairs it by hand.
# The native command checks its arguments, the brand, the pause flag and the head *before* its first
# write (it peeks the head, then pops it and checks the pop against the peek), so a refusal writes
# nothing:

# %%
before = inspect.snapshot(n_conn, Q2)
try:
    n_conn.call("EMQ.CLAIM", 3, *keys, "soon")
except Exception as exc:  # noqa: BLE001
    refusal = str(exc)
print("native refusal:", refusal)
assert inspect.snapshot(n_conn, Q2).state_only() == before.state_only()

# %% [markdown]
# (This is why `jobs.claim` refuses a bad lease in Python before anything is sent: on the script path
# that check is the only guard.)
#
# ### 3 · The deadline comes from the server's cached command time
#
# `@claim2` calls `TIME`. `EMQ.CLAIM` reads the time the server cached when the command started —
# the same value `TIME` would report — and makes no `TIME` call. The server's command statistics
# count every `TIME`, including the ones run from inside a script:

# %%
def time_calls(raw) -> int:
    return int(raw.info("commandstats").get("cmdstat_time", {}).get("calls", 0))


Q3 = "clock"
jobs.enqueue(s_conn, Q3, "tick")
jobs.enqueue(n_conn, Q3, "tock")
s0, n0 = time_calls(s_raw), time_calls(n_raw)
jobs.claim(s_conn, Q3, 30_000)
jobs.claim(n_conn, Q3, 30_000)
made = (time_calls(s_raw) - s0, time_calls(n_raw) - n0)
print("TIME calls made by one claim — script:", made[0], "· native:", made[1])
assert made == (1, 0)

# %% [markdown]
# ### 4 · The row gains `lease_epoch`, the server's `run_id`
#
# The native claim stamps the row with the run id of the server process that granted the lease.
# A restart changes the run id, which is what lets the counted stall sweep recognise a lease from
# before the restart (below).

# %%
print("lease_epoch == run_id:", n_row["lease_epoch"] == n_raw.info("server")["run_id"])
assert n_row["lease_epoch"] == n_raw.info("server")["run_id"]

# %% [markdown]
# ## `EMQWIRE`: each executor keeps its own node
#
# Every `EMQ.*` command first reads `{emq}:version`: `echomq:6.0.0` passes; anything else is refused.
# A wire 4 connector holds its node at `echomq:4.0.0`, a wire 6 connector requires `echomq:6.0.0`,
# so neither can be pointed at the other's node by mistake.

# %%
for node, wire in ((scripted, 6), (native, 4)):
    try:
        node.connector(wire=wire)
    except WireError as exc:
        print(f"wire {wire} on the {'native' if node.native else 'scripted'} node:", exc)

# %% [markdown]
# And on a node whose brand is missing, the command itself refuses. (Deleting a brand is not
# something to try on a shared node, so this cell starts a private one of its own.)

# %%
private = start_node(native=True, provider="local")
p_conn = private.connector()
private.client().delete("{emq}:version")
try:
    p_conn.call("EMQ.CLAIM", 3, *keys, 30_000)
except Exception as exc:  # noqa: BLE001
    wire_error = str(exc)
print(wire_error)
assert wire_error.startswith("EMQWIRE")
p_conn.close()
private.stop()

# %% [markdown]
# ## The stall sweep and a restart
#
# `Stalled.check/3` is the counted sweep: each lapsed lease adds one to the row's `stalled` count,
# and a job that stalls too often is buried. Its native twin `EMQ.STALLED.CHECK` exempts a lease
# whose `lease_epoch` is not the current run id — one granted before the server restarted, whose
# worker never had a fair chance to finish. Such a job goes back to pending **uncounted**.
#
# A durable node keeps its data across a restart:

# %%
durable = start_node(native=True, durable=True, provider="local")  # a restart needs a node of our own
d_conn = durable.connector()
Q4 = "restart"
before_restart = jobs.enqueue(d_conn, Q4, "claimed before the restart")
after_restart = jobs.enqueue(d_conn, Q4, "claimed after the restart")
jobs.claim(d_conn, Q4, 100)
old_run_id = durable.run_id
durable.restart()
d_conn = durable.connector()
print("run id changed:", durable.run_id != old_run_id)
jobs.claim(d_conn, Q4, 100)
time.sleep(0.15)  # both leases lapse
report = stalled.check(d_conn, Q4, max_stalled=1)
rows = inspect.snapshot(d_conn, Q4).rows
print("requeued:", sorted(report.requeued) == sorted([before_restart, after_restart]))
print("stalled count — before the restart:", rows[before_restart].get("stalled", "0"),
      "· after:", rows[after_restart].get("stalled", "0"))
assert rows[before_restart].get("stalled") is None and rows[after_restart]["stalled"] == "1"
d_conn.close()
durable.stop()

# %% [markdown]
# ## Side by side
#
# The executor view runs the same step on both nodes and lays the replies and end states side by
# side, with the documented differences highlighted.

# %%
from echomq_widgets import ExecutorView

executors = ExecutorView(s_conn, n_conn, "claim")
assert executors.comparison.undocumented == []
executors

# %% [markdown]
# ## Exercises
#
# ### 04.1 · Same claim, two executors
#
# One job with the same id waits on each node. Claim it on both, and return the two claims as a
# pair `(scripted_claim, native_claim)`.

# %%
from echomq_teach import exercises


def claim_both(s_conn, n_conn, queue, job_id):
    # your code here
    raise NotImplementedError


print(exercises.check("04.1", claim_both, s_conn, n_conn))

# %% [markdown]
# ### 04.2 · Read the brands
#
# Return a dict `{"scripted": …, "native": …}` with what `{emq}:version` says on each node —
# read it through the connectors (`conn.call("GET", …)`), so it shows in their traces.

# %%
def read_brands(s_conn, n_conn, queue):
    # your code here
    raise NotImplementedError


print(exercises.check("04.2", read_brands, s_conn, n_conn))

# %% [markdown]
# ## Recap
#
# - `EMQ.CLAIM` takes `@claim2`'s keys and argument in the same places and answers the same reply.
# - Four differences: the pause read inside; all checks before the first write; the cached command
#   time instead of `TIME`; and `lease_epoch` on the row.
# - The brand fences each executor to its own node (`EMQWIRE`), and the native stall sweep exempts a
#   lease granted before a restart.
#
# Next: **05-flows** — a parent, its children, and a counter.


# %% [markdown]
# ## When you are done
#
# The nodes the kit started for this notebook stop with its kernel (a classroom's shared node stays
# up), so there is nothing to stop by hand: when you leave, shut the kernel down (**Kernel → Shut
# Down Kernel**). Until then the widgets above keep working, even after **Run All** — each click is
# still a real call.
