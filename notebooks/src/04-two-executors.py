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
# 4. Put a ghost at the head of a queue on each node, and see what each executor makes of it.
# 5. Meet `EMQWIRE`, and the stall sweep's exemption for a lease taken before a restart.
# 6. Measure where a worker's time goes on your node — round trips, the server's share, batches —
#    and what a batch costs when its worker dies.

# %%
import time

from echomq_teach import WireError, jobs, keyspace, snapshots, stalled, start_node

QUEUES = ("twins", "paused", "half-done", "clock", "ghost")
scripted = start_node()
s_conn = scripted.connector()  # wire 4
s_raw = scripted.client()
# a classroom node keeps what an earlier run left: start this notebook's queues empty
for q in QUEUES:
    jobs.drop(s_conn, q)
s_conn.clear_trace()  # the trace starts with the notebook's own calls
print("scripted:", s_conn.wire, s_raw.get("{emq}:version"))
assert s_raw.get("{emq}:version") == "echomq:4.0.0"

# %%
native = start_node(native=True)
n_conn = native.connector()  # wire 6
n_raw = native.client()
for q in QUEUES:
    jobs.drop(n_conn, q)
n_conn.clear_trace()
print("native:  ", n_conn.wire, n_raw.get("{emq}:version"))
assert n_raw.get("{emq}:version") == "echomq:6.0.0"

# %% [markdown]
# Which body is whose: `@claim2` is the course page's own script, line for line. The C module
# `trafikey` is the kit's own: the page shows only its command line and its reply, and says how it
# differs (the four differences below). [`docs/decisions.md`](docs/decisions.md) lists which parts are
# the page's and which the kit's.
#
# The native node loaded the module when it started (a `loadmodule` line in its config file); the
# scripted one has none. For a node of your own, the kit took the module its wheel carries prebuilt
# (`pip install` on Linux x86-64), or compiled `native/` with the system C compiler on first use and
# cached the `.so`: either way under a name that carries a hash of the sources (on a shared classroom
# node, the instructor's image brought the module).

# %%
from echomq_teach.nodes import trafikey

print("trafikey loaded — scripted node:", s_conn.module_loaded(), "· native node:", n_conn.module_loaded())
assert n_conn.module_loaded() and not s_conn.module_loaded()
if native.owned:
    so = native.module_path
    assert so == trafikey.build() and so.parent in (trafikey.source_dir(), trafikey.cache_dir())
    assert so.name.startswith("trafikey-")

# %% [markdown]
# ## One claim, two executors
#
# Enqueue the same job — same id, same payload — on each node, and claim it with the same lease.

# %%
Q = "twins"
same_id = "JOB0KHTOWnGLuC"
for conn in (s_conn, n_conn):
    jobs.drop(conn, Q)  # the queue starts empty, so the cell can be run again
    jobs.enqueue(conn, Q, "<payload>", job_id=same_id)
s_claim = jobs.claim(s_conn, Q, 30_000)
n_claim = jobs.claim(n_conn, Q, 30_000)
print(s_conn.last()[0].line)
print(n_conn.last()[0].line)
print("replies:", s_conn.last()[0].reply, n_conn.last()[0].reply)
assert s_claim == n_claim == (same_id, "<payload>", 1)
assert s_conn.last()[0].script == "@claim2" and n_conn.last()[0].script is None  # a plain command, no sha
typed_keys = " ".join(keyspace.queue_key(Q, k) for k in ("pending", "active", ""))
assert s_conn.last()[0].line == f"EVALSHA <sha> 3 {typed_keys} 30000"
assert n_conn.last()[0].line == f"EMQ.CLAIM 3 {typed_keys} 30000"

# %% [markdown]
# Where the script line carries a `<sha>`, the native line carries the command's name. Nothing has
# to be loaded beforehand, so a node that forgot its scripts (the `NOSCRIPT` answer) cannot trip it.
# And the end states? The same sets and the same row — but for one field:

