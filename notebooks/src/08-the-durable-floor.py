# %% [markdown]
# # The Queue · 08 — the durable floor
#
# The course page closes with *the durable floor*: the job traced through the queue lives in memory. A
# completed row is deleted; a dead one stays until an operator reprocesses, removes or trims it, and
# trimming deletes. What can outlive memory is a stream: a Consumer started with `record=True` adds
# every ending to `emq:{q}:stream:completions`, one entry per ending in each life
# ([ledger](docs/guarantees.md#one-ending-one-entry); a call without the flag writes none), and when
# a deployment declares that stream to the archive driver, the driver **folds each slice into a durable
# floor before it trims it** — an embedded store by default, an object store when a remote is
# configured.
#
# **Goals**
#
# 1. See what memory keeps and loses: a node restarted without persistence comes back empty.
# 2. Fold a stream into the floor, slice by slice, and watch the stream shrink as the floor grows.
# 3. Kill a driver process between its commit and its trim, and count what it left and what the next
#    driver makes of it.
#    Then pause one past its lease, and watch its late write refused.
# 4. Do the same with a remote: a real S3-compatible store (SeaweedFS) that this notebook starts.
# 5. Ask the archive — one job, a time range, counts, throughput — with the stream trimmed to nothing.

# %%
import collections
import json
import signal
import tempfile
import threading
import time
from pathlib import Path

import matplotlib.pyplot as plt

from echomq_teach import floor, jobs, keyspace, scripts, snapshots, start_node
from echomq_teach.consumer import Error, Pool
from echomq_teach.course import exercises
from echomq_teach.floor import reads
from echomq_teach.floor.embedded import select_sql
from echomq_teach.floor.objectstore import start_object_store
from echomq_teach.floor.process import DriverProcess
from echomq_teach.floor.workload import settle_jobs, stream_len
from echomq_teach.lab.figures import show

node = start_node()
conn = node.connector()
# a classroom node keeps what an earlier run left: start this notebook's queues empty
for q in ("orders", "crash", "sleepy", "remote"):
    jobs.drop(conn, q)
conn.clear_trace()  # the trace starts with the notebook's own calls
work = Path(tempfile.mkdtemp(prefix="durable-floor-"))  # this notebook's floor files
print(node)

# %% [markdown]
# ## What memory keeps, and what it loses
#
# The node your kernel started keeps everything in memory and nothing on disk: no append-only file,
# no snapshots. To show what that means, this cell starts a second node of its own (so restarting it
# disturbs nothing else), settles 20 jobs on it with a recording consumer — every tenth job fails and
# dies — and looks at what is left.

# %%
mem = start_node(provider="local")
mc = mem.connector()
settle_jobs(mc, "memory", 20)
s = snapshots.snapshot(mc, "memory")
settings = mem.client().config_get("appendonly")["appendonly"], mem.client().config_get("save")["save"]
print("appendonly:", settings[0], "· save:", repr(settings[1]))
print("rows left:", len(s.rows), "(the dead ones) · stream entries:", stream_len(mc, "memory"))
assert settings == ("no", "") and sorted(r["state"] for r in s.rows.values()) == ["dead", "dead"]
assert stream_len(mc, "memory") == 20

# %% [markdown]
# Eighteen completed rows are already gone: a completed row is deleted. The stream still holds all
# twenty settles. Now restart the node — as a crash, a reboot or an upgrade would:

# %%
mc.close()
mem.restart(forget=True)
mc = mem.connector()
left = mc.client.keys("emq:*")
exists = mc.call("EXISTS", floor.completions_stream("memory"))
print("after the restart — keys of any queue:", left, "· the stream exists:", exists)
assert left == [] and stream_len(mc, "memory") == 0

# %% [markdown]
# Everything went: the dead rows, the counters, the stream. A node with an append-only file
# (`start_node(durable=True)` writes one and syncs it on every write) keeps the stream across a
# restart — but keeping is not archiving. That stream grows with every settle, and the only way to
# make room is `XTRIM`, which deletes:

# %%
kept = start_node(provider="local", durable=True)
aof = kept.client().config_get("append*")
assert (aof["appendonly"], aof["appendfsync"]) == ("yes", "always")
kc = kept.connector()
settle_jobs(kc, "kept", 5)
kc.close()
kept.restart()
kc = kept.connector()
survived = stream_len(kc, "kept")
deleted = kc.call("XTRIM", floor.completions_stream("kept"), "MAXLEN", 0)
print("durable node after a restart:", survived, "entries · XTRIM MAXLEN 0 deleted", deleted,
      "· left:", stream_len(kc, "kept"))
assert (survived, deleted, stream_len(kc, "kept")) == (5, 5, 0)
for c, n in ((kc, kept), (mc, mem)):
    c.close()
    n.stop()

# %% [markdown]
# ## The floor
#
# The page names the driver `EchoStore.StreamArchive.Driver` and its floor `EchoStore.Graft`: CubDB
# on the machine, Tigris when a remote is configured. In the kit, `floor.Driver` folds into a
# `floor.Floor`: **one SQLite file per deployment** (Python's own `sqlite3`, no server to start) and,
# when a remote is configured, an S3-compatible object store beside it.
#
# The file is opened in WAL mode, so reads run while the driver writes, with `synchronous=FULL`: a
# commit returns only once it is on the disk. The driver trims the stream right after a commit, so a
# commit that a power cut could still undo would lose exactly what the trim removed.

# %%
f = floor.open_floor(work / "floor.sqlite3")
mode = f.db.execute("PRAGMA journal_mode").fetchone()[0]
sync = f.db.execute("PRAGMA synchronous").fetchone()[0]
info = list(f.db.execute("PRAGMA table_info(settles)"))
columns = [r[1] for r in info]
key = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]  # the primary key's columns, in order
indexes = sorted(r[1] for r in f.db.execute("PRAGMA index_list(settles)") if not r[1].startswith("sqlite_"))
print("journal_mode:", mode, "· synchronous:", sync, "(2 is FULL)")
print("settles:", columns)
print("indexes:", indexes, "— and the key (stream, settled_ms, seq) for time ranges")
assert (mode, sync) == ("wal", 2)
assert columns == ["stream", "settled_ms", "seq", "job_id", "outcome", "attempts", "result", "error"]
assert indexes == ["settles_by_job", "settles_by_outcome"] and key == ["stream", "settled_ms", "seq"]

# %% [markdown]
# A row's key is the stream it came from and its **stream id**, `<settled_ms>-<seq>`: the id the
# node gave the entry when the settle's own script added it, so its first half is when the job
# settled, on the server clock. The same id can never be archived twice.
#
# ## One fold, step by step
#
# A fold has five steps, in this order:
#
# 1. **read** — `XRANGE <stream> (<cursor> + COUNT n`: the next slice after the floor's cursor;
# 2. **write** — the slice's rows *and the new cursor* in one SQLite transaction;
# 3. **commit** — that transaction is on the disk;
# 4. **upload** — with a remote only: the slice as one object in the store;
# 5. **trim** — `XTRIM <stream> MINID <first id not yet durable>`, inside `@floor_trim`.
#
# Before it writes anything the driver takes the stream's lease with `@floor_lease` (it reads the
# first slice just before, so that a slice of another shape is refused before the lease is written): a
# lease like a job's, on the server clock, whose token (1, then one more for each new holder) every
# later write of the driver must present. `@floor_trim` trims only for the driver that holds that
# lease (one driver per stream; more on that below), and refuses a stream whose ids run below the
# floor's cursor — one deleted and made again, whose entries the floor has never seen:

# %%
print(scripts.show("floor_trim"))

# %%
Q = "orders"
sec, usec = conn.client.time()
before_ms = sec * 1000 + usec // 1000  # the server clock, before the first settle
settle_jobs(conn, Q, 25)
driver = floor.Driver(conn, Q, f, slice_size=10)
conn.clear_trace()
first = driver.fold()
for e in conn.last(len(conn.trace)):
    reply = f"{len(e.reply)} entries" if e.line.startswith("XRANGE") else e.reply_text
    print(e.line, f"# {e.script}" if e.script else "", "\n  →", reply)
