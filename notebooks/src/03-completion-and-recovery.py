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
# 3. Recover a vanished worker's job with a reap — a client sweep, nothing automatic — or with the
#    counted stall sweep, which buries a job that keeps stalling.
# 4. Run a consumer that does all of this in a loop, and plot the sets while it works; see who calls
#    promote and the sweeps in a pool.
# 5. Watch a poison job loop for ever under the default recovery leg, `reap`, and be buried under the
#    counted sweep, `stalled`; choose between the two.
# 6. See what a full node answers.
# 7. Grow your queue (`my_queue/`): complete and retry, fenced, with a backoff and a job's own cap
#    (03.3); a recovery that stops a poison job (03.6); your consumer's beat (03.7). The checker judges
#    each under faults.

# %%
import time
from pathlib import Path

from echomq_teach import jobs, scripts, snapshots, start_node

node = start_node()
conn = node.connector()
Q = "recovery"
# a classroom node keeps what an earlier run left: start this notebook's queues empty
for q in (Q, "fork", "morgue", "crash", "many", "stalls", "work", "pool"):
    jobs.drop(conn, q)
conn.clear_trace()  # the trace starts with the notebook's own calls

# %% [markdown]
# ## complete — `complete/5` → `@complete`
#
# Here is the whole script: its own lines first, then the shared helpers it includes. Past the
# argument checks (every check comes before the first write), read the **token fence** closely. The
# completion passes
# only when the row's `attempts` still equals the token the worker was handed *and* the row is still
# `active`. Anything else answers `0` — stale — and nothing is written. (The branch in the middle is
# the fan-in for flows, notebook 05.)

# %%
print(scripts.show("complete"))

# %%
job = jobs.enqueue(conn, Q, "finish me")
c = jobs.claim(conn, Q, 30_000)
before = snapshots.snapshot(conn, Q)
wrong = jobs.complete(conn, Q, job, c.attempts + 1)  # a token nobody was given
unchanged = snapshots.snapshot(conn, Q).state_only() == before.state_only()
right = jobs.complete(conn, Q, job, c.attempts)
again = jobs.complete(conn, Q, job, c.attempts)  # a redelivered completion
print("wrong token:", wrong, "· state unchanged:", unchanged)
print("right token:", right, "· the same completion again:", again)
assert (wrong, unchanged, right, again) == (jobs.STALE, True, jobs.OK, jobs.STALE)

# %% [markdown]
# ## The failure fork — `retry/7` → `@retry`
#
# A handler that fails makes the worker call retry — in Python
# `jobs.retry(conn, queue, job_id, token, reason, delay_ms, max_attempts)` — with a reason, a delay
# and a cap on attempts.
# While the row's `attempts` (how often it has been claimed) is under the cap, the job waits on the
# **schedule** set until now + delay — hidden from claims for a while, not queued anywhere else.
# Once `attempts` reaches the cap, the job goes to **dead**, keeping the reason as `last_error`.
#
# The listing ends with four helpers the node runs spliced in where the file says `-- @include …`
# (they live in `lua/includes/`): `args` and `types` check the arguments and the keys' types before
# the first write; `same_flow` and `child_death` only matter for a flow's child (notebook 05). The
# retry itself starts at `local p = ARGV[6]`.

# %%
print(scripts.show("retry"))
on_disk = (Path(scripts.__file__).parent / "lua" / "retry.lua").read_text()
assert "-- @include child_death" in on_disk and "local function child_death" in scripts.show("retry")

# %% [markdown]
# A job with a cap of 2 attempts. The first claim fails:

# %%
Q2 = "fork"
job = jobs.enqueue(conn, Q2, "flaky")
first = jobs.claim(conn, Q2, 30_000)
reason = "timeout talking to the mailer"
outcome = jobs.retry(conn, Q2, job, first.attempts, reason, delay_ms=300, max_attempts=2)
s = snapshots.snapshot(conn, Q2)
print(outcome, "·", s.where(job), "· row state", s.state(job),
      "· last_error", s.rows[job]["last_error"])
assert outcome == jobs.SCHEDULED and s.where(job) == ["schedule"]
assert s.state(job) == "scheduled" and s.rows[job]["last_error"] == reason
assert 0 < s.relative("schedule", job) <= 300

# %% [markdown]
# Nothing brings the job back by itself. **promote/3** (`jobs.promote`) is the call that does it:
# it moves the schedule members whose run-at has come back to pending. Called too early it moves
# nothing; called after the run-at, it moves the job:

# %%
early = jobs.promote(conn, Q2)
print("promote before the run-at:", early)
assert early == [] and snapshots.snapshot(conn, Q2).where(job) == ["schedule"]
time.sleep(0.35)
print("promote after the run-at: ", jobs.promote(conn, Q2) == [job])
s = snapshots.snapshot(conn, Q2)
assert s.where(job) == ["pending"] and s.state(job) == "pending"

# %% [markdown]
# The second claim moves the token to 2 — the cap — and the second failure buries the job:

# %%
second = jobs.claim(conn, Q2, 30_000)
outcome = jobs.retry(conn, Q2, job, second.attempts, "mailer still down", delay_ms=300, max_attempts=2)
s = snapshots.snapshot(conn, Q2)
print(outcome, "·", s.where(job), "· attempts", s.rows[job]["attempts"],
      "· last_error", s.rows[job]["last_error"])
assert (outcome, s.where(job), s.rows[job]["attempts"]) == (jobs.DEAD, ["dead"], "2")
assert s.rows[job]["last_error"] == "mailer still down"