# %%
s_snap, n_snap = snapshots.snapshot(s_conn, Q), snapshots.snapshot(n_conn, Q)
s_row, n_row = s_snap.rows[same_id], n_snap.rows[same_id]
print("scripted row:", s_row)
print("native row:  ", n_row)
extra = sorted(set(n_row) - set(s_row))
print("fields only the native claim wrote:", extra)
assert s_snap.where(same_id) == n_snap.where(same_id) == ["active"]
assert {k: v for k, v in n_row.items() if k != "lease_epoch"} == s_row and extra == ["lease_epoch"]

# %% [markdown]
# ### 04.1 · Where the two part ways (predict before you read on)
#
# Before the four differences are shown, **predict**, for each executor, what a *raw* claim does —
# `@claim2` sent by `EVALSHA` on the scripted node, `EMQ.CLAIM` on the native one, neither through the
# kit's `claim/3`, so no pause read and no lease check comes first. Each case starts from its own queue,
# a real job waiting in pending (a *ghost* is an id in pending with no row, 02):
#
# 1. `"a paused queue, a ghost at its head: the raw claim answers"` — `"claimed"`, `"empty"` or `"error"`;
# 2. `"after that claim, the ghost is"` — `"pending"`, `"active"` or `"nowhere"`;
# 3. `"a lease of 'soon', a ghost at its head: the raw claim answers"` (not paused) — as in 1;
# 4. `"a lease of 'soon' on a paused queue: its one job is then"` (no ghost) — as in 2.
#
# Answer each with a pair, `(scripted, native)`. Only once your answer is kept does the check build the
# queues and run each case on both nodes. *Solution: `solutions/04_1_part_ways.py`.*
#
# A prediction is your answer itself, written as data: replace each `...`. Your **first** answer of the
# right form is kept and graded (it survives a kernel restart): think it through before you run the cell.

# %%
from echomq_teach.course import exercises  # noqa: E402

part_ways = {  # your prediction: (scripted, native) for each
    "a paused queue, a ghost at its head: the raw claim answers": (..., ...),
    "after that claim, the ghost is": (..., ...),
    "a lease of 'soon', a ghost at its head: the raw claim answers": (..., ...),
    "a lease of 'soon' on a paused queue: its one job is then": (..., ...),
}
print(exercises.check("04.1", part_ways, s_conn, n_conn))

# %% [markdown]
# ## The four differences
#
# When nothing goes wrong, both executors answer alike and leave the node in the same state. They
# part ways in four places, each shown below.
#
# ### 1 · Where the pause flag is read
#
# `claim/3` reads the pause flag host-side, in its own round trip, before it sends anything. Send the
# native command raw, to a paused queue:

# %% tags=["reveals:04.1"]
with exercises.reveals("04.1"):  # its output waits until 04.1 is committed
    Q1 = "paused"
    jobs.drop(n_conn, Q1)  # the queue starts empty, so the cell can be run again
    waiting = jobs.enqueue(n_conn, Q1, "held")
    jobs.pause(n_conn, Q1)
    keys = [keyspace.queue_key(Q1, "pending"), keyspace.queue_key(Q1, "active"), keyspace.queue_key(Q1, "")]
    raw_reply = n_conn.call("EMQ.CLAIM", 3, *keys, 30_000)
    print("raw EMQ.CLAIM on a paused queue:", raw_reply)
    print("pending untouched:", snapshots.snapshot(n_conn, Q1).pending == [waiting])

# %% [markdown]
# The kit's `claim/3` on a wire 6 connector still makes its own pause read first, and so never
# sends the command to a paused queue:

# %%
n_conn.clear_trace()
assert jobs.claim(n_conn, "paused", 30_000) is None  # the queue the cell above paused
print([e.line for e in n_conn.last(5)])
assert [e.line.split()[0] for e in n_conn.last(5)] == ["EXISTS"]

