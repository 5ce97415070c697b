# %% [markdown]
# # The Queue · 02 — claim and the lease
#
# The claim is the heart of the queue: one atomic step that hands a job to one worker, for a limited
# time, with a number that later proves who may finish it.
#
# What that promises, exactly: **one holder per lease.** While a lease runs, no other claim on the
# node that granted it can take the job ([ledger](docs/guarantees.md#one-holder-per-lease); a
# failover can break it, as 09 shows). It does not promise that the job's handler runs once: a worker
# whose lease lapses may still be running when a sweep hands the job to another, so a handler may run
# more than once (*at-least-once*). What runs once in each of the job's lives is the **settle**: only
# the holder of the current token completes ([ledger](docs/guarantees.md#one-settle-per-life)).
# This notebook shows each of these; `07-when-things-fail.ipynb` takes them to races and crashes.
#
# **Goals**
#
# 1. Read `claim/3` and the `@claim2` script line by line.
# 2. See that the lease deadline comes from the **server's** clock.
# 3. Use `attempts` as a fencing token.
# 4. Feed the ghost guard, and watch a paused queue answer empty.
# 5. Tell at-least-once handler runs from one settle per life (on one node, ids not reused:
#    [ledger](docs/guarantees.md#one-settle-per-life)).
# 6. Start a queue of your own, in Lua files you edit in JupyterLab: a claim that goes past ghosts and a
#    lease renewal fenced by the token, which a judge runs under injected faults (02.2).

# %%
import inspect  # the standard library's: it reads a function's source
import time

from echomq_teach import jobs, keyspace, scripts, snapshots, start_node, transitions

node = start_node()
conn = node.connector()
raw = node.client()
Q = "lease"
# a classroom node keeps what an earlier run left: start this notebook's queues empty
for q in (Q, "fence", "ghosts", "paused", "twice"):
    jobs.drop(conn, q)
conn.clear_trace()  # the trace starts with the notebook's own calls

# %% [markdown]
# ## The handle: `claim/3` → `jobs.claim(conn, queue, lease_ms)`
#
# The course's `EchoMQ.Jobs.claim/3` is a thin handle around the script. The kit's Python twin does
# the same three things: refuse a lease that is not a positive integer, read the pause flag in its
# own round trip (the course's `paused?/2`, in Python `jobs.paused(conn, queue)`), and only then send
# `@claim2` with three keys and one argument. Here is the kit's code, read from the module itself:
# the handle, then the one place that builds claim's call (`transitions.claim`: every caller of
# claim in the kit sends what it builds, and a native node's connector sends its `EMQ.CLAIM`):

# %%
print(inspect.getsource(jobs.claim))
print(inspect.getsource(transitions.claim))

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
# its first line and its last. This body is the course page's own, line for line, as is the handle
# above; most other scripts in `lua/` are the kit's, written to what the page describes in prose
# (which is which: [`docs/decisions.md`](docs/decisions.md), "What is the page's, and what is the kit's").

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
# ### A key the script builds itself
#
# The id is known only after the pop, so the caller cannot declare the row's key: it names three keys
# — pending, active and the base `emq:{q}:` — and the script appends `job:<id>` to the base. Declared
# keys are what the server (and a cluster, and an ACL) is told the script touches; the row is not
# among them. It is still safe, because the base carries the queue's hashtag `{q}`: every key built
# from it hashes to the same cluster slot as the declared ones, so the row lives wherever the script
# runs. The server's own account of the claim's keys, and the slots:

# %%
from redis.crc import key_slot

claim_keys = [keyspace.queue_key(Q, k) for k in ("pending", "active", "")]
declared = raw.command_getkeys("EVALSHA", claim2.sha, 3, *claim_keys, 30000)
row_key = keyspace.job_key(Q, "JOB0KHTOWnGLuC")  # what the script builds after the pop
print("declared:", declared)
print("built:   ", row_key)
assert declared == claim_keys
assert {key_slot(k.encode()) for k in declared + [row_key]} == {key_slot(keyspace.base(Q).encode())}

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