# %% [markdown]
# A dead job stays until an operator acts: **reprocess** sends it back to pending for a new life,
# **remove** deletes it, and **trim_dead** keeps only the newest N dead jobs and deletes the others
# for good — nothing is archived. Reprocess does not reset `attempts`: it is the token's counter, so
# the next claim's token is one no earlier claim had, and a worker from the first life that wakes up
# late is refused. The row records `prior_attempts` instead, and the cap counts only this life's claims.

# %%
jobs.reprocess(conn, Q2, job)
s = snapshots.snapshot(conn, Q2)
print("after reprocess:", s.where(job), "· attempts", s.rows[job]["attempts"],
      "· prior_attempts", s.rows[job]["prior_attempts"])
assert s.where(job) == ["pending"] and s.rows[job]["attempts"] == s.rows[job]["prior_attempts"] == "2"
third = jobs.claim(conn, Q2, 30_000)
print("next claim's token:", third.attempts, "· the first life's token 1 →",
      jobs.complete(conn, Q2, job, 1, "late"))
assert third.attempts == 3 and jobs.complete(conn, Q2, job, 1, "late") == jobs.STALE

# %% [markdown]
# ### 03.1 · Who can still settle it? (diagnose)
#
# Each exercise's check builds a fresh queue on your node, judges your function there, and says what
# is not yet true; after a try that did not pass, `exercises.hint("03.1")` (with the exercise's number) gives a
# hint. Solutions: `solutions/`, one per file — try first.
#
# The jobs of an invoice queue, each with a worker that went quiet holding a token and may wake up at
# any moment. Their stories differ, and each check deals them afresh: deaths and reprocesses, an
# operator who removed a job and enqueued it again under its own id, retries and promotes, leases that
# lapsed, with or without a reap since. The check builds that queue and hands you `late`, a dict from
# each job's id to the token its quiet worker holds. **Diagnose**, from the rows alone, whose completion
# the node would accept if that worker woke up now, and return the set of those ids. Read, do not try:
# the check wakes the workers itself, afterwards, and refuses a function that writes while it runs,
# even to a copy (on a node of your own; on a classroom's shared node it compares what is left
# behind). *Solution: `solutions/03_1_who_can_still_settle.py`.*

# %%
from echomq_teach.course import exercises  # noqa: E402


def who_can_still_settle(conn, queue, late):
    # your diagnosis here: a set of job ids
    raise NotImplementedError


print(exercises.check("03.1", who_can_still_settle, conn))

# %%
Q6 = "morgue"
buried = []
for i in range(3):
    jobs.enqueue(conn, Q6, f"hopeless {i}")
    c = jobs.claim(conn, Q6, 30_000)
    assert jobs.retry(conn, Q6, c.id, c.attempts, "no luck", max_attempts=1) == jobs.DEAD
    buried.append(c.id)
trimmed = jobs.trim_dead(conn, Q6, keep=1)
s = snapshots.snapshot(conn, Q6)
print("trim_dead(keep=1) deleted the two oldest deaths:", trimmed == buried[:2], "· dead now:", len(s.dead))
assert trimmed == buried[:2] and s.dead == buried[2:]
assert not set(trimmed) & set(s.rows)  # their rows went with them
assert jobs.remove(conn, Q6, buried[2]) is True
s = snapshots.snapshot(conn, Q6)
print("remove took the last one: sets", s.sizes(), "· rows", len(s.rows))
assert s.total() == 0 and not s.rows

# %% [markdown]
# ## Recovery — `reap/2` → `@reap`
#
# Now let the worker die mid-job: it will never complete the job, and never retry it either. Wait until
# the server's clock is past the active score. The lease has run out, yet the queue does not react:
# **the id is still in active**, and it stays there until a client calls `reap/2` (`jobs.reap`). A job
# comes back from a crashed worker only while somebody sweeps
# ([ledger](docs/guarantees.md#at-least-once-runs)). Its listing ends with the two helpers spliced in
# where it says `-- @include …`: `types`, and `back_to_pending`, which `@promote` shares.

# %%
print(scripts.show("reap"))

# %%
Q3 = "crash"
job = jobs.enqueue(conn, Q3, "the worker dies holding this")
crashed = jobs.claim(conn, Q3, 50)
time.sleep(0.1)
s = snapshots.snapshot(conn, Q3)
print("lease lapsed:", s.relative("active", job) < 0, "· still in", s.where(job))
assert s.where(job) == ["active"] and s.relative("active", job) < 0

# %%
reaped = jobs.reap(conn, Q3)
s = snapshots.snapshot(conn, Q3)
print("reaped:", reaped == [job], "· now in", s.where(job),
      "· attempts unchanged:", s.rows[job]["attempts"])
assert s.where(job) == ["pending"] and s.rows[job]["attempts"] == "1"

# %% [markdown]
# Should the crashed worker wake up now, its completion is already refused: `attempts` still reads 1,
# its token, but the row is `pending`, not `active`, and the fence wants both. The next claim then
# moves the token to 2, so the refusal holds whatever happens next:

# %%
woke_early = jobs.complete(conn, Q3, job, crashed.attempts)
rescuer = jobs.claim(conn, Q3, 30_000)
woke_late = jobs.complete(conn, Q3, job, crashed.attempts)
print("the crashed worker's completion, before and after the new claim:", woke_early, woke_late)
rescued = jobs.complete(conn, Q3, job, rescuer.attempts)
print("the rescuer's completion:", rescued)
assert (woke_early, rescuer.attempts, woke_late, rescued) == (jobs.STALE, 2, jobs.STALE, jobs.OK)

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
# ### 03.2 · Recovered by hand (repair)
#
# Three workers crashed, each holding a job. Before any sweep ran, a colleague "recovered" the three
# by hand, `ZREM` from active and `ZADD` to pending at 0, and here and there wrote a field of the row
# as well. "They're back in pending, so they're fine." The check builds that queue and hands you
# `crashed`, a dict from each job's id to the token its crashed worker holds. **Repair** what the
# hand-made recoveries left wrong, so that each job waits in pending for its next worker, its row
# telling the truth about it, and its crashed worker, should it wake up now or after the next claim,
# can no longer complete it. Do not complete a job: its work was never done. The check then wakes
# the crashed workers, and claims.
# *Solution: `solutions/03_2_recovered_by_hand.py`.*

# %%
def recovered_by_hand(conn, queue, crashed):
    # your code here
    raise NotImplementedError


print(exercises.check("03.2", recovered_by_hand, conn))

# %% [markdown]
# ### 03.3 · Your queue, stage 2: complete and retry
#
# Your queue settles now: two more files in `my_queue/` (the cell below copies their starters in).
#
# - **`complete.lua`** runs in the place of `@complete`, with its keys and arguments for a plain job (a
#   flow child comes in notebook 05): `KEYS[1]` active, `KEYS[2]` the row; `ARGV[1]` the id, `ARGV[2]` the
#   token, `ARGV[3]` the base `emq:{q}:`, `ARGV[4]` the parent's id (`''`), `ARGV[5]` the result, and the
#   kit's optional `ARGV[6]`, the record flag. It answers `1` when this call completed the job: out of
#   active, its one ending recorded on the completions stream, `ARGV[3] .. 'stream:completions'` (fields
#   `id`, `outcome` `completed`, `attempts` the token, `result`), when `ARGV[6]` is `'1'`, and its row
#   deleted.
# - **`retry.lua`** runs in the place of `@retry`: `KEYS[1]` active, `[2]` schedule, `[3]` dead, `[4]` the
#   row; `ARGV[1]` the id, `[2]` the token, `[3]` delay_ms, `[4]` max_attempts, `[5]` the reason, `[6]` the
#   base, `[7]` the parent's id, `[8]` the record flag. Below the cap it parks the job in schedule, its row
#   `scheduled` with the reason as `last_error`, and answers `'scheduled'`; at the cap it buries the job
#   in dead (scored with the server's now), its row `dead` with `last_error`, records its ending when
#   asked (`outcome` `dead`, `attempts` the token, `error` the reason), and answers `'dead'`.
#
# Both are fenced as `@complete` is: a caller whose token is not the row's attempts, or whose job is no
# longer active, gets `0`, and nothing is written. Your retry differs from the kit's twice. Its delay
# **doubles** with each try of the job's life: after the n-th try of this life failed, the next waits
# `delay_ms · 2^(n-1)`, n being the row's attempts less its `prior_attempts` (which a reprocess sets). And
# a job whose row carries a **`max_attempts` of its own** (its producer set it) is held to that cap, not
# the caller's.
#
# The check runs stage 1's checks again, then calls your two scripts on cases whose answers are known: a
# zombie recorded as a run records it (claimed, swept back, claimed again; the first worker retries and
# completes late, the second completes, twice) and handed to the checker; a worker that wakes after a sweep,
# before any claim, and settles; completions with and without the record flag; one job's way through its
# backoff to dead; a job's own cap; a new life after a reprocess. Then, on two seeds it draws, three worker
# processes drain jobs that fail once or twice before they work, and two that always fail under a cap of
# their own, while a seeded nemesis freezes one worker past its lease and kills another. It passes only when
# every answer is right and, on every seed, the checker says valid, the queue keeps notebook 01's table, no
# job was claimed again before its backoff was over, and every job ended as its cap says. About fifteen
# seconds a check.

# %%
from echomq_teach.course import my_queue

mine = my_queue.folder()  # my_queue/ beside the notebooks
print(mine.begin("03.3"))

# %% [markdown]
# Write them in JupyterLab's editor, then run the check. *Reference: `solutions/my_queue/03_3/`
# (`mine.load_reference("03.3")`).*

# %%
exercises.check("03.3", mine)

# %% [markdown]
# ## The counted sweep — `Stalled.check/3` → `@stalled_check`
#
# A reap forgives every lapse. A job whose handler kills its worker every time (a poison message)
# would be reaped and claimed again forever. The **counted stall sweep** — in Python
# `stalled.check(conn, queue, max_stalled)` — does what reap does, and counts: each lapsed lease adds
# one to the row's `stalled` field, and a job that stalls **more than** `max_stalled` times is buried
# in dead with `last_error` "stalled". It too returns at most 100 lapsed leases per call, and it too
# runs only when a client calls it. A consumer (the client loop further on) picks its recovery leg:
# `reap` (the default) or `stalled` (`Consumer(…, recovery="stalled", max_stalled=…)`).

# %%
from echomq_teach import stalled

print(scripts.show("stalled_check"))

# %% [markdown]
# A job whose workers keep dying, with a cap of one stall:

# %%
Q7 = "stalls"
poison = jobs.enqueue(conn, Q7, "kills every worker that takes it")
rounds = []
for _ in range(2):
    jobs.claim(conn, Q7, 20)  # the worker dies holding it
    time.sleep(0.03)
    report = stalled.check(conn, Q7, max_stalled=1)
    s = snapshots.snapshot(conn, Q7)
    rounds.append((s.where(poison), s.rows[poison].get("stalled")))
    print("requeued", len(report.requeued), "· buried", len(report.dead), "· now in", s.where(poison),
          "· stalled", s.rows[poison].get("stalled"))
