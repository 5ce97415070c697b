"""Notebook 08 · the durable floor: predict a driver's crash; find what an operator's trim lost; build a fold
step that survives a kill at every step of it (judged in runner processes killed by SIGKILL)."""

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
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from ...connector import Connector
from ...errors import BadInput
from ..registry import Findings, exercise, judged, prediction, setup_for


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


def _crash_keys_shape(answer: Any, args: tuple[Any, ...]) -> str | None:
    if not isinstance(answer, dict) or set(answer) != set(_CRASH_KEYS):
        return f"return a dict with exactly the keys {list(_CRASH_KEYS)}; got {answer!r}."
    bad = [k for k in _CRASH_KEYS if isinstance(answer[k], bool) or not isinstance(answer[k], int)]
    return f"each prediction is a whole number; {bad} are not." if bad else None


@prediction(
    "08.1",
    "Predict the crash",
    "Hint: each fold reads 10 entries, commits them, then trims them. The crash lands between the third "
    "commit and its trim. The next driver trims to its cursor first, then reads only after it.",
    solution="08_1_predict_the_crash.py",
    shape=_crash_keys_shape,
)
def _run_predict_the_crash(conn: Connector, queue: str, args: tuple[Any, ...]) -> dict[str, int]:
    from ... import floor
    from ...floor.process import DriverProcess
    from ...floor.workload import stream_len

    (path,) = args
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
    return seen


@setup_for("08.1")
def _setup_predict_the_crash(conn: Connector, queue: str) -> tuple[Any, ...]:
    from ...floor.workload import settle_jobs

    settle_jobs(conn, queue, 35)
    return (_floor_path(queue),)


@exercise(
    "08.3",
    "Find what was lost",
    "Hint: every settle that was not lost is on the floor (floor.open_floor(path).settles(stream)) or still in "
    "the stream (XRANGE); an id in neither was trimmed before any driver folded it.",
    solution="08_3_find_the_lost.py",
    kind="diagnose",
)
def _verify_find_the_lost(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
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


@setup_for("08.3")
def _setup_find_the_lost(conn: Connector, queue: str) -> tuple[Any, ...]:
    from ... import floor
    from ...floor.driver import completions_stream
    from ...floor.workload import settle_jobs

    settled = settle_jobs(conn, queue, 20)
    path = _floor_path(queue)
    with floor.open_floor(path) as fl, floor.Driver(conn, queue, fl, slice_size=10) as driver:
        driver.fold()  # one slice of ten folded and trimmed; ten settles still only in the stream
    conn.call("XTRIM", completions_stream(queue), "MAXLEN", 5)  # an operator trims "to save memory"
    return path, settled


# -- 08.2 · build: a fold step that survives a kill at every step of it --------------------------------------
class FOLD:
    """The judged runs of 08.2: 25 settles, folded by the learner's step in a process killed at each step."""

    SETTLES = 25
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
    # the runner is a child of this check alone; on the timeout, run() kills it by its PID
    return subprocess.run([sys.executable, "-m", "echomq_teach.course.fold_runner", json.dumps(spec)], env=env,
                          capture_output=True, text=True, timeout=FOLD.TIMEOUT_S, check=False)


def _crashed(p: subprocess.CompletedProcess[str]) -> str:
    """What a runner that failed said: the learner's error, with its line in their fold step."""
    tail = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    where = next((ln.strip() for ln in reversed(tail) if "learner_fold.py" in ln), "")
    line = re.search(r"line (\d+)", where)
    said = tail[-1] if tail else (p.stdout.strip().splitlines() or ["no output"])[-1]
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
    from ...floor.driver import completions_stream
    from ...lab.checker import FinalState, check
    from ...lab.history import History

    stream = completions_stream(queue)
    with floor_mod.open_floor(path, readonly=True) as fl:
        archived = fl.settles(stream)
    final = FinalState.read(conn, queue)
    in_stream = [s.job_id for s in final.stream]
    # the floor is the stream's past: an ending neither holds is one the archive lost ("unrecorded")
    final.stream = archived + final.stream
    on_floor = Counter(s.job_id for s in archived)
    return {"report": check(History.read(history), final), "on_floor": on_floor, "left": len(in_stream)}


def _one_kill(node: Any, conn: Connector, base: dict[str, Any], kill: tuple[int, int, str] | None,
              f: Findings) -> str:
    """Settles in a fresh queue; a runner killed at ``kill`` (None: no kill); a second runner to the end; the
    checker's verdict on the settles' history against the floor and the stream."""
    n = kill[0] if kill else 0
    queue = f"{base['prefix']}-{n}"
    history = Path(base["folder"]) / f"history-{n}"
    path = str(Path(base["folder"]) / f"floor-{n}.sqlite3")
    ids = _recorded_settles(conn, queue, history)
    spec = dict(base, queue=queue, floor=path)
    said = f"killed at step {n} ({kill[2]} of fold {kill[1]})" if kill else "with no kill"
    if kill:
        first = _runner(node, dict(spec, kill_at=n))
        if first.returncode != -signal.SIGKILL:
            f.expect(False, f"{said}: your fold step never reached that step: {_crashed(first)}")
            return ""
    last = _runner(node, dict(spec, kill_at=0))
    if not f.expect(last.returncode == 0, f"{said}: the next runner's fold failed: {_crashed(last)}"):
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
    f.expect(out["left"] == 0 or unfolded, f"{said}: {out['left']} entries the floor holds are still in the "
             "stream: the folds did not trim what they committed.")
    return last.stdout


def judge_fold(step: Any, f: Findings) -> None:
    """Judge a fold step (08.2): a clean run, then one killed at each step of its second fold, on a node of its own."""
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
                clean = Findings()
                printed = _one_kill(node, conn, base, None, clean)
                if clean.items:
                    f.items.extend(clean.items)
                    return
                # the steps of the second fold, as the clean run printed them: the judged kill points
                steps = _steps(printed)
                kills = [s for s in steps if s[1] == 2] or steps
                found = {k: Findings() for k in kills}
                threads = [threading.Thread(target=_one_kill, args=(node, conn, base, k, found[k]), daemon=True)
                           for k in kills]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(FOLD.TIMEOUT_S * 2 + 30)
                failed = [k for k in kills if found[k].items]
                if failed:
                    f.items.extend(found[failed[0]].items)
                    f.items.append(f"failed at {len(failed)} of the {len(kills)} steps of a fold "
                                   f"({', '.join(f'{k[2]} (step {k[0]})' for k in failed)}).")
            finally:
                conn.close()
        finally:
            node.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@judged(
    "08.2",
    "A fold that survives a kill at every step",
    "Hint: read after the floor's cursor (kit.cursor()), never from the stream's start; commit the slice with "
    "that same cursor as since; only then trim, and only below what the floor holds (kit.trim_below()). A kill "
    "between any two of those leaves either nothing done or a commit the next fold will not read again.",
    solution="08_2_survive_every_kill.py",
)
def _judge_survive_every_kill(answer: Any, f: Findings) -> None:
    judge_fold(answer, f)
