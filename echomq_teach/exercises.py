"""Exercise checks for the course notebooks.

Each exercise hands the learner's function a fresh queue on their own node,
then reads the real node and says, in plain words, what is right or wrong.
A check never crashes the notebook: an exception inside the learner's code is
reported as a finding too. Reference solutions live in ``notebooks/solutions/``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import ids, jobs, snapshots
from .connector import Connector


@dataclass
class Verdict:
    """The outcome of one check: solved or not, and why."""

    exercise: str
    ok: bool
    findings: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        head = f"✓ {self.exercise}: solved." if self.ok else f"✗ {self.exercise}: not yet."
        return "\n".join([head] + [f"  • {f}" for f in self.findings])

    def __repr__(self) -> str:
        return str(self)

    def __bool__(self) -> bool:
        return self.ok


class _Findings:
    def __init__(self) -> None:
        self.items: list[str] = []

    def expect(self, cond: bool, message: str) -> bool:
        if not cond:
            self.items.append(message)
        return cond


@dataclass
class Exercise:
    key: str
    title: str
    # setup(conn, queue) prepares the queue and answers extra arguments for the learner's function
    setup: Callable[[Connector, str], tuple[Any, ...]]
    verify: Callable[[Connector, str, Any, tuple[Any, ...], _Findings], None]
    hint: str
    #: the check never prints the hint; the learner asks for it with ``hint(key)`` after a try
    hint_on_request: bool = False

    def hints(self) -> list[str]:
        """What a failed check adds to its findings."""
        return [] if self.hint_on_request else [self.hint]


_REGISTRY: dict[str, Exercise] = {}


def exercise(key: str, title: str, hint: str, *, hint_on_request: bool = False) -> Callable[..., Any]:
    """Register a verify function; its ``setup`` is given as an attribute by ``@…setup``."""

    def wrap(verify: Callable[..., None]) -> Callable[..., None]:
        _REGISTRY[key] = Exercise(key, title, lambda c, q: (), verify, hint, hint_on_request)
        return verify

    return wrap


def hint(key: str) -> str:
    """The hint of exercise ``key``: ask for it after a try that did not pass."""
    return _REGISTRY[key].hint


def setup_for(key: str) -> Callable[..., Any]:
    def wrap(fn: Callable[[Connector, str], tuple[Any, ...]]) -> Callable[..., Any]:
        _REGISTRY[key].setup = fn
        return fn

    return wrap


def fresh_queue(key: str) -> str:
    """A queue name nobody has used: exercise runs never see each other's jobs."""
    return f"ex{key.replace('.', '-')}-{ids.mint()[3:]}"


def check(key: str, solution: Callable[..., Any], conn: Connector, *others: Connector) -> Verdict:
    """Run ``solution(conn, queue, *setup_args)`` on a fresh queue and check the node."""
    ex = _REGISTRY[key]
    queue = fresh_queue(key)
    conns = (conn, *others)
    args = ex.setup(conns if others else conn, queue)
    f = _Findings()
    try:
        result = solution(*conns, queue, *args)
    except NotImplementedError:
        return Verdict(f"{key} {ex.title}", False, ["your function still raises NotImplementedError.", *ex.hints()])
    except Exception as exc:  # noqa: BLE001 - the learner's bug is a finding, not a crash
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return Verdict(
            f"{key} {ex.title}",
            False,
            [f"your function raised {type(exc).__name__}: {exc} (line {where.lineno}).", *ex.hints()],
        )
    ex.verify(conns if others else conn, queue, result, args, f)
    if f.items:
        f.items.extend(ex.hints())
    return Verdict(f"{key} {ex.title}", not f.items, f.items)


def titles() -> dict[str, str]:
    return {k: e.title for k, e in sorted(_REGISTRY.items())}