# %% [markdown]
# Why the read inside matters. On wire 4, `claim/3` is two round trips: the pause read, then
# `@claim2`, which does not read the flag. A pause that lands between them does not stop that claim:
# the job is handed out after `pause()` has returned. Played by hand, step by step, on each executor —
# the worker's pause read, the operator's pause, then the worker's second step:

# %% tags=["reveals:04.1"]
with exercises.reveals("04.1"):  # its output waits until 04.1 is committed
    QW = "window"  # ledger: pause-holds-claims
    window = {}
    for name, c in (("wire 4", s_conn), ("wire 6", n_conn)):
        jobs.drop(c, QW)
        job = jobs.enqueue(c, QW, "claimed in the window")
        keys = [keyspace.queue_key(QW, "pending"), keyspace.queue_key(QW, "active"), keyspace.queue_key(QW, "")]
        assert jobs.paused(c, QW) is False  # 1. the worker's host-side read: not paused
        assert jobs.pause(c, QW) is True  # 2. the operator pauses the queue, and the call returns
        # 3. the worker's second step, as claim/3 sends it on this connector
        reply = c.call("EMQ.CLAIM", 3, *keys, 30_000) if c.wire == 6 else c.eval("claim2", keys, [30_000])
        window[name] = reply
        print(f"{name}: after pause() returned, the claim answered", reply[:1] if reply else reply,
              "· the job is now in", snapshots.snapshot(c, QW).where(job))
        jobs.resume(c, QW)

# %% [markdown]
# Which executor handed the job out after `pause()` had returned, the cell above shows once 04.1 is
# kept: a claim that reads the flag in the same atomic step as its pop leaves no window. (The kit's
# batch claim, `@claim_many`, reads the flag inside on both executors.) The pause is a write like any
# other: a failover to a replica that had not applied it loses it, as 09 loses the writes of its
# window ([ledger](docs/guarantees.md#pause-holds-claims)).

# %% [markdown]
# ### 2 · Checks and writes: in which order
#
# A Lua script is atomic, but it is not a transaction that rolls back: whatever it wrote before an
# error stays written. Send `@claim2` a lease that is not a number — bypassing the kit's own check
# with a raw `EVALSHA` — and watch what it leaves:

# %% tags=["reveals:04.1"]
with exercises.reveals("04.1"):  # its output waits until 04.1 is committed
    from echomq_teach import scripts

    Q2 = "half-done"
    for conn in (s_conn, n_conn):
        jobs.drop(conn, Q2)  # the queue starts empty, so the cell can be run again
        jobs.enqueue(conn, Q2, "fragile", job_id="JOB0halfdone01")
    keys = [keyspace.queue_key(Q2, "pending"), keyspace.queue_key(Q2, "active"), keyspace.queue_key(Q2, "")]
    before = snapshots.snapshot(s_conn, Q2)
    answered = None
    try:
        answered = s_conn.call("EVALSHA", scripts.load("claim2").sha, 3, *keys, "soon")
    except Exception as exc:  # noqa: BLE001
        answered = str(exc).split(" script:")[0]  # the rest names the script's sha
    print("the script answered:", answered)
    after = snapshots.snapshot(s_conn, Q2)
    for change in snapshots.diff(before, after):
        print(" ·", change)

# %% [markdown]
# The same raw call, with the same lease, to the native command on its copy of the queue:

# %% tags=["reveals:04.1"]
with exercises.reveals("04.1"):  # its output waits until 04.1 is committed
    Q2 = "half-done"  # the queue the cell above filled on both nodes
    keys = [keyspace.queue_key(Q2, "pending"), keyspace.queue_key(Q2, "active"), keyspace.queue_key(Q2, "")]
    before = snapshots.snapshot(n_conn, Q2)
    answered = None
    try:
        answered = n_conn.call("EMQ.CLAIM", 3, *keys, "soon")
    except Exception as exc:  # noqa: BLE001
        answered = str(exc)
    print("the command answered:", answered)
    print("the queue unchanged:", snapshots.snapshot(n_conn, Q2).state_only() == before.state_only())