job = jobs.enqueue(conn, Q, "watch the clock")  # ledger: server-clock
t0 = server_ms()
claimed = jobs.claim(conn, Q, 30_000)
t1 = server_ms()
deadline = int(raw.zscore(keyspace.queue_key(Q, "active"), job))
print("lease 30000 ms; deadline - lease lies within the claim's window:", t0 <= deadline - 30_000 <= t1)
assert t0 <= deadline - 30_000 <= t1

# %% [markdown]
# Why the server's clock? Because the deadline is read later by `@reap`, which also runs on the
# server. On one node, one clock stamps the lease and the same clock judges it, whatever the clocks of
# the workers say. That clock is the node's wall clock (`TIME`), so a step of it shortens or stretches
# every live lease: an NTP correction or a VM migration that moves it forward by five seconds makes each
# lease lapse five seconds early, and a sweep may take a job whose worker is still at it. After a
# failover another machine's clock judges it ([ledger](docs/guarantees.md#server-clock)).

# %% [markdown]
# ### 02.1 · Late, but not too late (predict before you read on)
#
# A lease has a deadline on the server's clock. What happens to a worker that comes back after it?
# Before the next sections show it, **predict**. One job, two workers, each taking a 30 ms lease and
# coming back 50 ms later:
#
# 1. worker A claims the job. Its lease lapses; no sweep runs. Then worker B asks for a job: does B's
#    claim get `"the job"`, or `"nothing"`?
# 2. A reap runs. Before anyone claims again, A comes back and completes with its own token: what does
#    that completion answer, `"ok"` or `"stale"` (`jobs.OK`, `jobs.STALE`)?
# 3. B claims the job: with which token (a number)?
# 4. B's lease lapses too, and no sweep runs. A completes with its own token again, then B with its own:
#    what does each completion answer?
#
# The check runs exactly that on your node, once your answer is kept.
# *Solution: `solutions/02_1_late_worker.py`.*
#
# A prediction is your answer itself, written as data: replace each `...`. Your **first** answer of the
# right form is kept and graded (it survives a kernel restart): think it through before you run the cell.

# %%
from echomq_teach.course import exercises  # noqa: E402

late_worker = {  # your prediction
    "B's claim, while A's lapsed lease is not swept": ...,
    "A completes, after a reap and before anyone claims again": ...,
    "B's token, when it claims after that": ...,
    "A completes, after B's lease lapsed too (no sweep since)": ...,
    "B completes, after A's try (no sweep since)": ...,
}
print(exercises.check("02.1", late_worker, conn))

# %% [markdown]
# ## Attempts is the fencing token
#
# A claim answers the new `attempts`. Suppose the worker stalls past its lease, a sweep returns the
# job to pending, and another worker claims it. What do the two workers' completions answer now? The
# cell shows the tokens and both answers, once 02.1 is kept.

# %% tags=["reveals:02.1"]
with exercises.reveals("02.1"):  # its output waits until 02.1 is committed
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
    unchanged = snapshots.snapshot(conn, Q2).state_only() == before.state_only()
    print("the first worker's late completion:", late, "· the queue unchanged by it:", unchanged)
    on_time = jobs.complete(conn, Q2, job, second.attempts)
    print("the second worker's completion:", on_time)

# %% [markdown]
# Nothing else guards the job: there is no lock to take and no heartbeat to keep renewing.
#
# ## At least once, and exactly once
#
# *Exactly once* would mean: whatever crashes, each job's handler runs one time and its effect is
# recorded one time. The queue cannot promise the first half. A handler runs in a worker, outside
# the node: when its lease lapses, the node cannot tell a dead worker from a slow one, and a sweep
# hands the job on. If the first worker was only slow, the handler has now run twice. What the queue
# can promise is the second half: **one settle per job in each of its lives**, on one node — the fence
# lets exactly one completion through ([ledger](docs/guarantees.md#one-settle-per-life); 07 shows
# a second life, and 09 a failover that breaks it). So: *at-least-once handler runs, exactly-once
# settles per life*. A handler whose effects must not
# repeat (a payment, an e-mail) makes them idempotent itself, for example keyed by the job's id.
#
# Two workers, one job, counted:

# %% tags=["reveals:02.1"]
with exercises.reveals("02.1"):  # its output waits until 02.1 is committed
    Q5 = "twice"  # ledger: one-settle-per-life
    jobs.drop(conn, Q5)
    job = jobs.enqueue(conn, Q5, "charge the card")
    handler_runs = 0
    slow = jobs.claim(conn, Q5, 50)
    handler_runs += 1  # the slow worker starts its handler ...
    time.sleep(0.08)  # ... and is still running when its lease lapses
    jobs.reap(conn, Q5)  # a sweep cannot tell slow from dead: back to pending
    fast = jobs.claim(conn, Q5, 30_000)
    handler_runs += 1  # a second worker runs the handler too
    settles = [jobs.complete(conn, Q5, job, fast.attempts, "charged"),
               jobs.complete(conn, Q5, job, slow.attempts, "ok")]
    s = snapshots.snapshot(conn, Q5)
    print("handler runs:", handler_runs, "· settles:", settles, "· completions counted:", s.completed)
    assert handler_runs == 2 and s.completed == 1

# %% [markdown]
# One more question for the fence: does it read the clock? A worker whose lease lapsed comes back
# before any sweep has touched its job:

# %% tags=["reveals:02.1"]
with exercises.reveals("02.1"):  # its output waits until 02.1 is committed
    late_job = jobs.enqueue(conn, "twice", "finished just past the deadline")
    late_claim = jobs.claim(conn, "twice", 30)
    time.sleep(0.05)
    lapsed = snapshots.snapshot(conn, "twice").relative("active", late_job) < 0
    late_answer = jobs.complete(conn, "twice", late_job, late_claim.attempts)
    print("lease lapsed:", lapsed, "· no sweep ran · the late completion:", late_answer)
    assert lapsed

# %% [markdown]
# ## The ghost guard
#
# A ghost is an id in pending with no row — left behind, say, by a hand-typed `ZADD`, or by a row
# deleted by hand (`DEL`) while its id stayed in pending. The claim pops it, finds no row, and
# answers empty **without minting one** — even when a real job waits right behind it. The claim does
# not go on to the next id: it answers empty, and the *next* claim takes the real job.

# %%
Q3 = "ghosts"
jobs.drop(conn, Q3)  # a re-run of this cell starts from an empty queue, as the first run did
real = jobs.enqueue(conn, Q3, "waiting behind a ghost")
raw.zadd(keyspace.queue_key(Q3, "pending"), {"JOB00000ghost0": 0})  # sorts before every minted id
before = snapshots.snapshot(conn, Q3)
ghost_claim = jobs.claim(conn, Q3, 30_000)
after = snapshots.snapshot(conn, Q3)
print("claim answered:", ghost_claim)
print("pending before:", before.pending, "after:", after.pending, "· rows after:", sorted(after.rows))
assert ghost_claim is None and after.pending == [real] and sorted(after.rows) == [real]
next_claim = jobs.claim(conn, Q3, 30_000)
print("the next claim:", next_claim.id == real)
assert next_claim.id == real