assert rounds == [(["pending"], "1"), (["dead"], "2")]
assert snapshots.snapshot(conn, Q7).rows[poison]["last_error"] == "stalled"

# %% [markdown]
# ### 03.4 · Predict the counted sweep (predict)
#
# One job waits in pending, and five rounds come. In each, a worker claims whatever is at the head, and:
#
# 1. the worker dies holding it (a 20 ms lease); once the lease has lapsed, a stall sweep runs;
# 2. the worker dies holding it; once the lease has lapsed, a plain **reap** runs;
# 3. the handler fails: a retry (due 1 ms later, 10 attempts allowed), then a promote;
# 4. the worker dies holding it; a stall sweep;
# 5. the worker dies holding it; a stall sweep.
#
# Every stall sweep is `stalled.check(conn, queue, max_stalled=2)`. **Predict**, without running
# anything: where is the job after each round (`"pending"`, `"active"`, `"dead"` or `"nowhere"`), and
# what is its `stalled` count at the end (a number)? Only once your answer is kept does the check build
# that queue and run the five rounds. *Solution: `solutions/03_4_predict_the_sweep.py`.*
#
# A prediction is your answer itself, written as data: replace each `...`. Your **first** answer of the
# right form is kept and graded (it survives a kernel restart): think it through before you run the cell.

# %%
predict_the_sweep = {  # your prediction
    "where after each round": [..., ..., ..., ..., ...],
    "stalled count at the end": ...,
}
print(exercises.check("03.4", predict_the_sweep, conn))

# %% [markdown]
# The sweep counts lapses, and a lapse is all it sees: it cannot tell a worker that died from one that
# is still at work past its lease. To the counted sweep, a healthy job whose handler takes longer than
# its lease looks like a poison message. Two workers in turn, each still busy when the sweep comes:

# %%
Q7b = "slow-but-healthy"
jobs.drop(conn, Q7b)
slow = jobs.enqueue(conn, Q7b, "needs a second, leased for 20 ms")
holders = []
for _ in range(2):
    holders.append(jobs.claim(conn, Q7b, 20))  # a worker starts the job and is still at it ...
    time.sleep(0.03)
    stalled.check(conn, Q7b, max_stalled=1)  # ... when the sweep finds its lease lapsed
s = snapshots.snapshot(conn, Q7b)
finished = [jobs.complete(conn, Q7b, slow, h.attempts) for h in holders]  # both finish their work
print("now in", s.where(slow), "·", s.rows[slow]["last_error"], "· the two workers' settles:", finished)
assert s.where(slow) == ["dead"] and s.rows[slow]["last_error"] == "stalled"
assert finished == [jobs.STALE, jobs.STALE]

# %% [markdown]
# Both workers did the work, and neither settle counts: the job lies in dead as "stalled". Under the
# counted sweep, the lease must be longer than the slowest healthy run, not only long enough for the
# usual one.
#
# A crash spends an attempt, too: the claim counted it, and a reap gives nothing back. A job whose
# first two workers died, and whose third fails, goes straight to dead under the default cap of three:

# %%
Q7c = "crashes-count"
jobs.drop(conn, Q7c)
job = jobs.enqueue(conn, Q7c, "two crashes, then an error")
for _ in range(2):
    jobs.claim(conn, Q7c, 20)  # the worker dies holding it
    time.sleep(0.03)
    jobs.reap(conn, Q7c)
third = jobs.claim(conn, Q7c, 30_000)
verdict = jobs.retry(conn, Q7c, job, third.attempts, "failed", 100)
print("the third claim's token:", third.attempts, "· its first failure:", verdict)
assert (third.attempts, verdict) == (3, jobs.DEAD)

# %% [markdown]
# `reprocess` gives the job a new life with the whole cap again, while the token keeps growing (the
# fence must never hand out a number an earlier claim had):

# %%
jobs.reprocess(conn, Q7c, job)
fourth = jobs.claim(conn, Q7c, 30_000)
again = jobs.retry(conn, Q7c, job, fourth.attempts, "failed again", 100)
print("the new life's first token:", fourth.attempts, "· its first failure:", again)
assert (fourth.attempts, again) == (4, jobs.SCHEDULED)

# %% [markdown]
# On a native node the sweep has a twin, `EMQ.STALLED.CHECK`, which also exempts a lease granted
# before the server restarted: notebook 04 shows it. `reap/2` has no native twin.

# %% [markdown]
# ## A consumer at work
#
# A **Consumer** is the client loop that makes all of this happen. Each beat it promotes, reaps (its
# recovery leg), claims, runs your handler, and completes — or retries with its fixed
# `retry_delay_ms` (1 000 ms by default) when the handler raises or returns `Error(reason)`.
#
# Below, a handler fails every third job once and takes about 20 ms on each job, as real work would.
# The counter plot samples the four sets every 50 ms as the consumer drains 30 jobs: pending falls,
# active holds the one job in hand, schedule holds the failed ones until their retry is due.

# %%
from echomq_teach.consumer import Consumer, Error

Q5 = "work"
failed_once: set[str] = set()


def handler(job):
    time.sleep(0.02)  # the work
    n = int(job.payload.split()[-1])
    if n % 3 == 0 and job.id not in failed_once:
        failed_once.add(job.id)
        return Error("every third job fails once")
    return f"done {n}"


for i in range(30):
    jobs.enqueue(conn, Q5, f"job {i}")