# %% [markdown]
# (`jobs.claim` refuses a bad lease in Python before anything is sent, whichever executor runs the
# claim.)
#
# ### 3 · No `TIME` call: the cached command time sets the deadline
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
if scripted.owned and native.owned:  # on a shared node, other students' calls are counted too
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
# ### 04.2 · What the native sweep will do (diagnose)
#
# A durable native node restarted: its rows came back from disk, and so did the leases in active, each
# stamped with the `run_id` of the server process that granted it. The counted stall sweep's native twin,
# `EMQ.STALLED.CHECK` (below), reads that stamp: a **lapsed** lease that another server process granted,
# whose worker never had a fair chance to finish, goes back to pending **without** a stall counted; any
# other lapsed lease counts one, as in 03, and more than `max_stalled` stalls bury the job.
#
# The check leaves such a queue on your native node: jobs in active (some leases granted by this
# server process, some by the one before the restart; some lapsed, some not; some jobs that have
# stalled before), dealt afresh each check, and one in pending. **Diagnose**, without running the sweep,
# what one `stalled.check(n_conn, queue, max_stalled=1)` will do with each job in active, and return a
# dict from each of their ids to `"put back uncounted"`, `"put back counted"`, `"buried"` or
# `"left alone"`. Read only: the check runs the sweep itself, afterwards, and compares; a sweep run on a
# copy is a run too. *Solution: `solutions/04_2_native_sweep.py`.*

# %%
def native_sweep(s_conn, n_conn, queue):
    # your diagnosis here: {job id: what the sweep does with it}
    raise NotImplementedError


print(exercises.check("04.2", native_sweep, s_conn, n_conn))

# %% [markdown]
# ## A ghost at the head, on both
#
# The ordinary path has one more case: a ghost (an id in pending with no row) at the head, with a real
# job waiting behind it. Each executor claims, then claims again:

# %% tags=["reveals:04.1"]
with exercises.reveals("04.1"):  # its output waits until 04.1 is committed
    Q5 = "ghost"
    ghost_rows = []
    for conn in (s_conn, n_conn):
        jobs.drop(conn, Q5)  # the queue starts empty, so the cell can be run again
        real = jobs.enqueue(conn, Q5, "behind the ghost", job_id="JOB0KHTOWnGLuD")
        conn.call("ZADD", keyspace.queue_key(Q5, "pending"), 0, "JOB00000ghost0")
        first_claim = jobs.claim(conn, Q5, 30_000)
        s = snapshots.snapshot(conn, Q5)
        next_claim = jobs.claim(conn, Q5, 30_000)
        ghost_rows.append((conn.last()[0].line.split()[0], first_claim, s.pending, sorted(s.rows), next_claim.id))
        print(f"{ghost_rows[-1][0]:<9} first claim: {first_claim} · pending after it: {s.pending}",
              f"· next claim: {next_claim.id}")
    assert [r[0] for r in ghost_rows] == ["EVALSHA", "EMQ.CLAIM"]

# %% [markdown]
# ## `EMQWIRE`: each executor keeps its own node
#
# Every `EMQ.*` command first reads `{emq}:version`: `echomq:6.0.0` passes; anything else is refused.
# The connectors guard the brand from their side too. A wire 4 connector brands a node that has no
# brand yet `echomq:4.0.0` and accepts no other; a wire 6 connector accepts only `echomq:6.0.0`, on a
# node with the module loaded. Point either one at the other's node and it is refused on the spot:

# %%
refused = []
for node, wire in ((scripted, 6), (native, 4)):
    try:
        node.connector(wire=wire)
    except WireError as exc:
        refused.append(wire)
        print(f"wire {wire} on the {'native' if node.native else 'scripted'} node:", exc)
