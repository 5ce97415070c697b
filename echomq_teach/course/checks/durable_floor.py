"""Notebook 08 · the durable floor: predict a driver's crash; find what an operator's trim lost; build a fold
step that survives a kill at every step of it (judged in runner processes killed by SIGKILL)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from ...connector import Connector
from .. import forms
from ..judges.fold import judge_fold
from ..registry import Findings, exercise, judged, prediction, setup_for
from . import diagnosis, staging


# -- 08 · the durable floor ------------------------------------------------------------------------
# Hints on request only (``exercises.hint("08.1")``): a printed hint would be the answer.
def _floor_path(queue: str) -> str:
    """A floor file in a folder of its own, removed when the kernel exits."""
    import atexit

    folder = tempfile.mkdtemp(prefix=f"{queue}-")
    atexit.register(shutil.rmtree, folder, True)
    return str(Path(folder) / "floor.sqlite3")


STREAM_2, FLOOR_2, FLOOR_END = (
    "stream, when the second driver is killed",
    "floor, when the second driver is killed",
    "floor, once the third driver is done",
)


@prediction(
    "08.1",
    "Predict the crash",
    "Hint: list a fold's steps in order, then for each driver ask what it does before its first read, and "
    "which of its steps reached the disk or the node before it died. What does SQLite keep of a transaction "
    "that never committed?",
    solution="08_1_predict_the_crash.py",
    form=forms.record({STREAM_2: forms.Count(), FLOOR_2: forms.Count(), FLOOR_END: forms.Count()}),
    explain="the first driver committed three folds (30 rows) and trimmed two: 15 entries stay, 10 of them "
    "already on the floor. The second driver first finishes that trim (5 left), reads the last 5 and dies "
    "inside its SQLite transaction: nothing of it reached the disk, so the floor still holds 30 and its cursor "
    "is where the first driver left it. The third driver trims nothing new, folds the 5 after the cursor: 35, "
    "each once.",
)
def _run_predict_the_crash(conn: Connector, queue: str) -> dict[str, int]:
    from ... import floor, jobs
    from ...floor.process import DriverProcess
    from ...floor.workload import settle_jobs, stream_len

    settle_jobs(conn, queue, 35)
    path = _floor_path(queue)

    def killed_at(point: str, *args: str) -> None:
        d = DriverProcess(conn.address, queue, path, "--slice", "10", "--lease-ms", "1000", *args,
                          "--halt-at", point)
        try:
            d.wait_for(f"halted at {point.replace(':', ' of fold ')}")
            d.kill()
        finally:
            d.stop()

    # real driver processes: one halted after its third commit and killed, then one killed inside the
    # write of its first fold (its SQLite transaction open), then one that runs to the end
    killed_at("commit:3")
    killed_at("write:1", "--wait-s", "10")
    with floor.open_floor(path, readonly=True) as fl:
        seen = {STREAM_2: stream_len(conn, queue), FLOOR_2: fl.count()}
    DriverProcess(conn.address, queue, path, "--slice", "10", "--wait-s", "10").finish()
    with floor.open_floor(path, readonly=True) as fl:
        seen[FLOOR_END] = fl.count()
    jobs.drop(conn, queue)  # the check's queue (and the dead drivers' lease) goes with its run
    return seen


#: what 08.3's setup lost, by queue (kept from the learner)
_LOST: dict[str, set[str]] = {}


@exercise(
    "08.3",
    "Find what was lost",
    "Hint: a settle that was not lost is still somewhere. Name every place a settle can be once it is recorded, and "
    "read each of them; neither alone tells the whole story.",
    solution="08_3_find_the_lost.py",
    kind="diagnose",
)
def _verify_find_the_lost(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    lost = _LOST.pop(queue)
    if not diagnosis.untouched(conn, queue, f):
        return
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
    from ... import floor, jobs
    from ...floor.driver import completions_stream

    rng = staging.chance()
    size, folds, keep = rng.randint(4, 7), rng.randint(1, 2), rng.randint(3, 6)
    n = size * folds + keep + rng.randint(2, 6)  # two to six lost
    held = [jobs.claim(conn, queue, 60_000) for _ in [jobs.enqueue(conn, queue, "a job") for _ in range(n)]]
    # settled in an order of their own, some failing for good: the stream's order is not the ids'
    order = staging.shuffled([c for c in held if c is not None], rng)
    for c in order:
        if rng.random() < 0.15:
            jobs.retry(conn, queue, c.id, c.attempts, "it failed", max_attempts=1, record=True)
        else:
            jobs.complete(conn, queue, c.id, c.attempts, "done", record=True)
    path = _floor_path(queue)
    with floor.open_floor(path) as fl, floor.Driver(conn, queue, fl, slice_size=size) as driver:
        for _ in range(folds):
            driver.fold()  # a slice folded and trimmed; the rest still only in the stream
    conn.call("XTRIM", completions_stream(queue), "MAXLEN", keep)  # an operator trims "to save memory"
    _LOST[queue] = {c.id for c in order[size * folds:n - keep]}
    diagnosis.keep(conn, queue)
    return path, {c.id for c in order}


# -- 08.2 · build: a fold step that survives a kill at every step of it --------------------------------------
@judged(
    "08.2",
    "A fold that survives a kill at every step, for two readers",
    "Hint: for each two steps of your fold, ask what a kill between them leaves: which settles the floor holds, "
    "which are still in the stream, and what the next fold reads first. A settle may leave the stream only once "
    "both of its readers have it; the kit's list above says how to ask each one how far it has got.",
    solution="08_2_survive_every_kill.py",
)
def _judge_survive_every_kill(answer: Any, f: Findings) -> None:
    judge_fold(answer, f)