consumer = Consumer(conn, Q5, handler, retry_delay_ms=200)
assert consumer.retry_delay_ms == 200 and Consumer(conn, Q5, handler).retry_delay_ms == 1_000

# %% [markdown]
# Before it runs, watch two single beats on a small queue of their own, each leg one real call.
# The first job succeeds; the second one's handler raises, and the default 1 000 ms delay parks it:

# %%
beat_conn = node.connector()  # its own trace, so the legs of one beat read clearly
for payload in ("fine", "crash"):
    jobs.enqueue(beat_conn, "one-beat", payload)


def picky(job):
    if job.payload == "crash":
        raise ValueError("this handler raises")
    return "done"


one = Consumer(beat_conn, "one-beat", picky)
first_beat = one.beat()
legs = [e.script or e.args[0] for e in beat_conn.last(6)]
print("one beat:", " → ".join(legs), "·", first_beat.outcome)
assert legs == ["@promote", "@reap", "EXISTS", "@claim2", "HGET", "@complete"] and first_beat.outcome == jobs.OK
second_beat = one.beat()
legs = [e.script or e.args[0] for e in beat_conn.last(6)]
s = snapshots.snapshot(beat_conn, "one-beat")
crashed_id = second_beat.claimed.id
print("next beat:", " → ".join(legs), "·", second_beat.outcome, "·", s.rows[crashed_id]["last_error"])
assert legs[-1] == "@retry" and second_beat.outcome == jobs.SCHEDULED
assert s.rows[crashed_id]["last_error"] == "ValueError: this handler raises"
assert 0 < s.relative("schedule", crashed_id) <= 1_000  # parked for the default 1 000 ms
jobs.remove(beat_conn, "one-beat", crashed_id)
beat_conn.close()

# %%
import threading

from echomq_widgets import CounterPlot

plot = CounterPlot(conn, Q5, x="time", title="the work queue while one consumer drains it", redraw_every=1.0)
plot.sample()  # the queue before the consumer starts: 30 pending
runs = []
worker = threading.Thread(target=lambda: runs.append(consumer.run(timeout=20, until_idle=True)))
worker.start()
plot.watch(seconds=20, interval=0.05, until=lambda: not worker.is_alive())
worker.join()
report = runs[0]
print(report.stopped_by, dict(sorted(report.outcomes.items())))
plot

# %%
s = snapshots.snapshot(conn, Q5)
assert report.outcomes == {"ok": 30, "scheduled": 10} and s.total() == 0 and s.completed == 30
sizes = plot.series.sizes
assert len(plot.series) >= 10 and sizes["pending"][0] == 30 and sizes["pending"][-1] == 0
assert len(set(sizes["pending"])) >= 5 and max(sizes["active"]) == 1 and max(sizes["schedule"]) >= 1
print("all 30 settled; 10 of them after one retry; pending fell over many samples, one job active at a time")

# %% [markdown]
# ## A poison job under each recovery leg
#
# The cap on attempts (`max_attempts`, 3 by default) is read by one of the kit's scripts only:
# `@retry` (and its native twin `EMQ.FAIL`), when a handler reports an error. `@reap` and `@claim2`
# never read it (your queue's recovery will, in 03.6; the kit's does not), and a worker that dies never
# calls retry. So what stops a **poison**
# job in a kit consumer, one that takes down every worker that runs it (a payload that crashes a
# parser, a task that runs the machine out of memory)? Here is one, tried as you would try it with the
# kit's own `Consumer`: a 20 ms lease, a cap of 3, and a new worker each round, whose handler dies with
# the job in hand (`WorkerKilled` stands for the SIGKILL: the beat stops where it is, and nothing
# settles). Between two rounds the lease lapses, and the next worker's beat runs its recovery leg
# before it claims. The two columns differ in that leg only: `reap`, the default, and `stalled` with
# `max_stalled=2`.

# %%
class WorkerKilled(BaseException):
    """What a SIGKILL does to a worker inside its handler: the beat stops where it is, and nothing settles."""


def kills_its_worker(job):
    raise WorkerKilled  # every worker that takes this job dies with it


legs = {}  # ledger: at-least-once-runs
for leg in ("reap", "stalled"):
    q = f"poison-{leg}"
    jobs.drop(conn, q)  # a re-run of this cell starts from an empty queue, as the first run did
    victim = jobs.enqueue(conn, q, "kills every worker that takes it")
    legs[leg] = []
    for _ in range(10):
        worker = Consumer(conn, q, kills_its_worker, lease_ms=20, max_attempts=3, recovery=leg, max_stalled=2)
        try:
            worker.beat()  # promote, the recovery leg, claim, the handler ...
        except WorkerKilled:
            pass  # ... and the worker is gone, holding the job
        s = snapshots.snapshot(conn, q)
        legs[leg].append((s.where(victim)[0], int(s.rows[victim]["attempts"])))
        time.sleep(0.03)  # the lease lapses before the next worker starts
print("round   recovery='reap' (the default)   recovery='stalled', max_stalled=2")
for n, (r, st) in enumerate(zip(legs["reap"], legs["stalled"]), 1):
    print(f"{n:>5}   {r[0]:<7} attempts {r[1]:<15}   {st[0]:<7} attempts {st[1]}")
assert legs["reap"] == [("active", n) for n in range(1, 11)]  # ten runs under a cap of 3, and still going
assert legs["stalled"] == [("active", 1), ("active", 2), ("active", 3)] + [("dead", 3)] * 7