assert refused == [6, 4]

# %% [markdown]
# The connector is one guard; the command is the other. On a node whose brand is missing, or foreign
# (another wire's, or another program's), `EMQ.CLAIM` itself refuses, whoever sends it, and writes
# nothing. (Changing a brand is not something to try on a shared node, so this cell starts a private
# one of its own.)

# %%
private = start_node(native=True, provider="local")
p_conn, p_raw = private.connector(), private.client()
jobs.enqueue(p_conn, "branded", "held by the brand")
p_keys = [keyspace.queue_key("branded", k) for k in ("pending", "active", "")]
wire_errors = {}
for brand in (None, "echomq:4.0.0", "somebody-else:1.0"):
    if brand is None:
        p_raw.delete(keyspace.VERSION_KEY)
    else:
        p_raw.set(keyspace.VERSION_KEY, brand)
    before = snapshots.snapshot(p_conn, "branded")
    try:
        p_conn.call("EMQ.CLAIM", 3, *p_keys, 30_000)
        wire_errors[brand] = None
    except Exception as exc:  # noqa: BLE001
        wire_errors[brand] = str(exc)
    assert snapshots.snapshot(p_conn, "branded").state_only() == before.state_only()  # nothing written
    print(f"brand {brand!s:<18} →", wire_errors[brand])
assert all(e and e.startswith("EMQWIRE") for e in wire_errors.values())
p_conn.close()
p_raw.close()
private.stop()

# %% [markdown]
# A brand alone does not satisfy a wire 6 connector: it also asks the node whether `trafikey` is
# loaded. Brand a private scripted node `echomq:6.0.0` by hand, and the connector still refuses:

# %%
plain = start_node(provider="local")
plain.client().set(keyspace.VERSION_KEY, keyspace.BRAND_WIRE6)  # the brand, with no module behind it
try:
    plain.connector(wire=6)
    no_module = None
except WireError as exc:
    no_module = str(exc)
print(no_module)
assert no_module and no_module.startswith("EMQWIRE") and "trafikey" in no_module
plain.stop()

# %% [markdown]
# ### 04.3 · Which wire does each node take? (diagnose)
#
# A night of maintenance left six nodes in odd states: a brand deleted here, rewritten there, a module
# loaded or not. The check starts the six nodes of its own (in an order that changes each time) and hands
# you the list `nodes`. For each, in order, say which connector it would accept now: `"wire 4"`,
# `"wire 6"` or `"neither"`. Diagnose from what each node answers (`node.client()` reads it); the
# check asks the connectors themselves afterwards, and your diagnosis must write nothing on any node,
# not even a brand it puts back.
# *Solution: `solutions/04_3_which_wire.py`.*

# %%
def which_wire(s_conn, n_conn, queue, nodes):
    # your code here
    raise NotImplementedError


print(exercises.check("04.3", which_wire, s_conn, n_conn))

# %% [markdown]
# ## The stall sweep's native twin, and a restart
#
# Notebook 03 showed the counted sweep, `Stalled.check/3` (`stalled.check(conn, queue, max_stalled)`):
# each lapsed lease adds one to the row's `stalled` count, and more than `max_stalled` stalls bury the
# job. Its native twin `EMQ.STALLED.CHECK` does the same, with one exemption: a lease whose
# `lease_epoch` is not the current run id — one granted before the server restarted, whose worker
# never had a fair chance to finish — goes back to pending **uncounted**. (The plain `reap/2` has no
# native twin: on a wire 6 connector `jobs.reap` still sends `@reap`.)
#
# A durable node keeps its data across a restart (the job claimed before it is still in active
# afterwards), while the run id changes:

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
assert durable.run_id != old_run_id and snapshots.snapshot(d_conn, Q4).where(before_restart) == ["active"]

# %% [markdown]
# Now a second job is claimed under the new run id, both leases lapse, and one native sweep runs.
# Both go back to pending; only the lease granted after the restart is counted:

# %%
jobs.claim(d_conn, Q4, 100)
time.sleep(0.15)  # both leases lapse
report = stalled.check(d_conn, Q4, max_stalled=1)
rows = snapshots.snapshot(d_conn, Q4).rows
print("requeued:", sorted(report.requeued) == sorted([before_restart, after_restart]))
assert sorted(report.requeued) == sorted([before_restart, after_restart]) and report.dead == []
assert d_conn.last(2)[0].line.startswith("EMQ.STALLED.CHECK 4 ")
print("stalled count — before the restart:", rows[before_restart].get("stalled", "0"),
      "· after:", rows[after_restart].get("stalled", "0"))
assert rows[before_restart].get("stalled") is None and rows[after_restart]["stalled"] == "1"

# %% [markdown]
# Both are claimed again, now under this run id: each lapse counts, and for the job that had already
# stalled once, a second stall is one too many under `max_stalled=1`:

# %%
# both claimed again, now under this run id: each lapse counts, and a second stall is one too many
for _ in range(2):
    jobs.claim(d_conn, Q4, 100)
time.sleep(0.15)
report = stalled.check(d_conn, Q4, max_stalled=1)
rows = snapshots.snapshot(d_conn, Q4).rows
print("second sweep — requeued:", report.requeued == [before_restart], "· buried:", report.dead == [after_restart],
      "· last_error:", rows[after_restart]["last_error"])
assert report == ([before_restart], [after_restart]) and rows[after_restart]["last_error"] == "stalled"
assert jobs.reap(d_conn, Q4) == [] and d_conn.last()[0].script == "@reap"  # no native reap
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
# ## Where the time goes
#
# Both executors do the same work on the same keys: pop the head, move the token, stamp the state,
# add the deadline. They differ in how they reach the data. The script runs in the server's Lua VM,
# and every `redis.call` crosses out of it: the arguments become server strings, the command runs as
# if a client had sent it, and its reply is turned back into Lua values — seven crossings for one
# claim, `TIME` among them, on top of starting the script (finding it by its sha, setting up the
# call). The native command is C compiled into the server: it opens each key once and reads or
# writes the sorted set and the hash directly, with no command in between, then hands the replicas
# its effects as plain commands with the values it computed. (An earlier `trafikey` went through
# the module's command-call interface, one inner call per step, and cost the server as much as the
# script: a command call costs about the same whoever makes it.)
#
# The server times every command it runs; `INFO commandstats` keeps each command's calls and total
# microseconds. `executor_cost.measure` reads those counters before and after each window of claims,
# then of completions, the two executors taking turns window by window, and keeps each one's median
# window — on a native node of your own, since a shared node's counters hold everyone's calls.
# `calls in` counts the commands each executor ran inside one call of its own. The times depend on
# the machine and on what else it is doing; those counts do not.

# %%
from echomq_teach.lab import executor_cost

lab = native if native.owned else start_node(native=True, provider="local")
lab_conn = lab.connector()
costs = executor_cost.measure(lab_conn, n=1000)
print(executor_cost.report(costs))
for c in costs:
    # the script's redis.calls are counted under their own names; the native command calls none
    assert c.script_us > 0 and c.native_us > 0 and c.script_inner >= 5 and c.native_inner == 0
    assert c.native_us < c.script_us, f"{c.native} cost the server more than {c.script}"
lab_conn.close()
if lab is not native:
    lab.stop()