print(first)
sent = [e.script or e.args[0] for e in conn.trace]
assert sent == ["TYPE", "XRANGE", "@floor_lease", "@floor_trim", "XLEN"]
trim = conn.last(2)[0]
assert trim.args[-3] == str(floor.StreamId.parse(first.last).next()) and trim.reply == 10  # MINID: just past the last

# %% [markdown]
# Read the trace top to bottom: the driver checked the key's type, read ten entries after the cursor
# `0-0`, took the stream's lease (`@floor_lease` answered token 1), and — after the SQLite commit,
# which the node never sees — trimmed with `MINID` set just past the slice's last id. Ten settles
# are on the floor and fifteen are still in the stream:

# %%
stream = floor.completions_stream(Q)
print("cursor:", f.cursor(stream), "· floor:", f.count(stream), "rows · stream:", stream_len(conn, Q), "entries")
assert (first.read, first.trimmed, f.count(stream), stream_len(conn, Q)) == (10, 10, 10, 15)
assert str(f.cursor(stream)) == first.last
sec, usec = conn.client.time()
assert all(before_ms <= s.settled_ms <= sec * 1000 + usec // 1000 for s in f.settles(stream))  # server clock

# %% [markdown]
# ## Folding while the queue works
#
# Now 400 more jobs, worked by a pool of three consumers that record every settle, while the driver
# folds slices of 25 as fast as it can. After every fold, the cell samples the stream's length and
# the floor's row count.

# %%
def handler(job):
    time.sleep(0.01)  # a little work, so the run lasts long enough to watch
    n = int(job.payload.split()[-1])
    return Error("a tenth of the jobs fail") if n % 10 == 9 else f"done {n}"


for i in range(25, 425):
    jobs.enqueue(conn, Q, f"job {i}")
pool = Pool(conn, Q, handler, size=3, record=True, max_attempts=1)
ran = []
worker = threading.Thread(target=lambda: ran.append(pool.run(max_jobs=400, timeout=60)))
driver.slice_size = 25
samples = []  # (seconds, stream length, floor rows)
t0 = time.monotonic()
worker.start()
while (worker.is_alive() or stream_len(conn, Q) > 0) and time.monotonic() - t0 < 90:
    fo = driver.fold()
    samples.append((time.monotonic() - t0, fo.stream_len, fo.floor_rows))
    time.sleep(0.02)
worker.join()
pool.close()

fig, ax = plt.subplots(figsize=(7, 3))
ax.plot([t for t, _, _ in samples], [n for _, n, _ in samples], label="stream length (XLEN)")
ax.plot([t for t, _, _ in samples], [r for _, _, r in samples], "--", label="floor rows")
ax.set_xlabel("seconds")
ax.set_ylabel("settles")
ax.set_title("the driver folds and trims while a pool settles 400 jobs")
ax.legend()
fig.tight_layout()
show(fig)

# %% [markdown]
# The floor only grows. The stream holds what has not been folded yet: it fills as the pool settles
# and drops back at the trims. When the pool is done and the driver has caught up, the stream is empty
# and the floor holds every settle — each once:

# %%
rows = [r for _, _, r in samples]
lengths = [n for _, n, _ in samples]
assert max(lengths) > 0 and lengths[-1] == 0
count = collections.Counter(s.job_id for s in f.settles(stream))
print("pool settled:", ran[0].settled, "· floor:", sum(count.values()), "rows,", len(count), "jobs ·",
      "stream:", stream_len(conn, Q))
assert ran[0].settled == 400 and rows == sorted(rows)
assert sum(count.values()) == len(count) == 425 and stream_len(conn, Q) == 0

# %% [markdown]
# ### 08.1 · Predict the crash
#
# Before you watch a driver die mid-fold, predict what two deaths in a row leave. A stream of 35 settles,
# and three drivers in turn, each folding slices of 10:
#
# 1. the first is killed after the **commit of its third fold**, before that fold's trim;
# 2. the second, once the first one's lease has lapsed, is killed in the middle of the **write of its
#    first fold** (inside its SQLite transaction, before the commit);
# 3. the third runs until the stream is empty.
#
# Predict three numbers: the entries left in the stream and the rows on the floor when the second driver
# is killed, and the rows on the floor once the third is done. Only once your answer is kept does the
# check run exactly that, with real driver processes, and compare. After a kept prediction that did not
# match, `exercises.hint("08.1")` gives a hint. The reference solution is in
# `notebooks/solutions/08_1_predict_the_crash.py`.
#
# A prediction is your answer itself, written as data: replace each `...`. Your **first** answer of the
# right form is kept and graded (it survives a kernel restart): think it through before you run the cell.

# %%
predict_the_crash = {  # your prediction
    "stream, when the second driver is killed": ...,
    "floor, when the second driver is killed": ...,
    "floor, once the third driver is done": ...,
}
print(exercises.check("08.1", predict_the_crash, conn))

# %% [markdown]
# ## A driver killed between its commit and its trim
#
# A deployment runs the driver as a process of its own: `python -m echomq_teach.floor QUEUE --floor
# PATH`, the node in `ECHOMQ_URL`. Here it folds 40 settles in slices of 10, and `--halt-at
# commit:2` stops it after its second commit, before that fold's trim — where it waits to be killed.

# %%
QC = "crash"
jobs.drop(conn, QC)  # the queue (and a dead driver's lease) starts empty, and the floor new: run it again at will
crash_ids = settle_jobs(conn, QC, 40)
crash_floor = Path(tempfile.mkdtemp(dir=work)) / "crash.sqlite3"
cstream = floor.completions_stream(QC)
# ledger: floor-fold-survives-a-kill
victim = DriverProcess(conn.address, QC, crash_floor, "--slice", "10", "--lease-ms", "2000", "--halt-at", "commit:2")
print(victim.wait_for("halted"))

# %% [markdown]
# While it holds the stream's lease, a second driver is refused, not raced — even one on a floor
# file of its own:

# %%
with floor.open_floor(work / "another.sqlite3") as other:
    try:
        floor.Driver(conn, QC, other).start()
        refusal = None
    except floor.DriverBusy as exc:
        refusal = str(exc)
    assert other.count() == 0
print(refusal)
assert refusal is not None and "one driver per stream" in refusal

# %% [markdown]
# Now `SIGKILL`: no exit hook runs, no lease is given back. What did it leave?

# %% tags=["reveals:08.1"]
with exercises.reveals("08.1"):  # its output waits until 08.1 is committed
    victim.kill()
    assert conn.call("PTTL", keyspace.queue_key(QC, "floor:driver")) > 0  # the dead driver's lease, still there
    with floor.open_floor(crash_floor, readonly=True) as cf:
        on_floor = [s.job_id for s in cf.settles(cstream)]
    in_stream = [fields["id"] for _, fields in conn.client.xrange(cstream)]
    both = set(on_floor) & set(in_stream)
    neither = set(crash_ids) - set(on_floor) - set(in_stream)
    print(f"floor: {len(on_floor)} rows · stream: {len(in_stream)} entries · in both: {len(both)}",
          f"· in neither: {len(neither)}")

# %% [markdown]
# Ten settles are in both places: committed, not yet trimmed. A driver that read the stream from its
# head again would archive those ten twice; one that trimmed before it committed would have lost a
# slice to a crash one step earlier. The next driver does neither. It first finishes what the dead
# one left — the trim, up to the committed cursor — then reads only after the cursor. It has to wait
# for the dead driver's lease to lapse (two seconds here), which `--wait-s` allows.

# %% tags=["reveals:08.1"]
with exercises.reveals("08.1"):  # its output waits until 08.1 is committed
    heir = DriverProcess(conn.address, QC, crash_floor, "--slice", "10", "--wait-s", "10")
    code = heir.finish()
    folds = [ln for ln in heir.lines if ln.startswith("fold:")]
    print("\n".join(folds))
    with floor.open_floor(crash_floor, readonly=True) as cf:
        count = collections.Counter(s.job_id for s in cf.settles(cstream))
    twice = [j for j, n in count.items() if n > 1]
    print("exit code:", code, "· floor:", sum(count.values()), "rows ·", "twice:", twice,
          "· lost:", len(set(crash_ids) - set(count)), "· stream:", stream_len(conn, QC))
    assert code == 0 and count == collections.Counter(crash_ids) and stream_len(conn, QC) == 0

# %% [markdown]
# ### 08.2 · Build: a fold that survives a kill at every step, for two readers
#
# Now write the fold yourself — for a stream that has **two readers**. Besides the archive driver, the
# shop's notifier reads the completions stream to send each customer an e-mail, at its own pace; it
# keeps the last stream id it has read, and it still needs every entry after that one. Your function
# returns a function `fold_step(kit)` that folds **one** slice of at most 10 settles and answers how many
# it folded (0 when there was nothing left to fold). The `kit` is all it needs, and all it may use:

# %%
from inspect import cleandoc  # noqa: E402

from echomq_teach.course.fold_runner import FoldKit  # noqa: E402

print(cleandoc(FoldKit.__doc__))

# %% [markdown]
# The check starts a node of its own, settles 25 jobs, and calls your `fold_step` in a process of its own
# until it answers 0: once with the notifier having read the first 15 settles, once with it having read
# all 25. A slice is at most 10 settles: the kit refuses a read, or a commit, of more. Then, for **every
# step of every fold** that changed what the floor or the stream holds (each commit, each trim, in the
# first fold, the last, partial one and those between), it starts again on 25 fresh settles, the notifier
# having read them all, with a process that kills itself with SIGKILL right after that step, and then a
# second process that folds until your step answers 0. (A kill right after a read is not among them: a
# read changes neither.) The settles' enqueues, claims and completions were
# recorded, so the checker of notebook 07 reads that history against the floor and the stream together,
# as one archive. It passes when, after every one of those runs, the checker says *valid*, every settle is
# on the floor once and only once, and the stream still holds every settle the notifier has not read; and,
# with no kill, no fold leaves in the stream what both readers had when it began, and nothing at the end. A
# try takes several seconds; a failed one names the step whose kill broke it.
# *Solution: `solutions/08_2_survive_every_kill.py`.*

# %%
def survive_every_kill():
    # define fold_step(kit) here, then return it (the function, not a call of it)
    raise NotImplementedError


print(exercises.check("08.2", survive_every_kill))

# %% [markdown]
# ## A driver that sleeps through its lease
#
# A lease alone cannot stop a driver that was paused — `SIGSTOP`, a swap storm, a long pause of its
# machine — and wakes up after its lease ran out, sure that it still holds the stream. So every write
# carries the lease's **token**: each new holder gets a higher one, the floor refuses a commit with a
# token older than one it has seen, and `@floor_trim` trims only for the current holder. Here a driver
# stops itself right after reading its second slice (`--stop-at read:2`); a second driver waits out
# the sleeper's half-second lease and folds everything; then the sleeper wakes (`SIGCONT`) and tries to
# commit the slice it read long ago.

# %%
QS = "sleepy"
jobs.drop(conn, QS)  # the queue starts empty, and the floor new: run it again at will
sleepy_ids = settle_jobs(conn, QS, 30)
sleepy_floor = Path(tempfile.mkdtemp(dir=work)) / "sleepy.sqlite3"
sleeper = DriverProcess(conn.address, QS, sleepy_floor, "--slice", "10", "--lease-ms", "500", "--stop-at", "read:2")
print(sleeper.wait_for("stopped"))
with floor.open_floor(sleepy_floor) as sf:
    awake = floor.Driver(conn, QS, sf, slice_size=10)
    print("the second driver's token:", awake.start(wait_s=10))
    awake.run(timeout=10)
    awake.stop()
sleeper.signal(signal.SIGCONT)
print(sleeper.wait_for("woke"))
print("the sleeper's exit code:", sleeper.finish(), "·", sleeper.stderr().strip())
with floor.open_floor(sleepy_floor, readonly=True) as sf:
    count = collections.Counter(s.job_id for s in sf.settles(floor.completions_stream(QS)))
print("floor:", sum(count.values()), "rows,", len(count), "jobs · stream:", stream_len(conn, QS))
assert sleeper.returncode == 1 and "older" in sleeper.stderr() and "refused" in sleeper.stderr()
assert count == collections.Counter(sleepy_ids) and stream_len(conn, QS) == 0

# %% [markdown]
# ## The same, with a remote
#
# With a remote configured, each fold's slice is also **sealed** as one immutable object in an
# S3-compatible store, and the stream is trimmed only once the object is stored. The SQLite file
# stays: it is the cursor, the rows the reads use, and the index of what has been uploaded. The
# object is planned in the fold's own transaction and marked after the upload, so an upload that
# crashed is redone — the same name and the same bytes, rebuilt from the floor's rows — never
# duplicated.
#
# Objects are JSON lines, one settle a line: a slice is a few hundred small rows, written once and
# read whole, which needs no columnar format, and anyone can read one with `cat`. Their names sort as
# the slices' first stream ids do.
#
# The store here is a real SeaweedFS (`weed server -s3`) that the kit starts on 127.0.0.1, its data
# in a temporary folder and a random key; the driver talks to it with the MinIO client.

# %%
store = start_object_store()
print(store)
assert store.running and store.remote().client().bucket_exists("floor")

# %% [markdown]
# This driver halts at `upload:2`: after the second slice's object is stored, before the index marks
# it uploaded.

# %%
QR = "remote"
remote_ids = settle_jobs(conn, QR, 30)
rstream = floor.completions_stream(QR)
remote_floor = work / "remote.sqlite3"
victim = DriverProcess(conn.address, QR, remote_floor, "--slice", "10", "--lease-ms", "2000",
                       "--halt-at", "upload:2", remote_env=store.env())
print(victim.wait_for("halted"))
victim.kill()
remote = store.remote()
with floor.open_floor(remote_floor, readonly=True) as rf:
    planned, marked = rf.db.execute("SELECT COUNT(*), SUM(uploaded) FROM objects").fetchone()
print(f"bucket: {len(remote.objects(rstream))} objects · index: {planned} planned, {marked} marked uploaded",
      f"· stream: {stream_len(conn, QR)} entries")
assert (len(remote.objects(rstream)), planned, marked, stream_len(conn, QR)) == (2, 2, 1, 20)

# %% [markdown]
# The bucket is one object ahead of the index, and that slice's entries are still in the stream
# (only a slice the index knows is stored is trimmed). The next driver finds the object already there
# with the same SHA-256, marks it without writing it again, trims, and folds the last slice:

# %% tags=["reveals:08.1"]
with exercises.reveals("08.1"):  # its output waits until 08.1 is committed
    heir = DriverProcess(conn.address, QR, remote_floor, "--slice", "10", "--wait-s", "10", remote_env=store.env())
    code = heir.finish()
    folds = [ln for ln in heir.lines if ln.startswith("fold:")]
    names = remote.objects(rstream)
    from_bucket = collections.Counter(s.job_id for s in remote.settles(rstream))
    print("exit code:", code)
    print("\n".join(folds))
    assert "(1 found already stored)" in folds[0] and all("(0 found" in ln for ln in folds[1:])
    print("\n".join(names))
    print("read from the bucket alone:", sum(from_bucket.values()), "settles,", len(from_bucket), "jobs · stream:",
          stream_len(conn, QR))
    assert code == 0 and names == sorted(names) and len(names) == 3
    assert from_bucket == collections.Counter(remote_ids) and stream_len(conn, QR) == 0

# %% [markdown]
# One object, opened: its first two lines.

# %%
names = remote.objects(rstream)
body = remote.client().get_object(remote.bucket, names[0]).read().decode()
print("\n".join(body.splitlines()[:2]))
first_id = floor.StreamId.parse(json.loads(body.splitlines()[0])["stream_id"])
assert len(body.splitlines()) == 10 and names[0].split("/")[-1].startswith(first_id.sortable())

# %% [markdown]
# ## Asking the archive
#
# The `orders` stream is empty, and a completed job's row was deleted the moment it completed. The
# reads in `floor.reads` take only the floor — no node, no connector:

# %%
done_job = next(s for s in f.settles(stream) if s.outcome == "completed")
print("stream entries:", stream_len(conn, Q), "· the node's row for", done_job.job_id, ":",
      jobs.row(conn, Q, done_job.job_id))
for s in reads.by_job(f, Q, done_job.job_id):
    print(f"  {s.stream_id}  {s.job_id}  {s.outcome}  attempts={s.attempts}  result={s.result!r}")
assert stream_len(conn, Q) == 0 and jobs.row(conn, Q, done_job.job_id) == {}
assert [s.outcome for s in reads.by_job(f, Q, done_job.job_id)] == ["completed"]

# %% [markdown]
# The dead jobs are still rows on the node, in `dead`. Trim them — `trim_dead` deletes, it does not
# archive — and the floor still counts them:

# %%
buried = jobs.trim_dead(conn, Q, keep=0)
print("trim_dead deleted", len(buried), "dead jobs · the floor counts:", reads.counts(f, Q))
# every way a job can end has its count; this workload only completes and dies at the cap
assert reads.counts(f, Q) == {"completed": 383, "dead": 42, "stalled": 0, "child_failed": 0, "removed": 0}
assert len(buried) == 42

# %% [markdown]
# Settles in a time range are a search on the key — here, the pool's first half-second — and the
# throughput plot buckets the whole archive by 100 ms:

# %%
plan = " ".join(r[-1] for r in f.db.execute("EXPLAIN QUERY PLAN " + select_sql(reads.IN_RANGE), (stream, 0, 1)))
assert "USING PRIMARY KEY" in plan, plan
start_ms = f.settles(stream)[25].settled_ms  # the first settle of the pool's run
window = reads.in_range(f, Q, start_ms, start_ms + 500)
print("every settle in the window was recorded inside it:",
      all(start_ms <= s.settled_ms < start_ms + 500 for s in window))
assert window and all(start_ms <= s.settled_ms < start_ms + 500 for s in window)
assert len(reads.in_range(f, Q, 0, 2**62)) == 425
show(reads.plot_throughput(f, Q, bucket_ms=100))

# %% [markdown]
# Every count above came from a settle of the pool. A burial by the counted stall sweep is an ending
# too: when the sweep records (`record=True`, as a recording consumer, pool or metronome passes it),
# the burial's entry goes on the stream in the same step as the burial, and the driver folds it like
# any other, once. A job whose workers vanish twice, swept with `max_stalled=1`, on a queue of its own
# that folds into the same floor:

# %%
from echomq_teach import stalled  # noqa: E402

QB = "buried"  # ledger: one-ending-one-entry
jobs.drop(conn, QB)  # a re-run of this cell starts from an empty queue, as the first run did
doomed = jobs.enqueue(conn, QB, "its workers keep vanishing")
for _ in range(2):
    jobs.claim(conn, QB, 20)  # the worker dies holding it
    time.sleep(0.03)
    sweep = stalled.check(conn, QB, max_stalled=1, record=True)
on_stream = [fields for _, fields in conn.client.xrange(floor.completions_stream(QB))]
print("buried:", sweep.dead == [doomed], "· stream:", [(e["outcome"], e["error"]) for e in on_stream])
burial_driver = floor.Driver(conn, QB, f, slice_size=10)
folds = [burial_driver.fold(), burial_driver.fold()]  # the second finds nothing new
print("folded:", [fo.read for fo in folds], "· the floor counts:", reads.counts(f, QB),
      "· stream:", stream_len(conn, QB))
print("the archive's record of the job:", [(s.outcome, s.error) for s in reads.by_job(f, QB, doomed)])
assert sweep.dead == [doomed] and [(e["id"], e["outcome"]) for e in on_stream] == [(doomed, "stalled")]
assert [fo.read for fo in folds] == [1, 0] and stream_len(conn, QB) == 0
assert reads.counts(f, QB) == {"completed": 0, "dead": 0, "stalled": 1, "child_failed": 0, "removed": 0}
assert [s.outcome for s in reads.by_job(f, QB, doomed)] == ["stalled"]

# %% [markdown]
# ### 08.3 · Find what was lost
#
# Now that you can read both places a settle can be, a diagnosis. The check settles some jobs, in an
# order of their own, lets a driver fold a slice or two, and then an operator, short of memory, runs a
# plain `XTRIM … MAXLEN` on the stream (how many of each changes from one check to the next). Some
# settles are now gone for good. Your function gets the floor's path and the set of the ids of every
# settled job: return the set of ids that were lost. Read only: a fold run to see what happens writes.
#
# Stuck after a try? `exercises.hint("08.3")`. The reference solution is in
# `notebooks/solutions/08_3_find_the_lost.py`.

# %%
def find_the_lost(conn, queue, floor_path, settled):
    # return a set of job ids
    raise NotImplementedError


print(exercises.check("08.3", find_the_lost, conn))

# %% [markdown]
# ## Recap
#
# - Memory keeps a settle only while the node runs: a completed row is deleted at once, and a node
#   without persistence loses the stream with the rest. An append-only file keeps the stream, but
#   trimming it deletes.
# - The archive driver folds the completions stream slice by slice: read after the cursor, write the
#   rows and the cursor in one transaction, commit, (upload), and only then trim with `MINID`.
# - Killed at any of the steps tested (read, write, commit, upload, trim), it loses nothing and archives
#   nothing twice ([ledger](docs/guarantees.md#floor-fold-survives-a-kill)): the next driver finishes the
#   upload and the trim, then reads after the committed cursor. One driver per stream; a second is
#   refused, and a late one is fenced by its token.
# - The floor answers alone: a job by id, a time range, counts, throughput.
#
# Next: **09-cluster** — the same queue on a Valkey Cluster, and a primary killed mid-run.

# %% [markdown]
# ## Check yourself
#
# Each question is answered by this notebook's own cells: run them again, read their traces and the
# scripts they print. Nothing grades these; the section a question comes from holds its answer.
#
# 1. What does a node without persistence keep of the completions stream across a restart, and what
#    does an append-only file keep?
# 2. In which order does a fold read, commit and trim, and what would the other orders lose or
#    archive twice?
# 3. A driver was killed between its commit and its trim. How does the next driver avoid archiving
#    that slice twice?
# 4. A driver paused past its lease wakes up. What refuses its late commit, and where is its token
#    checked?
# 5. A recording sweep buried a job. Which outcome does the floor hold for it, and how many times,
#    after two folds?

# %% [markdown]
# ## Further reading
#
# - [Valkey: streams][r1]: the completions stream's data type, its ids and `XRANGE`.
# - [`XTRIM`][r2]: the `MINID` trim the driver runs only after its commit.
# - [Valkey: persistence][r3]: the append-only file and its sync policies.
# - [SQLite: atomic commit][r4]: how the embedded floor's commit survives a crash.
#
# [r1]: https://valkey.io/topics/streams-intro/
# [r2]: https://valkey.io/commands/xtrim/
# [r3]: https://valkey.io/topics/persistence/
# [r4]: https://www.sqlite.org/atomiccommit.html

# %% [markdown]
# ## When you are done
#
# The object store and the nodes the kit started for this notebook stop with its kernel (the store by
# its PID: SIGTERM, half a second's grace, then SIGKILL), so there is nothing to stop by hand: the floor
# and the store stay open for your own questions until you leave. Then shut the kernel down
# (**Kernel → Shut Down Kernel**).