# %% [markdown]
# ### How a build is judged
#
# The next exercise is a **build**: you write a mechanism, and a judge runs it for real, under faults,
# on a node of its own. Three words for what the judge does (07 takes each of them apart):
#
# - it records every call its worker processes make, when it went out and what came back: a
#   **history**; the **checker** reads that history with the queue's final state and says *valid* or
#   *invalid* — a job lost, handed to two workers at once, or settled by a worker whose claim a later
#   claim replaced — and shows the calls that prove it (its *counterexample*);
# - a **nemesis** throws faults at the workers on a schedule drawn from a number, its **seed**: a kill
#   (`SIGKILL`: the worker is gone, its job held until the lease lapses) or a freeze (`SIGSTOP`, then
#   `SIGCONT`). The same seed draws the same schedule; the judge draws the seeds, not you;
# - a worker frozen past its lease wakes up still believing it holds its job: a **zombie**. Whatever
#   it sends next must be refused.
#
# Besides the runs, each judge calls your mechanism on a few cases whose answers are known, and after
# each call holds the queue to the table of notebook 01: every row in the one set its state names.
#
# ### Your own queue
#
# From here on you build a queue of your own beside the kit's, and grow it through the course: one Lua
# file for each transition you write, each run **in the place of** the kit's script, and later your
# consumer's beat. It lives in a folder of yours, `my_queue/`, beside these notebooks: open it in
# JupyterLab's file browser (the panel on the left) and edit its files in JupyterLab's editor. The cell
# below makes the folder, with a README, the first time; each stage copies its files in, a header and a
# body still to write, when they are not there yet (a file you wrote is never overwritten). The kit runs
# your scripts as it runs its own: the same keys, the same arguments, through the same connector, so its
# workers, its nemesis, its checker and its timelines drive your queue as they drive the kit's.
#
# Six stages, each where its idea is taught: 02.2 the claim and a renewal, 03.3 complete and retry,
# 03.6 recovery with a poison bound, 03.7 your consumer's beat, 05.2 a fan-in, and 10.4 the whole queue
# under notebook 10's faults, then its speed beside the kit's. A stage's check runs every earlier stage's
# checks again: the queue grows, and what it did keeps working. Stuck on a stage?
# `mine.load_reference("02.2")` puts its reference into your folder (yours is kept in
# `my_queue/replaced/`), and you go on.

# %%
from echomq_teach.course import my_queue

mine = my_queue.folder()  # my_queue/ beside the notebooks, made on first use
print(mine.begin("02.2"))  # stage 1's files, copied in from the starter when they are not there yet

# %% [markdown]
# ### 02.2 · Your queue, stage 1: claim and renew
#
# Two files. **`my_queue/claim.lua`** runs in the place of `@claim2`: its three keys (pending, active,
# the base), its one argument (the lease in milliseconds) and its reply (`{}`, or `{id, payload,
# attempts}`). It does what `@claim2` does — the oldest job, a token one more than any claim of it
# before, the deadline on the server's clock, the row active — with one difference: where `@claim2`
# answers empty at a ghost, yours drops the ghost and goes on to the next id, **at most ten ids a
# call**, so that it answers empty only when no job can be handed out within reach, and a pile of
# ghosts never holds the node for long.
#
# **`my_queue/renew.lua`** is a call the kit does not have, a **lease extension**: a handler that works
# longer than its lease asks the node, every so often, to push its deadline on (else a sweep takes the
# job and it runs twice). It takes `KEYS[1]`, the active set, and `KEYS[2]`, the job's row; `ARGV[1]`,
# the job's id, `ARGV[2]`, the caller's token, and `ARGV[3]`, the new lease in milliseconds. It answers
# `1` when it renewed: the deadline becomes the **server's clock now** plus the new lease. It answers
# `0`, and writes nothing, when the caller no longer holds the job. Who holds a job is the fence's
# question: the caller holds it exactly when `@complete`'s fence would let its completion through (02.1's
# run, and the cells after it, show which callers those are).
#
# The check starts a node of its own (not this notebook's). It calls your claim on cases whose answers
# are known (an empty queue, two jobs, two ghosts, eleven), records a zombie as a run records it
# (claimed, lapsed, swept, claimed again; the first worker completes late) and hands that history to the
# checker, then calls your renewal for six callers: four around a lease (the two that hold the job each
# ask a lease of their own), two after their handler's retry sent the job to schedule or to dead. Then,
# on two seeds it draws, three worker processes claim with **your** claim.lua and run handlers that work
# 2 s on a 1.5 s lease, renewing every 100 ms by **your** renew.lua, while a seeded nemesis freezes and
# kills them. It passes only when every answer is right and, on every seed, the checker finds the run
# valid, the queue keeps notebook 01's table, and your renewal kept the lease of every handler no fault
# touched. A Lua error comes back as a finding naming the file and the line; a failing run shows the
# checker's counterexample and draws the run's timeline. About ten seconds a check. *Reference:
# `solutions/my_queue/02_2/` (`mine.load_reference("02.2")`).*

# %%
exercises.check("02.2", mine)

