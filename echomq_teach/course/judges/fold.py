"""08.2 · the learner's fold step, judged: a clean fold, then a runner process killed by SIGKILL after each step
of every fold that changed what the floor or the stream holds, the floor and the stream read by the checker as
one archive.

The spec differs from the fold notebook 08 shows: the stream has a second reader, the shop's notifier; a fold
may trim only what both the floor and the notifier hold, so a trim below what the floor alone holds loses the
notifier's unread settles. The clean run has the notifier at the 15th of 25 settles, behind the floor, and
finds such a trim. The kills come where a wrong order loses settles whatever the slicing: after each commit and
each trim of every fold, the first and the last, partial one too (a kill after a read, or inside a commit's
transaction, leaves what the step before it left), each on fresh settles that the notifier has all read, so
that the floor alone holds the stream back: a trim before its commit then always loses the slice it trimmed.
A fold reads, and commits, at most ``SLICE`` settles a slice (the kit refuses more): one slice of the whole
stream would leave no fold with steps to kill between."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

from ...completions import StreamId, completions_stream
from ...connector import Connector
from ...errors import BadInput
from ...nodes.process import ChildError, run_tool
from ..fold_runner import SLICE, notifier_key
from ..registry import Findings
from .frame import over_seeds, side_by_side


class FOLD:
    """The judged runs of 08.2: 25 settles, folded by the learner's step in a process killed at each step."""

    SETTLES = 25
    #: how many of the settles the shop's notifier, the stream's other reader, has read when the clean run starts
    NOTIFIED = 15
    #: the most settles a fold reads and commits (the kit refuses more)
    SLICE = SLICE
    #: the steps after which a kill leaves something new: the floor or the stream changed
    KILLED_AFTER = ("commit", "trim")
    #: kill runs at once (a fold of small slices has many steps; each run is two processes)
    AT_ONCE = 6
    TIMEOUT_S = 30.0


def _fold_module(step: Any, folder: Path) -> tuple[str, str]:
    """The learner's fold step as a module in ``folder``, for the runner process to import."""
    name = getattr(step, "__name__", "")
    if not name.isidentifier():
        raise BadInput("return your fold step as a def with a name (not a lambda): a process imports it by name")
    try:
        source = textwrap.dedent(inspect.getsource(step))
    except (OSError, TypeError) as exc:
        raise BadInput(f"the source of {name!r} cannot be read, so no process can import it: {exc}") from exc
    (folder / "learner_fold.py").write_text("# written by the 08.2 check for its runner processes\n" + source)
    return "learner_fold", name


def _runner(node: Any, spec: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ECHOMQ_ADDRESS=json.dumps(node.address), PYTHONUNBUFFERED="1")
    argv = [sys.executable, "-m", "echomq_teach.course.fold_runner", json.dumps(spec)]
    # forked by the kit's launcher, as every process the kit starts: it dies with the kernel, and on the
    # timeout run_tool kills it by its PID
    try:
        return run_tool(argv, timeout_s=FOLD.TIMEOUT_S, env=env)
    except ChildError as exc:  # a fold that never ends is the learner's finding, not the check's crash
        return subprocess.CompletedProcess(argv, -1, "", str(exc))


def _crashed(p: subprocess.CompletedProcess[str]) -> str:
    """What a runner that failed said: the learner's error, with its line in their fold step."""
    tail = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    where = next((ln.strip() for ln in reversed(tail) if "learner_fold.py" in ln), "")
    line = re.search(r"line (\d+)", where)
    said = tail[-1] if tail else (p.stdout.strip().splitlines() or ["no output"])[-1]
    said = said.removeprefix("echomq_teach.errors.")  # the kit's own refusal reads as BadInput: …
    if "UNIQUE constraint failed: settles" in said:
        said = ("it committed again settles the floor already holds (the floor refused them): a fold read again "
                "what an earlier one had committed")
    return f"{said}" + (f" (line {int(line.group(1)) - 1} of your fold step)" if line else "")


def _steps(out: str) -> list[tuple[int, int, str]]:
    return [(int(n), int(k), name) for n, k, name in re.findall(r"^step (\d+) (\d+) (\w+)$", out, re.M)]


