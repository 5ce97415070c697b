# %% [markdown]
# # The Queue · 03 — completion and recovery
#
# A claimed job ends in one of three ways: the worker completes it, the worker reports an error,
# or the worker vanishes. Each has its own script, and each is fenced by the token.
#
# **Goals**
#
# 1. Complete a job, and watch the token fence refuse a completion that is not the current one.
# 2. Walk the failure fork: retry → schedule → promote → claim → dead, with `last_error`.
# 3. Recover a vanished worker's job with a reap — a client sweep, nothing automatic.
# 4. Run a consumer that does all of this in a loop, and plot the sets while it works.

# %%
import time

from echomq_teach import inspect, jobs, scripts, start_node

node = start_node()
conn = node.connector()
Q = "recovery"

# %% [markdown]
# ## complete — `complete/5` → `@complete`
#
# Here is the whole script. Read the first lines closely: the **token fence**. The completion passes
# only when the row's `attempts` still equals the token the worker was handed *and* the row is still
# `active`. Anything else answers `0` — stale — and nothing is written. (The branch in the middle is
# the fan-in for flows, notebook 05.)

# %%
print(scripts.show("complete"))

# %%
job = jobs.enqueue(conn, Q, "finish me")
c = jobs.claim(conn, Q, 30_000)
before = inspect.snapshot(conn, Q)
wrong = jobs.complete(conn, Q, job, c.attempts + 1)  # a token nobody was given
unchanged = inspect.snapshot(conn, Q).state_only() == before.state_only()
right = jobs.complete(conn, Q, job, c.attempts)
again = jobs.complete(conn, Q, job, c.attempts)  # a redelivered completion
print("wrong token:", wrong, "· state unchanged:", unchanged)
print("right token:", right, "· the same completion again:", again)
assert (wrong, unchanged, right, again) == (jobs.STALE, True, jobs.OK, jobs.STALE)

# %% [markdown]
# ## The failure fork — `retry/7` → `@retry`
#
# A handler that fails makes the worker call retry, with a reason, a delay and a cap on attempts.
# While the row's `attempts` (how often it has been claimed) is under the cap, the job waits on the
# **schedule** set until now + delay — hidden from claims for a while, not queued anywhere else.
# Once `attempts` reaches the cap, the job goes to **dead**, keeping the reason as `last_error`.

# %%
print(scripts.show("retry"))

# %% [markdown]
# A job with a cap of 2 attempts. The first claim fails:

# %%
Q2 = "fork"
job = jobs.enqueue(conn, Q2, "flaky")
first = jobs.claim(conn, Q2, 30_000)
reason = "timeout talking to the mailer"
outcome = jobs.retry(conn, Q2, job, first.attempts, reason, delay_ms=300, max_attempts=2)
s = inspect.snapshot(conn, Q2)
print(outcome, "·", s.where(job), "· row state", s.state(job),
      "· last_error", s.rows[job]["last_error"])
assert outcome == jobs.SCHEDULED and s.where(job) == ["schedule"]
assert 0 < s.relative("schedule", job) <= 300

# %% [markdown]
# The job does not come back on its own. **promote/3** moves due schedule members back to pending —
# but only once their score has passed, and only when a client calls it:

# %%
print("promote before the run-at:", jobs.promote(conn, Q2))
time.sleep(0.35)
print("promote after the run-at: ", jobs.promote(conn, Q2) == [job])
assert inspect.snapshot(conn, Q2).where(job) == ["pending"]

# %% [markdown]
# The second claim moves the token to 2 — the cap — and the second failure buries the job:

# %%
second = jobs.claim(conn, Q2, 30_000)
outcome = jobs.retry(conn, Q2, job, second.attempts, "mailer still down", delay_ms=300, max_attempts=2)
s = inspect.snapshot(conn, Q2)
print(outcome, "·", s.where(job), "· attempts", s.rows[job]["attempts"],
      "· last_error", s.rows[job]["last_error"])
assert (outcome, s.where(job), s.rows[job]["attempts"]) == (jobs.DEAD, ["dead"], "2")
assert s.rows[job]["last_error"] == "mailer still down"

# %% [markdown]
# A dead job stays until an operator acts: **reprocess** sends it back to pending with attempts reset,
# **remove** deletes it, and **trim_dead** keeps only the newest N (trimming deletes; it does not archive).

# %%
jobs.reprocess(conn, Q2, job)
s = inspect.snapshot(conn, Q2)
print("after reprocess:", s.where(job), "· attempts", s.rows[job]["attempts"])
assert s.where(job) == ["pending"] and s.rows[job]["attempts"] == "0"

# %% [markdown]
# ## Recovery — `reap/2` → `@reap`
#
# Now let the worker die mid-job. No completion comes, and no retry. Its deadline passes — the
# server clock moves beyond the active score — and still **nothing moves**: the id sits in active
# until some client runs a reap.

# %%
print(scripts.show("reap"))