# %% [markdown]
# Under `reap` the job ran ten times under a cap of three, and it would go on: a reap forgives every
# lapse, so the job loops for as long as workers take it, its `attempts` climbing past the cap, and
# never reaches dead (should one of its runs *report* an error instead, `@retry` would bury it at once:
# its token has long reached the cap). Under `stalled` the sweep counted each lapse, and the third
# (more than `max_stalled=2`) buried the job after three runs, with `last_error` "stalled", where an
# operator sees it ([ledger](docs/guarantees.md#at-least-once-runs)).
#
# Which leg to choose, when:
#
# - **`reap`** (the default) forgives every lapse, and never buries a job for it. Choose it when a
#   lapse usually means a worker that was slow, frozen or restarted (a deploy, a laptop lid) while the
#   job itself is healthy, and no job can take its worker down — or watch `attempts` from outside and
#   remove a job that runs away. Its cost: a poison job loops for ever.
# - **`stalled`** counts each job's lapses and buries it past `max_stalled`. Choose it when a job can
#   take its worker down (native code, memory blow-ups, untrusted input); then make the lease longer
#   than the slowest healthy run and `max_stalled` larger than the restarts you expect, because to the
#   sweep a slow healthy job and a restarted worker look like poison (the slow-but-healthy cell above).
#
# The kit keeps `reap` as the default (`docs/decisions.md`, "the default recovery leg"); a `Pool`
# passes its `recovery` and `max_stalled` to its metronome.

# %% [markdown]
# ## Who sweeps? A pool and its metronome
#
# Nothing on the node calls promote, reap or the stall sweep; a client does. The course page names
# three callers of promote: a standalone Consumer's loop (above: every beat), the **Metronome**, and
# the **Pump**. A **Pool** runs several consumers of one queue on threads, and those consumers do
# *not* sweep (`recovery=None`, `promote=False`): one Metronome per queue calls promote and the
# recovery leg on a fixed tick for the whole pool, so three workers do not sweep three times. The
# Pump comes after the pool.
#
# Each consumer and the metronome has a connector of its own, so their traces say who sent what:

# %%
from echomq_teach.consumer import Pool

Q8 = "pool"
for i in range(12):
    jobs.enqueue(conn, Q8, f"job {i}")
pool_failed: set[str] = set()


def flaky(job):
    time.sleep(0.01)
    if job.payload.endswith(("3", "7")) and job.id not in pool_failed:
        pool_failed.add(job.id)
        return Error("fails once")
    return "done"


pool = Pool(conn, Q8, flaky, size=3, metronome_ms=50, retry_delay_ms=100)
assert all(c.recovery is None and not c.promote for c in pool.consumers)  # the pool's consumers never sweep
assert Consumer(conn, Q8, flaky).recovery == "reap"  # a standalone consumer's recovery leg, by default
pool_report = pool.run(timeout=20, until_idle=True)
sent_by = {f"consumer {i}": {e.script for e in c.conn.trace if e.script} for i, c in enumerate(pool.consumers)}
sent_by["metronome"] = {e.script for e in pool.metronome.conn.trace if e.script}
print("the consumers sent:", sorted(set().union(*(s for w, s in sent_by.items() if w != "metronome"))))
print("the metronome sent:", sorted(sent_by["metronome"]))
print(dict(sorted(pool_report.outcomes.items())), "· the metronome promoted", pool.metronome.promoted)
assert pool_report.outcomes == {"ok": 12, "scheduled": 2} and pool.metronome.promoted == 2
assert all("@promote" not in s and "@reap" not in s for who, s in sent_by.items() if who != "metronome")
assert {"@promote", "@reap"} <= set(sent_by["metronome"])
pool.close()

# %% [markdown]
# The **Pump** (`echomq_teach.pump`, EchoMQ.Pump) calls promote and nothing else, for the queues it
# is given, on a beat. It serves workers that do not sweep and a deployment that wants promotion to go
# on while no pool runs; it can run on a thread, as here, or as a process of its own
# (`python -m echomq_teach.pump QUEUE…`, stopped by SIGTERM), which finds the node in `$ECHOMQ_URL`: a
# URL carries the node's password, and `ps` shows a command line to every user of the machine. It does
# not reap: a lapsed lease still needs a reap or a stall sweep from someone. Two retries and one crashed
# worker's job:

# %%
from echomq_teach.pump import Pump

Q9 = "pumped"
jobs.drop(conn, Q9)
retried = []
for payload in ("first", "second"):
    job = jobs.enqueue(conn, Q9, payload)
    got = jobs.claim(conn, Q9, 30_000)
    jobs.retry(conn, Q9, job, got.attempts, "fails once", 100)  # due again 100 ms from now
    retried.append(job)
abandoned = jobs.enqueue(conn, Q9, "its worker dies")
jobs.claim(conn, Q9, 50)  # a 50 ms lease nobody settles
pump = Pump(conn, [Q9], interval_ms=20)
pump.start()
for _ in range(200):  # the retries come due after 100 ms: wait for the pump to move them (10 s at most)
    if pump.promoted[Q9] == 2 or pump.errors:
        break
    time.sleep(0.05)
time.sleep(0.1)  # a few beats more: the pump leaves the lapsed lease where it is
pump.stop()
s = snapshots.snapshot(conn, Q9)
print("the pump promoted", pump.promoted[Q9], "· the retries are now in", {s.where(j)[0] for j in retried},
      "· the abandoned job is still in", s.where(abandoned), "· errors:", pump.errors)
print("the pump sent:", sorted({e.script for e in conn.trace if "pump tick" in e.shortcuts}))
assert pump.promoted[Q9] == 2 and all(s.where(j) == ["pending"] for j in retried)
assert s.where(abandoned) == ["active"] and s.relative("active", abandoned) < 0
assert jobs.reap(conn, Q9) == [abandoned]  # recovery: somebody else's call