# %% [markdown]
# ## Pause
#
# A paused queue holds its claims. `claim/3` reads the flag `emq:{q}:paused` host-side, in its own
# round trip, and answers `:empty` without ever sending the script: pending is left untouched.

# %%
Q4 = "paused"
jobs.drop(conn, Q4)  # a re-run of this cell starts from an empty queue, as the first run did (and unpaused)
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
# What a pause holds, and what it leaves alone. The flag is read by the claim and by nothing else, so
# a pause stops new hand-outs only. Three jobs of a queue that is paused mid-flight: one running, one
# whose worker vanished (a 50 ms lease), one that failed and is due again soon:

# %%
Q4b = "paused-mid-flight"
jobs.drop(conn, Q4b)
running, vanished, failed = (jobs.enqueue(conn, Q4b, p) for p in ("running", "vanished", "failed once"))
got_running = jobs.claim(conn, Q4b, 30_000)
jobs.claim(conn, Q4b, 50)  # its worker is gone: the lease will lapse
got_failed = jobs.claim(conn, Q4b, 30_000)
jobs.retry(conn, Q4b, failed, got_failed.attempts, "fails once", 50)  # due again 50 ms from now
jobs.pause(conn, Q4b)
time.sleep(0.1)  # the lease lapses and the retry comes due, both while the queue is paused
settled = jobs.complete(conn, Q4b, running, got_running.attempts)
reaped, promoted = jobs.reap(conn, Q4b), jobs.promote(conn, Q4b)
s = snapshots.snapshot(conn, Q4b)
print("the running job settles:", settled, "· reap:", reaped == [vanished], "· promote:", promoted == [failed])
print("pending while paused:", len(s.pending), "jobs · a claim answers:", jobs.claim(conn, Q4b, 30_000))
assert settled == jobs.OK and reaped == [vanished] and promoted == [failed]
assert sorted(s.pending) == sorted([vanished, failed]) and jobs.claim(conn, Q4b, 30_000) is None
assert jobs.resume(conn, Q4b) is True

# %% [markdown]
# A pause holds the claims, and only them: a job already active runs on and settles; a lapsed lease is
# reaped back into pending, and a due retry is promoted into pending, where both wait for the resume.
#
# The counted stall sweep (notebook 03 teaches it: a sweep that also counts each job's lapses, and
# buries a job that lapses more than `max_stalled` times) goes on as well. A pause does not stop the
# count, nor shield a job from burial. Two jobs claimed before the pause, whose workers both vanish;
# one of them had already lost a worker once:

# %%
from echomq_teach import stalled

Q4c = "paused-and-swept"
jobs.drop(conn, Q4c)  # a re-run of this cell starts from an empty queue, as the first run did
twice, once = (jobs.enqueue(conn, Q4c, p) for p in ("vanished twice", "vanished once"))
jobs.claim(conn, Q4c, 20)  # 'vanished twice' loses its first worker before the pause ...
time.sleep(0.03)
assert stalled.check(conn, Q4c, max_stalled=1).requeued == [twice]  # ... a stall counted: 1
for _ in range(2):
    jobs.claim(conn, Q4c, 50)  # both are claimed, and both workers vanish
jobs.pause(conn, Q4c)
time.sleep(0.08)  # both leases lapse while the queue is paused
swept = stalled.check(conn, Q4c, max_stalled=1)
s = snapshots.snapshot(conn, Q4c)
print("swept while paused: requeued", [s.rows[j]["payload"] for j in swept.requeued],
      "· buried", [s.rows[j]["payload"] for j in swept.dead])
print("stall counts:", {s.rows[j]["payload"]: s.rows[j]["stalled"] for j in (twice, once)},
      "· a claim answers:", jobs.claim(conn, Q4c, 30_000))
assert swept.requeued == [once] and swept.dead == [twice] and s.rows[twice]["last_error"] == "stalled"
assert (s.rows[once]["stalled"], s.rows[twice]["stalled"]) == ("1", "2") and s.pending == [once]
assert jobs.claim(conn, Q4c, 30_000) is None and jobs.resume(conn, Q4c) is True