# %% [markdown]
# ## Where a worker's time goes
#
# The server spends a few microseconds on a claim and a few on a complete (the table above). A
# worker pays more than that for each job: it builds the call, sends it, waits for the reply to
# cross back, and reads the reply in Python — a **round trip** per call, on top of the server's time.
# The kit's own batch claim, `jobs.claim_many` (`@claim_many`, natively `EMQ.CLAIM.MANY`; not on the
# course page, which claims one job per call), hands out up to *k* jobs in one call, each with its
# own token and its own lease. A `Pool` with `batch=k` claims that way and sends the batch's settles
# — still one `EMQ.COMPLETE` per job, each atomic on its own — together with its next batch claim,
# in one round trip.
#
# `throughput.sweep` drains 2,000 no-op jobs through a `Pool` for each pool size (`size`: handlers
# running at once) and batch size, on a native node of your own, and reads three things beside the
# wall time:
#
# - `trips/job`: the round trips the pool's consumers made, counted as they went out, per job;
# - `cmd µs/job`, `cmd share`: the time `INFO commandstats` adds to the `EMQ.*` and `EVALSHA` calls —
#   the transitions themselves — per job, and as a share of the wall time;
# - `cpu share`: the server's main thread CPU (`INFO cpu`) over the wall time — the commands plus
#   reading the sockets and writing the replies. What is left of the wall time, the node was idle,
#   waiting for a client.
#
# The figures are this machine's, with whatever else it is running, on one node; run the cell
# again and they move. The counts (trips, calls) move much less.

# %% tags=["nbval-ignore-output"]
from echomq_teach.lab import throughput
from echomq_teach.lab.figures import show

lab = native if native.owned else start_node(native=True, provider="local")
lab_conn = lab.connector()
drains = throughput.sweep(lab_conn, "where-time-goes", sizes=(1, 8), batches=(1, 4, 16, 64), n=2000)
print(throughput.report(drains))
show(throughput.plot(drains))
for d in drains:
    # a claim call per round trip at most, and every job settled by its own EMQ.COMPLETE
    claims = d.calls.get("emq.claim.many" if d.batch > 1 else "emq.claim", 0)
    assert d.calls["emq.complete"] == 2000 and 2000 / d.batch <= claims <= d.trips
    assert 0 < d.command_share < 1
by = {(d.size, d.batch): d for d in drains}
assert by[(1, 64)].trips < by[(1, 1)].trips / 16  # one round trip per batch, not per job

# %% [markdown]
# Read the table from the top, with the right panel beside it: each bar is one drain's wall time per
# job, split into the commands' time, the rest of the server's CPU, and the grey rest, when the node
# was idle and the time went to the trip and to Python on the client. At batch 1 a job costs one
# round trip. Raising the batch divides the trips by about *k* (the settles of a batch ride with
# the next claim), and the claim calls with them; the `EMQ.COMPLETE` calls stay one per job. So the
# wall time per job falls toward what is left per job on the client — calling the handler, building
# its settle, reading one reply — and the server's share rises.
#
# `size=8` is eight consumer threads in one Python process. They share one interpreter lock, so
# eight handlers that do nothing but queue calls take turns on one core of the client; whether eight
# beat one on your machine is in your table (a handler that waits on a disk or a network would
# overlap where these no-op handlers cannot).
#
# The call counts of one drain, straight from the server's counters:

# %% tags=["nbval-ignore-output"]
one_job, batch16 = by[(1, 1)], by[(1, 16)]
for d in (one_job, batch16):
    claims = d.calls.get("emq.claim.many" if d.batch > 1 else "emq.claim", 0)
    print(f"batch {d.batch:>2}: {claims:>5} claim calls · {d.calls['emq.complete']} EMQ.COMPLETE · "
          f"{d.trips:>5} round trips · server {d.command_us / d.jobs:.1f} µs/job in the commands")

# %% [markdown]
# ### What a batch costs
#
# A lease is a promise: until it lapses, no reap takes the job back. A worker that dies between its
# batch claim and its settles leaves every job of the batch in active under its leases — up to *k*
# of them — and nobody works them until the leases lapse and the sweep (the reap a `Pool`'s
# Metronome runs on every tick) returns them to pending. `throughput.stranded` shows it on the
# node: a worker process claims 8 jobs in one call and is killed (`SIGKILL`) before it settles any.