def _recorded_settles(conn: Connector, queue: str, folder: Path) -> list[str]:
    """``FOLD.SETTLES`` jobs enqueued, claimed and completed (recorded: on the stream), every call in a history."""
    from ...lab.history import Recorder, ServerClock

    clock = ServerClock(conn)
    producer, worker = Recorder(folder, "producer", clock), Recorder(folder, "w0", clock)
    try:
        ids = producer.enqueue_many(conn, queue, [f"job {i}" for i in range(FOLD.SETTLES)])
        for _ in ids:
            job = worker.claim(conn, queue, 30_000)
            assert job is not None
            worker.complete(conn, queue, job.id, job.attempts, f"done {job.payload}", record=True)
    finally:
        producer.close()
        worker.close()
    return ids


def _fold_outcome(conn: Connector, queue: str, path: str, history: Path) -> dict[str, Any]:
    """The checker's report on the settles' run, the floor and the stream read as one archive, and what is where."""
    from ... import floor as floor_mod
    from ...lab.checker import FinalState, check
    from ...lab.history import History

    stream = completions_stream(queue)
    with floor_mod.open_floor(path, readonly=True) as fl:
        archived = fl.settles(stream)
    final = FinalState.read(conn, queue)
    in_stream = [s.stream_id for s in final.stream]
    # the floor is the stream's past, and what is in both is one entry: an ending neither holds is one the
    # archive lost ("unrecorded")
    held = {s.stream_id for s in archived}
    final.stream = archived + [s for s in final.stream if s.stream_id not in held]
    on_floor = Counter(s.job_id for s in archived)
    return {"report": check(History.read(history), final), "on_floor": on_floor, "left": in_stream}


def _notify(conn: Connector, queue: str, read: int) -> list[StreamId]:
    """The shop's notifier has read the first ``read`` entries: its cursor set there. Answers the ids
    it has not read yet, which the stream must keep for it."""
    ids = [StreamId.parse(eid) for eid, _ in conn.call("XRANGE", completions_stream(queue), "-", "+")]
    conn.call("SET", notifier_key(queue), str(ids[read - 1]))
    return ids[read:]


def _one_run(node: Any, conn: Connector, base: dict[str, Any], read: int, kill: tuple[int, int, str] | None,
             f: Findings) -> str:
    """Settles in a fresh queue, the notifier having read the first ``read``; a runner killed right after the
    step ``kill`` (None: no kill); a second runner to the end; the checker's verdict on the settles' history
    against the floor and the stream. Answers the last runner's output (its steps)."""
    name = f"k{kill[0]}" if kill else f"clean{read}"
    queue = f"{base['prefix']}-{name}"
    history = Path(base["folder"]) / f"history-{name}"
    path = str(Path(base["folder"]) / f"floor-{name}.sqlite3")
    ids = _recorded_settles(conn, queue, history)
    unread = _notify(conn, queue, read)
    spec = dict(base, queue=queue, floor=path, slice=FOLD.SLICE)
    notifier = f"the notifier having read {'all' if read == FOLD.SETTLES else read} of {FOLD.SETTLES}"
    said = f"killed right after step {kill[0]} ({kill[2]} of fold {kill[1]}, {notifier})" if kill else \
        f"with no kill ({notifier})"
    n = kill[0] if kill else 0
    if kill:
        first = _runner(node, dict(spec, kill_at=n))
        if first.returncode != -signal.SIGKILL:
            f.expect(False, f"{said}: your fold step never reached that step: {_crashed(first)}")
            return ""
    last = _runner(node, dict(spec, kill_at=0))
    if not f.expect(last.returncode == 0, f"{said}: {'the next runner' if kill else 'the runner'}'s fold failed: "
                    f"{_crashed(last)}"):
        return ""
    out = _fold_outcome(conn, queue, path, history)
    report, on_floor = out["report"], out["on_floor"]
    if not report.valid:
        counts = ", ".join(f"{k.replace('_', ' ')} {c}" for k, c in report.counts().items() if c)
        first_finding = report.findings[0]
        f.expect(False, f"{said}: the checker, reading the floor and the stream as one archive, says invalid "
                 f"({counts}): {first_finding.kind.replace('_', ' ')}: {first_finding.job} — {first_finding.detail}. "
                 "The stream was trimmed of settles no commit held.")
        return ""
    twice = sorted(j for j, c in on_floor.items() if c > 1)
    f.expect(not twice, f"{said}: {len(twice)} settles are on the floor twice (e.g. {twice[:1]}): a fold read "
             "again what an earlier one had committed.")
    unfolded = [j for j in ids if j not in on_floor]
    f.expect(not unfolded, f"{said}: {len(unfolded)} of {FOLD.SETTLES} settles were never folded onto the floor "
             "once the folds answered 0.")
    lost = [i for i in unread if i not in out["left"]]
    f.expect(not lost, f"{said}: {len(lost)} settles the shop's notifier had not read yet were trimmed from the "
             f"stream (e.g. {lost[0] if lost else ''}): their e-mails will never be sent. The stream has two "
             "readers; it may lose only what both have read.")
    # with no kill, a fold trims what both readers held when it began (at its start, or after its commit): one
    # that leaves it for a later fold, or for the end, lets the stream grow for as long as the queue works
    late = next(((k, c) for k, c in re.findall(r"^kept (\d+) (\d+)$", last.stdout, re.M) if int(c)), None)
    if not kill and late:
        f.expect(False, f"{said}: after fold {late[0]} the stream still held {late[1]} settles that the floor "
                 "already held when that fold began and the notifier had read: a fold trims what both readers "
                 "hold, or the stream grows for as long as the queue works and no fold catches up.")
        return ""
    # what both readers hold may stay in the stream after a kill between the last commit and its trim: the next
    # fold with something to fold trims it. With no kill, the folds trim it themselves
    stale = 0 if kill else len(out["left"]) - len(unread)
    f.expect(lost or unfolded or stale <= 0, f"{said}: {stale} entries the floor holds and the notifier has read "
             "are still in the stream: the folds did not trim what both readers had.")
    return last.stdout


