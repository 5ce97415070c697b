# %% [markdown]
# # The Queue · 10 — case files
#
# After this course you will likely go back to another queue: Celery, Sidekiq, BullMQ. Those queues
# have failed in production, in public, and their issue threads record what happened, why, and how
# it was fixed. This notebook takes six of those reports. For each one, the kit holds a small model
# of the mechanism the report describes (`echomq_teach/lab/models/`), written from the description,
# on a real node. Each case runs the **same workload twice under the same seeded nemesis**: once on
# the model, once on this queue. The checker from notebook 07 judges both runs.
#
# **Goals**
#
# 1. Read six real failures as mechanisms: what was put back, taken or released, and when.
# 2. See the checker name each anomaly on the model: settled twice, lost, stranded, handed out twice,
#    a parent released early.
# 3. See this queue's verdict under the same faults, and where it shares a weakness, say so plainly.
# 4. Diagnose three of the models from the state they leave on your node.
# 5. Run your own queue through two of the cases and through the chaos widget, valid first; then see its
#    cost beside the kit's (10.4).

# %%
import inspect as source  # the standard library's: it prints a function's code

import matplotlib.pyplot as plt

from echomq_teach import start_node
from echomq_teach.course import exercises
from echomq_teach.lab import figures
from echomq_teach.lab.models import CASES, module
from echomq_teach.lab.models.trial import WORKLOADS, both

node = start_node()
conn = node.connector()
print(CASES)