# %%
lost = throughput.stranded(lab_conn, "stranded", batch=8, lease_ms=1000)
print("the worker ended by signal", lost.exit_signal, "· jobs its one call claimed:", len(lost.claimed))
print("in active after its death:", len(lost.active_after_death), "· a reap right then returned:", lost.reaped_early)
print(f"after the leases lapsed ({lost.waited_ms / 1000:.1f} s): the reap returned {len(lost.reaped)},",
      f"all back in pending: {set(lost.claimed) <= set(lost.pending_after)}")
assert lost.exit_signal == 9 and sorted(lost.active_after_death) == sorted(lost.claimed) and len(lost.claimed) == 8
assert lost.reaped_early == [] and sorted(lost.reaped) == sorted(lost.claimed)
assert set(lost.claimed) <= set(lost.pending_after)
lab_conn.close()
if lab is not native:
    lab.stop()

# %% [markdown]
# With one job per claim, a dead worker strands one job; with batches of *k*, up to *k*, each for
# up to one lease. Nothing is lost while a client sweeps — the guarantees are per job, and the reap
# hands each one out again with a new token ([ledger](docs/guarantees.md#at-least-once-runs)) — but
# those jobs wait. A bigger batch buys fewer round trips with more
# jobs waiting after a crash. (Every lease of a batch runs from its one claim, so a consumer whose
# batch is slow settles what it has done once half the lease has gone:
# [`docs/decisions.md`](docs/decisions.md), "the lease guard".)

# %% [markdown]
# ## Recap
#
# - `EMQ.CLAIM` takes `@claim2`'s keys and argument in the same places and answers the same reply.
# - Four differences: where the pause flag is read; when the checks run, against the writes; the
#   cached command time instead of `TIME`; and `lease_epoch` on the row. A ghost at the head, and the
#   job behind it, on both (the cells withheld until 04.1 is kept say what each does).
# - The brand fences each executor to its own node (`EMQWIRE`): the connectors check it, and the
#   command itself refuses a missing or foreign brand. The native stall sweep exempts a lease granted
#   before a restart.
# - A worker's time per job is the server's few microseconds plus a round trip and the client's
#   Python; the kit's batch claim makes one round trip per *k* jobs, and a worker that dies holding
#   a batch strands up to *k* jobs until their leases lapse and the reap returns them.
#
# Next: **05-flows** — a parent, its children, and a counter.


# %% [markdown]
# ## Check yourself
#
# Each question is answered by this notebook's own cells: run them again, read their traces and the
# scripts they print. Nothing grades these; the section a question comes from holds its answer.
#
# 1. What are the four differences between `@claim2` and `EMQ.CLAIM`?
# 2. In the pause window on wire 4, why does the claim still hand the job out, and what closes the
#    window on wire 6?
# 3. What does the native stall sweep do with a lease whose `lease_epoch` is not the server's
#    `run_id`, and why is that fair to the job?
# 4. When is `EMQWIRE` raised, and what does it keep apart?
# 5. What does a batch claim of *k* jobs save, and what does it cost when its worker dies?

# %% [markdown]
# ## Further reading
#
# - [Valkey Modules 101][r1]: a module in C: a shared library that registers commands.
# - [`MODULE LOAD`][r2]: and the `loadmodule` line the kit writes into a node's config.
# - [Valkey: replication][r3]: what a replica receives, which is why a module command replicates its
#   effects literally.
#
# [r1]: https://valkey.io/blog/modules-101/
# [r2]: https://valkey.io/commands/module-load/
# [r3]: https://valkey.io/topics/replication/

# %% [markdown]
# ## When you are done
#
# The nodes the kit started for this notebook stop with its kernel (a classroom's shared node stays
# up), so there is nothing to stop by hand: when you leave, shut the kernel down (**Kernel → Shut
# Down Kernel**). Until then the widgets above keep working, even after **Run All** — each click is
# still a real call.