def judge_fold(step: Any, f: Findings) -> None:
    """Judge a fold step (08.2): a clean run, then one killed after each commit and each trim of every fold, on a
    node of its own."""
    from ...nodes.local import LocalNode

    if not callable(step):
        f.expect(False, f"return your fold step, a function fold_step(kit); got {type(step).__name__}.")
        return
    folder = Path(tempfile.mkdtemp(prefix="echomq-fold-"))
    try:
        try:
            module, function = _fold_module(step, folder)
        except BadInput as exc:
            f.expect(False, str(exc))
            return
        base = {"folder": str(folder), "module": module, "function": function, "prefix": "fold"}
        node = LocalNode()
        try:
            conn = node.connector()
            try:
                # two runs with no kill, side by side: the notifier behind the floor (a trim below what the
                # floor alone holds loses its unread settles), and the notifier having read all, as in the kill
                # runs: its steps are theirs
                clean = {read: Findings() for read in (FOLD.NOTIFIED, FOLD.SETTLES)}
                printed: dict[int, str] = {}

                def no_kill(read: int) -> None:
                    printed[read] = _one_run(node, conn, base, read, None, clean[read])

                side_by_side(no_kill, list(clean), FOLD.TIMEOUT_S * 2 + 30)
                bad = [read for read, found in clean.items() if found.items]
                if bad:
                    f.items.extend(clean[bad[0]].items)
                    return
                # a kill after each step of every fold that changed the floor or the stream: the kill runs start
                # from the state the caught-up run did, so their steps are that run's
                kills = [s for s in _steps(printed[FOLD.SETTLES]) if s[2] in FOLD.KILLED_AFTER]
                found = {k: Findings() for k in kills}
                for i in range(0, len(kills), FOLD.AT_ONCE):
                    side_by_side(lambda k: _one_run(node, conn, base, FOLD.SETTLES, k, found[k]),
                                 kills[i:i + FOLD.AT_ONCE], FOLD.TIMEOUT_S * 2 + 30)
                over_seeds(found, f, what="kills", name=lambda k: f"after the {k[2]} of fold {k[1]}")
            finally:
                conn.close()
        finally:
            node.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