# %% [markdown]
# So, who calls promote? A standalone Consumer, on each beat of its loop; in a pool, the pool's
# Metronome, once per tick for all its consumers; and the Pump, for any queues it is given, when the
# workers leave promotion to it. Nothing on the node does.

# %% [markdown]
# ### 03.5 · The metronome stopped (diagnose and repair)
#
# Three pools ran, each on a queue of its own and each with recovery settings of its own, nowhere
# written down. Then their metronomes' process died, and the workers went on without it. The check
# builds the three queues they left and calls your function on each: jobs stuck and jobs not, and the
# marks of what each metronome had done before it stopped. **Diagnose** each job from its set, its
# score against the server's clock and its row, and **repair** the queue so that it is exactly what its
# own metronome would have made of it by now: no more, no less, each job brought back the way that pool
# brings jobs back. Return nothing. *Solution: `solutions/03_5_metronome_stopped.py`.*

# %%
def metronome_stopped(conn, queue):
    # your code here
    raise NotImplementedError


print(exercises.check("03.5", metronome_stopped, conn))

# %% [markdown]
# ### 03.6 · Your queue, stage 3: recover, with a poison bound
#
# The poison loop above is the kit's `reap` leg; your queue stops it. **`my_queue/recover.lua`** runs in the
# place of the counted sweep, `@stalled_check`: its keys, `KEYS[1]` active, `[2]` pending, `[3]` dead, `[4]`
# the base; its arguments, `ARGV[1]` the cap (what the kit's callers pass as `max_stalled`: your queue reads
# it as `max_attempts`) and the optional `ARGV[2]`, the record flag; its reply, `{the ids moved back, the ids
# buried}`. So the kit's metronome, a consumer's `recovery="stalled"` leg and, next, your own beat all call
# it. It counts no stalls: it counts what the queue already counts. It takes the lapsed leases, earliest
# deadline first, at most 100 a call, each out of active. A job whose tries in this life are below its cap
# (its row's own `max_attempts`, else `ARGV[1]`) goes back to pending, its row `pending`, its attempts
# untouched. A job that reached its cap is buried: in dead, scored with the server's now, its row `dead` with
# `last_error` `stalled` (as the kit's sweep writes it), its one ending recorded when asked (`outcome`
# `stalled`, `attempts` the row's, `error` why). An id in active whose row is gone leaves active and goes
# nowhere.
#
# The check runs stages 1 and 2's checks again, then calls your recovery on lapsed leases whose answers are
# known (one on its last try after two handler errors, one on its first, one live, one with no row, one on the
# first try of a new life, one under a cap of its own, two under caps of 2 and 5 that the caller hands it, the
# first without the record flag), holding the queue to notebook 01's table after each call and waking the dead
# workers before anyone claims again (your complete.lua must refuse them), then on 150 lapsed leases (100 a
# call, the earliest first). Then, on two seeds it draws, three worker processes drain twelve jobs, one of
# them poison (its handler kills its worker, every time), while a seeded nemesis kills one worker and freezes
# another past its lease; the run's metronome calls **your** recover.lua every 50 ms, with a cap of 3. It
# passes only when every answer is right and, on every seed, the checker says valid, the queue keeps the
# table, the poison was tried three times and buried, and every other job was done. A queue that lets the
# poison loop drops no job, and the checker finds nothing wrong with it: then the check's own finding says how
# often the poison ran, and why it never stopped. About fifteen seconds a check.

# %%
print(mine.begin("03.6"))

# %% [markdown]
# Write them in JupyterLab's editor, then run the check. *Reference: `solutions/my_queue/03_6/`
# (`mine.load_reference("03.6")`).*

# %%
exercises.check("03.6", mine)

# %% [markdown]
# ### 03.7 · Your queue, stage 4: the beat
#
# Last in this notebook, your consumer. **`my_queue/beat.py`** defines `beat(queue, handle, budget)`, one
# beat, which a worker process of yours calls again and again (pausing a moment after a beat that claimed
# nothing). It is handed:
#
# - `queue`, your queue's calls, each one real call through your scripts, recorded for the checker:
#   `queue.promote()`, `queue.recover()`, `queue.claim()` (a job, or `None`), `queue.complete(job, result)`
#   and `queue.retry(job, reason)`, each answering as the kit's calls do;
# - `handle(job)`, which runs the handler on a claimed job and answers `(True, result)` or
#   `(False, reason)`;
# - `budget`, how many jobs this worker may still claim (its share of a consumer's `Budget`):
#   `budget.take()` answers 1, or 0 when none is left; `budget.give_back()` returns one.
#
# A beat promotes the retries that came due and recovers the lapsed leases, whatever its budget says: no
# metronome runs beside your workers, so nobody else sweeps. Then, only with budget left, it claims one
# job (a claim that brings nothing gives its budget back), hands it to `handle` and settles it as the
# handler said. It answers the settle's outcome, or `None` when it claimed nothing. (A beat may sweep on
# some beats only: the check allows ten beats for what must happen.)
#
# The check runs stages 1 to 3's checks again, then calls your beat in this kernel, on the judge's node, each
# call recorded: on an empty queue, on one job, on a job whose handler fails, with no budget beside a lapsed
# lease and a retry that came due, and with a budget of one beside three jobs. Then, on two seeds it draws,
# three worker processes beat with **your** beat.py and your scripts, and no metronome: twelve jobs, two that
# fail once, one poison, under a seeded nemesis of a kill and a freeze past the lease; then, late, once the
# queue drained and every worker has been beating a while, one more freeze past the lease of a worker at
# work. It passes only when every answer is right and, on every seed, the checker says valid, the queue keeps
# the table, every job ended (the poison buried at its cap), and the jobs the killed and the late-frozen
# workers held came back. A job that never finishes is named, with where it was left and why. About fifteen
# seconds a check.