# %%
Q3 = "crash"
job = jobs.enqueue(conn, Q3, "the worker dies holding this")
crashed = jobs.claim(conn, Q3, 50)
time.sleep(0.1)
s = inspect.snapshot(conn, Q3)
print("lease lapsed:", s.relative("active", job) < 0, "· still in", s.where(job))
assert s.where(job) == ["active"] and s.relative("active", job) < 0

# %%
reaped = jobs.reap(conn, Q3)
s = inspect.snapshot(conn, Q3)
print("reaped:", reaped == [job], "· now in", s.where(job),
      "· attempts unchanged:", s.rows[job]["attempts"])
assert s.where(job) == ["pending"] and s.rows[job]["attempts"] == "1"

# %% [markdown]
# The next claim moves the token, so the crashed worker — should it wake up — is refused:

# %%
rescuer = jobs.claim(conn, Q3, 30_000)
print("the crashed worker's late completion:", jobs.complete(conn, Q3, job, crashed.attempts))
print("the rescuer's completion:", jobs.complete(conn, Q3, job, rescuer.attempts))
assert rescuer.attempts == 2

# %% [markdown]
# One reap returns **at most 100** lapsed leases, so a sweep never holds the node for long:

# %%
Q4 = "many"
for i in range(150):
    jobs.enqueue(conn, Q4, f"job {i}")
for _ in range(150):
    jobs.claim(conn, Q4, 20)
time.sleep(0.05)
sweeps = [len(jobs.reap(conn, Q4)), len(jobs.reap(conn, Q4)), len(jobs.reap(conn, Q4))]
print("three sweeps moved:", sweeps)
assert sweeps == [100, 50, 0]

# %% [markdown]
# ## A consumer at work
#
# A **Consumer** is the client loop that makes all of this happen. Each beat it promotes, reaps (its
# recovery leg), claims, runs your handler, and completes — or retries with its fixed
# `retry_delay_ms` (1 000 ms by default) when the handler raises or returns `Error(reason)`.
#
# Below, a handler fails every third job once. The counter plot samples the four sets as the
# consumer drains 30 jobs.

# %%
from echomq_teach.consumer import Consumer, Error

Q5 = "work"
failed_once: set[str] = set()


def handler(job):
    n = int(job.payload.split()[-1])
    if n % 3 == 0 and job.id not in failed_once:
        failed_once.add(job.id)
        return Error("every third job fails once")
    return f"done {n}"


for i in range(30):
    jobs.enqueue(conn, Q5, f"job {i}")
consumer = Consumer(conn, Q5, handler, retry_delay_ms=200)
assert consumer.retry_delay_ms == 200 and Consumer(conn, Q5, handler).retry_delay_ms == 1_000

# %%
import threading

from echomq_widgets import CounterPlot

plot = CounterPlot(x="time", title="the work queue while one consumer drains it")
runs = []
worker = threading.Thread(target=lambda: runs.append(consumer.run(timeout=20, until_idle=True)))
worker.start()
plot.watch(conn, Q5, seconds=20, interval=0.05, until=lambda: not worker.is_alive())
worker.join()
report = runs[0]
print(report.stopped_by, report.outcomes)
plot

# %%
s = inspect.snapshot(conn, Q5)
assert report.outcomes == {"ok": 30, "scheduled": 10} and s.total() == 0 and s.completed == 30
print("all 30 settled; 10 of them after one retry")

# %% [markdown]
# ## Exercises
#
# ### 03.1 · Into the morgue
#
# One job waits in pending. Send it to dead with a cap of 2 attempts: claim, retry, promote once it
# is due, claim, retry. The check wants it in dead with attempts 2 and a `last_error`.

# %%
from echomq_teach import exercises


def into_the_morgue(conn, queue, job_id):
    # your code here
    raise NotImplementedError


print(exercises.check("03.1", into_the_morgue, conn))

# %% [markdown]
# ### 03.2 · Recover a crashed worker's job
#
# The check claims a job with a 50 ms lease and walks away (the worker "crashed"). Bring the job back
# and complete it properly.

# %%
def recover(conn, queue, job_id, old_token):
    # your code here
    raise NotImplementedError


print(exercises.check("03.2", recover, conn))

# %% [markdown]
# ## Recap
#
# - `@complete` is fenced: the token must match and the row must be active, or it is stale and
#   writes nothing.
# - `@retry` parks below the cap (schedule at now + delay) and buries at the cap (dead, `last_error`).
# - Nothing moves on its own: promote and reap are client calls — a consumer makes them every beat.
#
# Next: **04-two-executors** — the same claim, as one native command.


# %% [markdown]
# ## When you are done
#
# The nodes the kit started for this notebook stop with its kernel (a classroom's shared node stays
# up), so there is nothing to stop by hand: when you leave, shut the kernel down (**Kernel → Shut
# Down Kernel**). Until then the widgets above keep working, even after **Run All** — each click is
# still a real call.