def show(model, ours, height=6.5):
    """The two timelines of one case, the model above, this queue below, on one time axis each."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, height))
    model.timeline(ax=top)
    ours.timeline(ax=bottom)
    fig.tight_layout()
    figures.show(fig)  # with its text alternative: both timelines in words


# %% [markdown]
# ## How a case file reads
#
# Each case has a **workload** (`WORKLOADS[case]`): the jobs, the number of worker processes, the
# lease, and the nemesis's draw. `both(case, node, seed)` runs that workload on the model's worker
# processes, then on this queue's (the lab's `Run`), under `Nemesis(seed)`: the same faults, at the
# same moments after the start, on the same worker slots. A killed worker's slot gets a new process;
# a frozen one is thawed after its hold. Both runs are recorded call by call and judged by one
# checker (`lab/models/findings.py` adds two invariants the lab's checker did not need: a parent
# released early, and a second hand-out while the first lease could not yet have lapsed).
#
# A model counts only if its anomaly comes from the report's mechanism. None of the models below
# fail on purpose: each one does what the report says the real system did, and the nemesis provides
# the crash, the freeze or the full memory the report describes.

# %%
w = WORKLOADS["kombu_restore"]
print(f"kombu_restore: {len(w.payloads)} jobs, {w.workers} workers, lease {w.lease_ms} ms, faults {w.kinds}")
for fault in w.nemesis(1).draw(w.workers):
    print(" ", fault)

# %% [markdown]
# ## Case 1 · A visibility timeout that restores running work (kombu, Celery's Redis transport)
#
# **The report.** Celery's Redis transport keeps every delivered message in an "unacked" hash, and
# indexes it in a sorted set by the time it was delivered. A periodic restore puts back every message
# older than the *visibility timeout*, whether or not a worker is still running it, and nothing ever
# moves that time forward. Users with tasks longer than the timeout (an hour by default) saw them
# delivered again every hour, to another worker, while the first was still busy; both runs finished
# and both acknowledged. The maintainers' answer was documentation and configuration: set the timeout
# above your longest task; no renewal was added.
# ([celery #5935](https://github.com/celery/celery/issues/5935),
# [kombu #337](https://github.com/celery/kombu/issues/337))
#
# **The model's restore**, as the model's metronome calls it:

# %%
print(source.getsource(module("kombu_restore").Model.sweep))

# %% [markdown]
# Two workers of the three are frozen longer than the lease, so the restore puts their messages back
# and another worker runs them. Then both settle:

# %%
model, ours = both("kombu_restore", node, seed=1)  # ledger: one-settle-per-life
print("the model:", model.report.verdict, "· settled twice:", bool(model.report.of("settled_twice")))
print("this queue:", ours.report.verdict, "· stale settles refused:", ours.report.stale_refused > 0,
      "· a job ran twice:", any(n > 1 for n in ours.report.handler_runs.values()))
assert not model.valid and model.report.of("settled_twice")
assert ours.valid and ours.report.stale_refused >= 1 and any(n > 1 for n in ours.report.handler_runs.values())

# %%
# NBVAL_IGNORE_OUTPUT
print(model)
print()
print(ours)

# %%
show(model, ours)

# %% [markdown]
# **This queue shares half of the weakness.** A worker frozen past its lease loses the job here too:
# the sweep puts it back and another worker runs it, so the handler runs twice
# ([ledger](docs/guarantees.md#at-least-once-runs)). What differs is the
# settle: the frozen worker's settle carries its fencing token, the job's row has a newer one, and
# the settle is refused (`stale settles refused` above). One ending per job, not two
# ([ledger](docs/guarantees.md#one-settle-per-life)). The handler's
# *effects* still happen twice, which is why notebook 07 asks for idempotent handlers, and why a
# long job should renew its lease, fenced by the same token (02.2), instead of relying on one long
# timeout.
#
# ### 10.1 · Which jobs run twice (diagnose)
#
# The check builds this state on your node with the model's own calls: a few messages; worker `w0`
# fetches some, waits past a 150 ms visibility timeout, fetches some more; the restore runs; worker
# `w1` fetches a few (how many of each changes from one check to the next). `w0` is still running all
# it fetched. Your function gets the set of ids `w0` holds: return those that will run a second time
# (handed out again already, or waiting for it). The model
# keeps its keys under `case:{<queue>}:` — `queue` (a list of `id|payload`), `unacked` (a hash),
# `unacked_index` (a sorted set) and `deliveries` (how many times each id was handed out).
#
# Stuck after a try? `exercises.hint("10.1")`. The reference solution is in
# `solutions/10_1_which_run_twice.py`.

# %%
def which_run_twice(conn, queue, held):
    # return a set of job ids
    raise NotImplementedError


print(exercises.check("10.1", which_run_twice, conn))

# %% [markdown]
# ## Case 2 · Late acknowledgement, and a killed child acknowledged anyway (Celery)
#
# **The report.** With `acks_late`, a Celery worker acknowledges a task only after it ran, so that a
# crash brings the task back. The task runs in a pool child process. When that child is killed — the
# kernel's OOM killer, a SIGKILL — the parent process acknowledges the task anyway: on purpose, since
# a task that kills its child on every try would otherwise loop forever. The message is gone from
# the broker, and the task never finished. The fix was an opt-in setting,
# `task_reject_on_worker_lost`, which puts such a task back instead (and reintroduces the loop).
# ([celery #1628](https://github.com/celery/celery/issues/1628))
#
# **The model's worker**: the task runs in a forked child; a child that died by a signal is
# acknowledged with no ending written. The nemesis's kills hit the child, as the OOM killer would.

# %%
print(source.getsource(module("celery_acks_late").Model.beat))

# %%
model, ours = both("celery_acks_late", node, seed=1)
print("the model:", model.report.verdict, "· lost:", bool(model.report.of("lost")))
print("this queue:", ours.report.verdict, "· unfinished:", len(ours.report.unfinished))
assert not model.valid and model.report.of("lost")
assert ours.valid and ours.report.unfinished == []

# %%
# NBVAL_IGNORE_OUTPUT
print(model)
print()
print(ours)

# %%
show(model, ours)

# %% [markdown]
# Here the dying process decides the job's fate, and decides wrong. In this queue nobody decides at
# the moment of death: the killed worker never settles its claim, its lease lapses, and the
# metronome's sweep (a script on the node) puts the job back. That is the loop Celery's
# acknowledgement was there to avoid, and under this run's recovery this queue would loop too: it is
# `reap`, the default, and a reap forgives every lapse. `max_attempts` is read only when a handler
# reports an error, which a killed worker never does, so a job that kills its worker every time would
# be claimed again for ever here too, its attempts climbing past the cap (notebook 03 shows it,
# [ledger](docs/guarantees.md#at-least-once-runs)). What bounds it is the counted stall sweep,
# `recovery="stalled"`, which the next case runs: after more than `max_stalled` lapses the job is
# buried in `dead`, where an operator can see it.
#
# ## Case 3 · Orphans recovered only when a process starts (Sidekiq)
#
# **The report.** Sidekiq's reliable fetch moves each job it takes into a private list of the
# process, so a crash does not drop them. The jobs left in a dead process's list are put back only by a
# process that is **starting**, and only after the dead process's heartbeat has expired. A
# process that started earlier never looks again, and a job that crashes its process comes back at
# the next start and crashes it again, with nothing counting. The fix counts each job's recoveries
# and buries it after three.
# ([sidekiq #4633](https://github.com/sidekiq/sidekiq/issues/4633),
# [sidekiq #3196](https://github.com/sidekiq/sidekiq/issues/3196))
#
# **The model's recovery**, run once, when a worker process starts:

# %%
print(source.getsource(module("sidekiq_orphans").Model.recover_orphans))

# %% [markdown]
# The workload has one `poison` job, which kills the process that runs it (SIGKILL). A supervisor
# starts a new process in that slot, as a service manager would. The nemesis kills three more.

# %%
model, ours = both("sidekiq_orphans", node, seed=1)
print("the model:", model.report.verdict, "· stranded:", bool(model.report.of("stranded")))
print("this queue:", ours.report.verdict, "· unfinished:", len(ours.report.unfinished),
      "· dead (the poison job, buried):", ours.report.dead >= 1)
assert not model.valid and model.report.of("stranded")
assert ours.valid and ours.report.unfinished == [] and ours.report.dead >= 1

# %%
# NBVAL_IGNORE_OUTPUT
print(model)
print()
print(ours)

# %%
show(model, ours)

# %% [markdown]
# A replacement process starts at once, before the dead one's heartbeat has lapsed, so its one look
# at start finds no orphans, and it never looks again. This queue's run here recovers with the counted
# stall sweep (`recovery="stalled"`), on the metronome, every tick, whatever started when. It counts
# each job's stalls and buries the poison job once the count goes over its limit (`max_stalled`,
# notebook 03); under the default `reap` the poison job would be claimed again for ever.
#
# ### 10.2 · Find the orphans (diagnose)
#
# The check runs a few processes of the model on your node, each under a name of its own: some fetch
# jobs and are killed, one may finish its job and be killed, the others live on and fetch again after
# the dead ones' heartbeats have lapsed. Return the set of job ids that are stranded: held by a process
# that is gone, waiting for a start that may never come. The model's keys, under `case:{<queue>}:`:
# `queue`, `processes` (a set of names), `heartbeat:<name>` (a key with a TTL), `working:<name>` (a
# list of `id|payload`).
#
# Stuck after a try? `exercises.hint("10.2")`. The reference solution is in
# `solutions/10_2_find_the_orphans.py`.

# %%
def find_the_orphans(conn, queue):
    # return a set of job ids
    raise NotImplementedError


print(exercises.check("10.2", find_the_orphans, conn))

# %% [markdown]
# ## Case 4 · A stall check that reads in one round trip and takes in another (bull)
#
# **The report.** To find jobs whose worker had died, every bull worker ran a periodic check: read
# the whole active list, then for each job, in separate calls, see whether it was completed and
# whether it was locked, and take any job that was neither. A job that finished between the read and
# the look — and was removed on completion, a common option — was in neither place, so the check took
# it and ran it a second time. The fix did the read, the test and the take in one Lua script.
# ([bull #356](https://github.com/OptimalBits/bull/issues/356), fixed by
# [bull PR #359](https://github.com/OptimalBits/bull/pull/359))
#
# **The model's check**: the list and the jobs' data in the first round trip, then one take per job:

# %%
print(source.getsource(module("bull_stall_scan").Model.check_stalled))

# %%
model, ours = both("bull_stall_scan", node, seed=1)
print("the model:", model.report.verdict, "· handed out twice:", bool(model.report.of("double_handouts")))
print("this queue:", ours.report.verdict)
assert not model.valid and model.report.of("double_handouts")
assert ours.valid and ours.report.unfinished == []

# %%
# NBVAL_IGNORE_OUTPUT
print(model)
print()
print(ours)

# %%
show(model, ours)

# %% [markdown]
# Between two round trips, anything can happen; only a script sees one moment. In this queue every
# transition is one script (or one native command): the sweep reads `active` by deadline and moves
# each lapsed job in the same call, and a job that completed is no longer in `active` when the
# sweep looks.
#
# ## Case 5 · A child's failure releases its parent early (BullMQ flows)
#
# **The report.** A BullMQ parent waits for its children and goes on when none is pending. One
# option, `continueParentOnFailure`, lets a parent go on after a child fails. The branch that handled
# it moved the parent to the wait list as soon as the parent was waiting, without checking whether
# other children were still pending. Every other branch checks. The parent ran, and could complete the
# whole flow, with some children's results still missing. The fix checks the pending children on that
# branch too. ([bullmq #4248](https://github.com/taskforcesh/bullmq/issues/4248))
#
# **The model's child ending**, a script as BullMQ's is:

# %%
print(module("bullmq_flow_release").END_CHILD)

# %%
model, ours = both("bullmq_flow_release", node, seed=1)
print("the model:", model.report.verdict, "· released early:", bool(model.report.of("released_early")))
print("this queue:", ours.report.verdict)
assert not model.valid and model.report.of("released_early")
assert ours.valid and ours.report.unfinished == []

# %%
# NBVAL_IGNORE_OUTPUT
print(model)
print()
print(ours)

# %%
show(model, ours)

# %% [markdown]
# This queue's flows run under the `ignore` policy here (a failed child does not stop its parent),
# and the parent's counter moves in the same script as each child's ending. The parent is released
# only in the step that takes the counter to zero, whichever way each child ended (notebook 05).
#
# ### 10.3 · Released too soon (diagnose)
#
# The check builds a few flows of the model on your node, each a parent and three children. One worker
# holds every child; then each flow's children end differently: some complete, some take the
# failure branch, some are still running (each check deals the endings afresh). Your function gets the
# set of parent ids: return those that were released while children were still pending. The model's
# keys, under `case:{<queue>}:`: `wait`
# and `active` (lists of ids), `waiting-children` (a set), `pending:<parent>` (the counter),
# `job:<id>` (a hash).
#
# Stuck after a try? `exercises.hint("10.3")`. The reference solution is in
# `solutions/10_3_released_too_soon.py`.

# %%
def released_too_soon(conn, queue, parents):
    # return a set of parent ids
    raise NotImplementedError


print(exercises.check("10.3", released_too_soon, conn))

# %% [markdown]
# ## Case 6 · Locks with a TTL, evicted under `volatile-lru` (BullMQ, Langfuse)
#
# **The reports.** A BullMQ worker holds each job by a lock key that expires unless renewed. On a
# node shared with a cache and set to `maxmemory-policy volatile-lru`, a full memory evicts keys that
# carry a TTL: the cache's, and the locks too. A job whose lock was evicted looks stalled. The stalled
# check moves it back, another worker runs it while the first still does, and the first worker's
# completion is refused for its missing lock. Langfuse's workers stopped consuming this way, for days,
# while reporting healthy. BullMQ's answer is a warning at start unless the policy is `noeviction`.
# ([bullmq #2215](https://github.com/taskforcesh/bullmq/issues/2215),
# [bullmq #1046](https://github.com/taskforcesh/bullmq/issues/1046),
# [langfuse #15509](https://github.com/langfuse/langfuse/issues/15509))
#
# **The model's stalled check**: any active job without its lock key goes back to wait.

# %%
print(module("bullmq_evicted_locks").MOVE_STALLED)

# %% [markdown]
# This case needs a node of its own: `maxmemory-policy volatile-lru`, and a `maxmemory` 2 MB above
# what the empty node holds. The trial starts it, starts a cache writing 2 KB keys with a TTL beside
# the queue, and stops both at the end. Your own node's settings are never touched.

# %%
model, ours = both("bullmq_evicted_locks", node, seed=1)
print("the model:", model.report.verdict, "· handed out under a live lease:",
      bool(model.report.of("double_handouts")))
print("this queue:", ours.report.verdict)
assert not model.valid and model.report.of("double_handouts")
assert ours.valid and ours.report.unfinished == []

# %%
# NBVAL_IGNORE_OUTPUT
print(model)
print()
print(ours)

# %%
show(model, ours)

# %% [markdown]
# This queue's lease is a score in the `active` sorted set, and no key that holds a job (the four sets,
# the rows) carries a TTL, so `volatile-lru` has no job of the queue's to evict. Two kinds of the kit's
# keys do carry one, and losing them loses no job: a completed flow parent's `:dependencies`,
# `:processed` and `:unsuccessful`, kept an hour for reading (notebook 05), and the archive driver's
# lease, whose late writes its token refuses (notebook 08). The kit's own nodes run with `noeviction`
# anyway: a full node refuses writes with an error, and no key of the queue disappears.

# %% [markdown]
# ## Your queue, valid first, then fast
#
# The queue you grew in `my_queue/` since notebook 02 — your claim and renewal, complete and retry, your
# recovery, your beat, your fan-in — meets the case files now, as this queue just did.
#
# ### 10.4 · Your queue, stage 6: valid first, then fast
#
# No new file: the whole queue runs. The check runs every earlier stage's checks again, then two of this
# notebook's cases on **your** queue, each on a seed it draws, exactly as `both` ran this queue above: the
# same workload, the same nemesis, your scripts in the kit's places and your beat in its workers.
# `kombu_restore` freezes workers past their leases (zombies wake and settle late); `sidekiq_orphans` kills
# workers and carries a poison job. It passes only when both runs are valid to the checker (with this
# notebook's two added invariants), your queue keeps notebook 01's table, and every job ended. Then, valid,
# it is measured: one clean drain of 200 jobs by three worker processes on the check's node, yours beside
# the kit's, each with its **round trips per job** and its **jobs per second** — printed, not judged. The
# kit's workers leave promote and recovery to one metronome; yours sweep in their own beats, two round
# trips a beat. Can your beat sweep less and stay valid? About thirty seconds a check.

# %%
from echomq_teach.course import my_queue

mine = my_queue.folder()  # my_queue/ beside the notebooks
print(mine.begin("10.4"))

# %% [markdown]
# Then run the check. *Reference: `solutions/my_queue/10_4/`, a beat that sweeps less
# (`mine.load_reference("10.4")`).*

# %%
exercises.check("10.4", mine)

# %% [markdown]
# And break it yourself: the chaos widget of notebook 07, on **your** queue (a node of its own, four of your
# workers; kill, freeze, drop links, restart the node, flush the scripts, then read the checker's verdict and
# the timeline). Until every stage's files are written, the cell says which are not.

# %%
from echomq_widgets import ChaosView
from IPython.display import display

if mine.unwritten("10.4"):
    print("your queue is not whole yet: " + ", ".join(f"my_queue/{n}" for n, _ in mine.unwritten("10.4"))
          + " still hold the starter")
else:
    yours = ChaosView(start_node(durable=True, provider="local"), workers=4, jobs=300, lease_ms=800, work_ms=20,
                      title="your queue under your faults", **mine.run_options())
    display(yours)

# %% [markdown]
# ## Recap
#
# - **Put back while running** (kombu): a timeout that nothing renews turns a long job into two
#   runs and two settles. Here the job also runs twice, but the token refuses the stale settle; renew
#   long jobs' leases, fenced by the token, and make handlers idempotent.
# - **Acknowledged by the dying** (Celery): a job's fate decided by a process at its death is lost
#   when that process decides wrong. Here the node's sweep decides. Under `reap`, the default, a job
#   that kills every worker loops for ever; the counted sweep (`recovery="stalled"`) buries it.
# - **Recovered only at start** (Sidekiq): recovery tied to restarts strands jobs between restarts.
#   Here the sweep runs every tick; the counted one, which that case runs, buries the poison job.
# - **Read, then take** (bull): two round trips see two moments. Here each transition is one script.
# - **Released early** (BullMQ flows): one branch skipped the counter. Here the counter moves in the
#   child's ending, and only zero releases the parent.
# - **Evicted locks** (BullMQ): a lock kept as a key with a TTL can be evicted. Here a lease is a
#   score, with no TTL to evict (the case ran this queue on the same `volatile-lru` node), and the
#   kit's own nodes run `noeviction`.
# - **Your queue** ran two of the cases and the chaos widget: valid first, then fast, its round trips and
#   jobs per second beside the kit's (10.4).
#
# This is the last notebook of the course.

# %% [markdown]
# ## Check yourself
#
# Each question is answered by this notebook's own cells: run them again, read their traces and the
# scripts they print. Nothing grades these; the section a question comes from holds its answer.
#
# 1. In the kombu case, what did this queue share with the model, and what did the token change?
# 2. In the Celery case, what would a job that kills its worker every time do under this run's
#    `reap`, and which recovery leg bounds it?
# 3. Why did the Sidekiq model strand jobs, and what does a sweep on every tick change?
# 4. In the bull case, what happened between the check's two round trips, and how does one script
#    avoid it?
# 5. Why can `volatile-lru` evict no job of this queue's, and which of the kit's keys could it take?

# %% [markdown]
# ## Further reading
#
# - [Celery: the Redis broker's visibility timeout][r1]: what the restore does, and its advice.
# - [Celery: `task_reject_on_worker_lost`][r2]: the opt-in that puts back a task whose child died.
# - [Sidekiq: reliability][r3]: how its fetch keeps jobs across crashes.
# - [BullMQ: stalled jobs][r4]: the lock, the check, and the stall counter.
# - [Valkey: key eviction][r5]: the policies, and which keys `volatile-lru` may take.
#
# [r1]: https://docs.celeryq.dev/en/stable/getting-started/backends-and-brokers/redis.html
# [r2]: https://docs.celeryq.dev/en/stable/userguide/configuration.html#task-reject-on-worker-lost
# [r3]: https://github.com/sidekiq/sidekiq/wiki/Reliability
# [r4]: https://docs.bullmq.io/guide/jobs/stalled
# [r5]: https://valkey.io/topics/lru-cache/