# %% [markdown]
# The sweep counted both lapses during the pause: one job waits in pending with its first stall, the
# other went over `max_stalled` and lies in dead. So a long pause is no rest for a job whose workers
# vanish; and the pause itself holds only on the node that took it
# ([ledger](docs/guarantees.md#pause-holds-claims)).
#
# `claim/3` reads the flag in a round trip of its own before it sends `@claim2`, so on wire 4 a pause
# that lands between the two does not stop that claim; `04-two-executors.ipynb` plays that window step
# by step, and shows the native command closing it.

# %% [markdown]
# ### 02.3 · Empty, yet not empty (diagnose and repair)
#
# A colleague says: "there is a job in pending, I can see it with `ZRANGE`, and every claim answers
# `None`". The check builds that queue and hands you the job's id; another job waits behind it, and
# is somebody else's to claim. **Diagnose** why the claims come back empty, **repair** the queue so
# that no claim after yours meets the same trouble, without deleting or re-enqueueing a job, and
# return a pair: the ids you found in pending that are no job, and the claim that finally hands the
# job out. *Solution: `solutions/02_3_empty_yet_not.py`.*

# %%
def empty_yet_not(conn, queue, job_id):
    # your code here
    raise NotImplementedError


print(exercises.check("02.3", empty_yet_not, conn))

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
# ## Recap
#
# - `claim/3` refuses a bad lease, reads the pause flag host-side, then sends `@claim2`.
# - `@claim2` pops the oldest id, guards against ghosts, moves the token, and stamps the deadline
#   from the server's `TIME`.
# - The lease lives in the active score, the fencing token in `attempts`: one holder per lease on one
#   node ([ledger](docs/guarantees.md#one-holder-per-lease)), a handler that may run more than once,
#   one settle per job in each life ([ledger](docs/guarantees.md#one-settle-per-life)) — and what
#   the fence makes of a late worker (02.1).
# - The row key is built inside the script from the declared base, in the same slot.
# - Your queue began in `my_queue/`: a claim that goes past ghosts, and a renewal only while the job is
#   yours (02.2).
#
# Next: **03-completion-and-recovery** — how a claimed job ends: completed, failed and retried, or
# recovered from a worker that vanished.


# %% [markdown]
# ## Check yourself
#
# Each question is answered by this notebook's own cells: run them again, read their traces and the
# scripts they print. Nothing grades these; the section a question comes from holds its answer.
#
# 1. Which clock stamps a lease's deadline and which judges it, and what happens to every live lease
#    when that clock steps forward by five seconds?
# 2. A worker's lease has lapsed. When does its completion still pass, and when is it answered
#    stale? What does the fence compare?
# 3. What does a lease leave unpromised about how often the handler runs, what does the queue promise
#    instead, and on what set-up?
# 4. A queue is paused with jobs in flight. What still happens to an active job, a lapsed lease, a
#    due retry and the stall count, and what does a claim answer?
# 5. What does a claim do with a ghost at the head of pending, and what does the next claim do?

# %% [markdown]
# ## Further reading
#
# - [Gray and Cheriton, *Leases* (SOSP 1989)][r1]: where the lease comes from: a grant that runs out on
#   its own, so a holder that vanishes cannot block the rest.
# - [Kleppmann, *How to do distributed locking* (2016)][r2]: why a lock needs a fencing token, and what
#   goes wrong with clocks and pauses.
# - [`HINCRBY`][r3]: the increment that moves the token inside the claim.
# - [`TIME`][r4]: the clock the claim reads inside the script.
#
# [r1]: https://dl.acm.org/doi/10.1145/74850.74870
# [r2]: https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html
# [r3]: https://valkey.io/commands/hincrby/
# [r4]: https://valkey.io/commands/time/

# %% [markdown]
# ## When you are done
#
# The nodes the kit started for this notebook stop with its kernel (a classroom's shared node stays
# up), so there is nothing to stop by hand: when you leave, shut the kernel down (**Kernel → Shut
# Down Kernel**). Until then the widgets above keep working, even after **Run All** — each click is
# still a real call.