# -- 01 · the lifecycle ------------------------------------------------------------------------
@exercise("01.1", "Fill the queue", "Hint: call jobs.enqueue(conn, queue, payload) once for each payload, in order.")
def _v011(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    s = snapshots.snapshot(conn, queue)
    if not f.expect(len(s.pending) == 3, f"pending should hold 3 ids; it holds {len(s.pending)}."):
        return
    payloads = [s.rows.get(i, {}).get("payload") for i in s.pending]
    f.expect(payloads == ["a", "b", "c"], f"in id order the payloads should be a, b, c; they are {payloads}.")
    states = {s.rows[i].get("state") for i in s.pending if i in s.rows}
    f.expect(states == {"pending"}, f"every row's state should be pending; saw {sorted(states)}.")


@exercise(
    "01.2",
    "Walk the happy path",
    "Hint: claim = jobs.claim(conn, queue, 30_000), then jobs.complete(conn, queue, claim.id, claim.attempts).",
)
def _v012(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    (job_id,) = args
    s = snapshots.snapshot(conn, queue)
    f.expect(not s.where(job_id), f"{job_id} should have left every set; it is in {s.where(job_id)}.")
    f.expect(job_id not in s.rows, f"a completed row is deleted, but {job_id}'s row is still there.")
    f.expect(s.completed == 1, f"metrics:completed count should be 1; it is {s.completed}.")


@setup_for("01.2")
def _s012(conn: Connector, queue: str) -> tuple[Any, ...]:
    return (jobs.enqueue(conn, queue, "the job to finish"),)


# -- 02 · claim and lease ------------------------------------------------------------------------
@exercise("02.1", "A five-second lease", "Hint: return jobs.claim(conn, queue, 5_000).")
def _v021(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    (job_id,) = args
    s = snapshots.snapshot(conn, queue)
    if not f.expect(job_id in s.sets["active"], f"{job_id} should be in active; it is in {s.where(job_id)}."):
        return
    left = s.relative("active", job_id)
    f.expect(0 < left <= 5_000, f"the active score should be server now + 5000 ms; it is now {left:+d} ms.")
    f.expect(
        isinstance(result, jobs.Claimed) and result.attempts == 1,
        f"return the Claimed that jobs.claim answered; got {result!r}.",
    )


@setup_for("02.1")
def _s021(conn: Connector, queue: str) -> tuple[Any, ...]:
    return (jobs.enqueue(conn, queue, "lease me"),)


@exercise(
    "02.2", "Claim from a paused queue", "Hint: jobs.pause(conn, queue), then return jobs.claim(conn, queue, 30_000)."
)
def _v022(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    (job_id,) = args
    s = snapshots.snapshot(conn, queue)
    f.expect(s.paused, "the queue should be paused (emq:{q}:paused present).")
    f.expect(result is None, f"a paused queue's claim answers None (:empty); yours answered {result!r}.")
    f.expect(s.pending == [job_id], f"pending should still hold {job_id}, untouched; it holds {s.pending}.")


@setup_for("02.2")
def _s022(conn: Connector, queue: str) -> tuple[Any, ...]:
    return (jobs.enqueue(conn, queue, "wait for resume"),)


@exercise(
    "02.3",
    "Feed the ghost guard",
    "Hint: conn.call('ZADD', keyspace.queue_key(queue, 'pending'), 0, 'JOBghost'), then return the claim.",
)
def _v023(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    s = snapshots.snapshot(conn, queue)
    f.expect(result is None, f"a ghost head answers None (:empty); the claim answered {result!r}.")
    f.expect(not s.pending, f"the ghost should have been consumed by the pop; pending holds {s.pending}.")
    f.expect(not s.rows, f"the guard mints no row; the queue has rows for {sorted(s.rows)}.")
    sent = [e.line for e in conn.last(6)]
    f.expect(any("ZADD" in ln for ln in sent), "add the ghost yourself with a plain ZADD on pending (no row).")


# -- 03 · completion and recovery ------------------------------------------------------------------
@exercise(
    "03.1",
    "Into the morgue",
    "Hint: claim, retry with max_attempts=2 and a tiny delay_ms, promote once it is due, claim again, retry again.",
)
def _v031(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    (job_id,) = args
    s = snapshots.snapshot(conn, queue)
    where = s.where(job_id) or "no set"
    if not f.expect(s.where(job_id) == ["dead"], f"{job_id} should be in dead; it is in {where}."):
        return
    r = s.rows[job_id]
    f.expect(r.get("attempts") == "2", f"attempts should equal the cap, 2; it is {r.get('attempts')}.")
    f.expect(bool(r.get("last_error")), "the dead row should carry a last_error.")


@setup_for("03.1")
def _s031(conn: Connector, queue: str) -> tuple[Any, ...]:
    return (jobs.enqueue(conn, queue, "doomed"),)


@exercise(
    "03.2",
    "Recover a crashed worker's job",
    "Hint: wait past the 50 ms lease, jobs.reap(conn, queue), claim again, complete with the NEW attempts.",
)
def _v032(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    job_id, old_token = args
    s = snapshots.snapshot(conn, queue)
    f.expect(not s.where(job_id), f"{job_id} should be settled; it is still in {s.where(job_id)}.")
    f.expect(s.completed == 1, f"metrics:completed should count 1; it counts {s.completed}.")
    reaped = any(e.script == "@reap" and e.reply for e in conn.last(20))
    f.expect(reaped, "the lapsed lease must come back through @reap (a client sweep), not by waiting.")


@setup_for("03.2")
def _s032(conn: Connector, queue: str) -> tuple[Any, ...]:
    job_id = jobs.enqueue(conn, queue, "worker crashed on me")
    claimed = jobs.claim(conn, queue, 50)
    assert claimed is not None
    return job_id, claimed.attempts


# -- 04 · two executors --------------------------------------------------------------------------
@exercise(
    "04.1",
    "Same claim, two executors",
    "Hint: return (jobs.claim(s_conn, queue, 30_000), jobs.claim(n_conn, queue, 30_000)).",
)
def _v041(conns: Any, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    s_conn, n_conn = conns
    (job_id,) = args
    if not f.expect(
        isinstance(result, tuple) and len(result) == 2, f"return a pair of claims; got {type(result).__name__}."
    ):
        return
    f.expect(result[0] == result[1], f"the two claims should be equal; got {result[0]!r} and {result[1]!r}.")
    s_row = snapshots.snapshot(s_conn, queue).rows.get(job_id, {})
    n_row = snapshots.snapshot(n_conn, queue).rows.get(job_id, {})
    f.expect(s_row.get("state") == n_row.get("state") == "active", "both rows should be active after the claims.")
    run_id = n_conn.client.info("server")["run_id"]
    f.expect(n_row.get("lease_epoch") == run_id, "the native row should carry lease_epoch = the server's run_id.")
    f.expect("lease_epoch" not in s_row, "the scripted row should have no lease_epoch.")
    f.expect(
        any(e.line.startswith("EMQ.CLAIM") for e in n_conn.last(5)),
        "the native claim should go out as EMQ.CLAIM: use the wire 6 connector n_conn.",
    )


@setup_for("04.1")
def _s041(conns: Any, queue: str) -> tuple[Any, ...]:
    job_id = ids.mint()
    for c in conns:
        jobs.enqueue(c, queue, "twin", job_id=job_id)
    return (job_id,)


@exercise(
    "04.2",
    "Read the brands",
    'Hint: brand = conn.call("GET", keyspace.VERSION_KEY) on each connector.',
)
def _v042(conns: Any, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    s_conn, n_conn = conns
    want = {"scripted": "echomq:4.0.0", "native": "echomq:6.0.0"}
    f.expect(result == want, f"expected {want}; got {result!r}.")
    for name, c in (("scripted", s_conn), ("native", n_conn)):
        f.expect(
            any(e.line == "GET {emq}:version" for e in c.last(5)),
            f"read the {name} brand through its connector, so it shows in the trace.",
        )


# -- 05 · flows --------------------------------------------------------------------------------------
@exercise(
    "05.1",
    "Land a flow of four",
    'Hint: return flows.add(conn, queue, "assemble", ["part 1", "part 2", "part 3", "part 4"]).',
)
def _v051(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    from . import flows

    s = snapshots.snapshot(conn, queue)
    held = [i for i, r in s.rows.items() if r.get("state") == "awaiting_children"]
    if not f.expect(len(held) == 1, f"one parent should be held (awaiting_children); found {len(held)}."):
        return
    parent = held[0]
    f.expect(s.rows[parent].get("payload") == "assemble", "the parent's payload should be 'assemble'.")
    f.expect(s.where(parent) == [], f"the parent is held out of every set; it is in {s.where(parent)}.")
    f.expect(len(s.pending) == 4, f"four children should be pending; {len(s.pending)} are.")
    f.expect(flows.dependencies(conn, queue, parent) == 4, "the parent's :dependencies should be 4.")
    f.expect(getattr(result, "parent_id", None) == parent, "return what flows.add answered.")


@exercise(
    "05.2",
    "Release the parent",
    "Hint: claim and complete three times (with a result), then claim the parent; read flows.children_values.",
)
def _v052(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    from . import flows

    (parent,) = args
    s = snapshots.snapshot(conn, queue)
    f.expect(flows.dependencies(conn, queue, parent) == 0, "every child should be done: :dependencies = 0.")
    f.expect(s.state(parent) == "active", f"claim the released parent; its state is {s.state(parent)}.")
    values = flows.children_values(conn, queue, parent)
    f.expect(len(values) == 3, f"all three children should be in :processed; {len(values)} are.")
    f.expect(result == values, "return flows.children_values(conn, queue, parent_id).")


@setup_for("05.2")
def _s052(conn: Connector, queue: str) -> tuple[Any, ...]:
    from . import flows

    return (flows.add(conn, queue, "parent", ["one", "two", "three"]).parent_id,)


# -- 08 · the durable floor ------------------------------------------------------------------------
# Hints on request only (``exercises.hint("08.1")``): a printed hint would be the answer.
def _floor_path(queue: str) -> str:
    """A floor file in a folder of its own, removed when the kernel exits."""
    import atexit
    import shutil
    import tempfile
    from pathlib import Path

    folder = tempfile.mkdtemp(prefix=f"{queue}-")
    atexit.register(shutil.rmtree, folder, True)
    return str(Path(folder) / "floor.sqlite3")


_CRASH_KEYS = ("floor", "stream", "floor_after")


@exercise(
    "08.1",
    "Predict the crash",
    "Hint: each fold reads 10 entries, commits them, then trims them. The crash lands between the third "
    "commit and its trim. The next driver trims to its cursor first, then reads only after it.",
    hint_on_request=True,
)
def _v081(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    from . import floor
    from .floor.process import DriverProcess
    from .floor.workload import stream_len

    (path,) = args
    if not f.expect(
        isinstance(result, dict) and set(result) == set(_CRASH_KEYS),
        f"return a dict with exactly the keys {list(_CRASH_KEYS)}; got {result!r}.",
    ):
        f.expect(False, "predict first, from the prose: no driver has run yet.")
        return
    bad = [k for k in _CRASH_KEYS if isinstance(result[k], bool) or not isinstance(result[k], int)]
    if not f.expect(not bad, f"each prediction is a whole number; {bad} are not."):
        return
    # the real run: a driver process halted after its third commit, killed, then a second driver
    first = DriverProcess(conn.address, queue, path, "--slice", "10", "--lease-ms", "1000", "--halt-at", "commit:3")
    try:
        first.wait_for("halted at commit of fold 3")
        first.kill()
    finally:
        first.stop()
    with floor.open_floor(path, readonly=True) as fl:
        seen = {"floor": fl.count(), "stream": stream_len(conn, queue)}
    second = DriverProcess(conn.address, queue, path, "--slice", "10", "--wait-s", "10")
    second.finish()
    with floor.open_floor(path, readonly=True) as fl:
        seen["floor_after"] = fl.count()
    said = {
        "floor": "rows on the floor when the driver died",
        "stream": "entries left in the stream when it died",
        "floor_after": "rows on the floor once the next driver finished",
    }
    for k in _CRASH_KEYS:
        f.expect(result[k] == seen[k], f"{said[k]}: you predicted {result[k]}; the run gave {seen[k]}.")


@setup_for("08.1")
def _s081(conn: Connector, queue: str) -> tuple[Any, ...]:
    from .floor.workload import settle_jobs

    settle_jobs(conn, queue, 35)
    return (_floor_path(queue),)


@exercise(
    "08.2",
    "Find what was lost",
    "Hint: every settle that was not lost is on the floor (floor.open_floor(path).settles(stream)) or still in "
    "the stream (XRANGE); an id in neither was trimmed before any driver folded it.",
    hint_on_request=True,
)
def _v082(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    _path, settled = args
    lost = set(settled[10:15])  # folded 10, then an operator's XTRIM MAXLEN 5 took the next 5 unarchived
    if not f.expect(
        isinstance(result, (set, frozenset)) and all(isinstance(x, str) for x in result),
        f"return the lost job ids as a set of str; got {type(result).__name__}.",
    ):
        f.expect(False, "read both places a settle can be: the floor, and the stream.")
        return
    wrongly = result - lost
    f.expect(not wrongly, f"{len(wrongly)} of the ids you named were not lost: they are on the floor or in the stream.")
    f.expect(lost <= result, f"{len(lost - result)} lost ids are missing from your answer.")


@setup_for("08.2")
def _s082(conn: Connector, queue: str) -> tuple[Any, ...]:
    from . import floor
    from .floor.driver import completions_stream
    from .floor.workload import settle_jobs

    settled = settle_jobs(conn, queue, 20)
    path = _floor_path(queue)
    with floor.open_floor(path) as fl, floor.Driver(conn, queue, fl, slice_size=10) as driver:
        driver.fold()  # one slice of ten folded and trimmed; ten settles still only in the stream
    conn.call("XTRIM", completions_stream(queue), "MAXLEN", 5)  # an operator trims "to save memory"
    return path, settled