# %%
print(mine.begin("03.7"))

# %% [markdown]
# Write them in JupyterLab's editor, then run the check. *Reference: `solutions/my_queue/03_7/`
# (`mine.load_reference("03.7")`).*

# %%
exercises.check("03.7", mine)

# %% [markdown]
# ## A full node
#
# Memory is the queue's only store, and a node has a ceiling: `maxmemory`. With the policy
# `noeviction` (a policy that evicts could drop a job's row, or a whole set) a full node refuses
# writes with `OOM` and still answers reads. A script that writes is refused at its first write that would grow memory;
# everything before that line was only reads, so `@enqueue` writes nothing. A node of this notebook's
# own, filled with large payloads:

# %%
import redis

full = start_node(provider="local")  # a ceiling on a shared node would hit everyone: a node of our own
f_conn, f_raw = full.connector(), full.client()
for i in range(3):
    jobs.enqueue(f_conn, "full", f"job {i}")
f_raw.config_set("maxmemory-policy", "noeviction")
f_raw.config_set("maxmemory", int(f_raw.info("memory")["used_memory"]) + 300_000)  # a little headroom
refused = None
while refused is None:
    before = snapshots.snapshot(f_conn, "full")
    try:
        jobs.enqueue(f_conn, "full", "x" * 10_000)
    except redis.exceptions.OutOfMemoryError as exc:
        refused = str(exc).split(" script:")[0]
after = snapshots.snapshot(f_conn, "full")
print("the node answered:", refused)
print("nothing written by the refused enqueue:", after.state_only() == before.state_only())
assert refused.startswith("command not allowed when used memory > 'maxmemory'")
assert after.state_only() == before.state_only() and len(after.pending) >= 3
f_raw.config_set("maxmemory", 0)  # 0: no ceiling
assert jobs.enqueue(f_conn, "full", "x" * 10_000) in snapshots.snapshot(f_conn, "full").pending
print("with the ceiling lifted, the same enqueue passes")
f_conn.close()
f_raw.close()
full.stop()

# %% [markdown]
# A full node is a state to watch for, not a failure the queue recovers from on its own: the
# completions that delete rows free memory, and an operator trims dead jobs or raises the ceiling.

# %% [markdown]
# ## Recap
#
# - `@complete` is fenced: the token must match and the row must be active, or it is stale and
#   writes nothing.
# - `@retry` parks below the cap (schedule at now + delay) and buries at the cap (dead, `last_error`).
# - Nothing moves on its own: promote, reap and the counted stall sweep are client calls — a
#   standalone consumer makes them every beat; in a pool, the metronome makes them for all.
# - The counted sweep buries a job that stalls more than `max_stalled` times.
# - `max_attempts` is read only by `@retry`: under `reap`, the default recovery leg, a job that kills
#   every worker loops for ever; under `stalled` it is buried past `max_stalled` lapses. Choose `reap`
#   when a lapse usually means a slow or restarted worker, `stalled` when a job can take its worker down.
# - Your queue grew three stages: complete and retry fenced by the token and the state, a backoff and a
#   job's own cap (03.3); a recovery that buries a lapse at the cap, so a poison job stops (03.6); and a beat
#   that promotes, recovers, claims within its budget, handles and settles (03.7).
# - A full node (`maxmemory`, `noeviction`) refuses writes with `OOM`, and a refused `@enqueue` writes
#   nothing.
#
# Next: **04-two-executors** — the same claim, as one native command.


# %% [markdown]
# ## Check yourself
#
# Each question is answered by this notebook's own cells: run them again, read their traces and the
# scripts they print. Nothing grades these; the section a question comes from holds its answer.
#
# 1. Which two things must hold for `@complete` to pass, and what does a stale call write?
# 2. Where is `max_attempts` read, and why does a job that kills every worker never reach dead under
#    the default recovery leg?
# 3. Under `recovery="stalled"` with `max_stalled=2`, how many times does that job run before it is
#    buried, and what does a slow but healthy job risk under the same setting?
# 4. Who calls promote and the recovery leg for a standalone `Consumer`, and who for the consumers
#    of a `Pool`?
# 5. What does a full node answer to `@enqueue`, and what did the refused enqueue write?

# %% [markdown]
# ## Further reading
#
# - [`ZRANGEBYSCORE`][r1]: how a sweep finds what is due, `LIMIT` keeping each call short.
# - [`LMOVE` and its reliable-queue pattern][r2]: the list-based ancestor of this queue: move a job and
#   keep it visible in one step.
# - [Brandur Leach, *Implementing Stripe-like idempotency keys in Postgres*][r3]: how a handler makes a
#   repeated run harmless.
#
# [r1]: https://valkey.io/commands/zrangebyscore/
# [r2]: https://valkey.io/commands/lmove/
# [r3]: https://brandur.org/idempotency-keys

# %% [markdown]
# ## When you are done
#
# The nodes the kit started for this notebook stop with its kernel (a classroom's shared node stays
# up), so there is nothing to stop by hand: when you leave, shut the kernel down (**Kernel → Shut
# Down Kernel**). Until then the widgets above keep working, even after **Run All** — each click is
# still a real call.
