"""Your queue as a stage's check runs it: its folder loaded on the judge's node, and recorded probes.

``load`` reads the folder a learner hands ``exercises.check`` (``course.my_queue``): every file the stages up
to the one checked ask for, each Lua file in its transition's place (a ``transitions.ScriptSet``: the kit's
connector, workers, metronome and checker then run it exactly as they run the kit's script), ``renew.lua``
for the handlers that renew, ``beat.py`` for the workers that beat with it. A stage whose own files are still
the starter answers the starter's verdict (``NotImplementedError``); an earlier stage's file left unwritten is
a finding that names its reference.

``Scenario`` is a probe as a run records it: a few calls by named workers on a queue of the judge's node,
each in a history the checker reads, so that a probe a queue fails shows the checker's counterexample.
"""

from __future__ import annotations

import importlib.util
import inspect
import shutil
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import jobs, scripts, transitions
from ...lab.checker import FinalState, Report, check
from ...lab.history import History, Recorder, ServerClock
from ..my_queue.folder import Folder, folder
from ..my_queue.stages import TRANSITIONS, files_upto, stage
from ..registry import Findings, Unjudged
from .frame import Ended, Watched, checker_valid, end_run, lua_error, wait_drained

#: the file each recorded call of a run runs, when your folder holds it: a finding names it
FILE_OF = {"claim": "claim.lua", "complete": "complete.lua", "retry": "retry.lua", "stalled": "recover.lua",
           "extend": "renew.lua"}


@dataclass
class Loaded:
    """A folder as the check of stage ``key`` runs it."""

    key: str
    folder: Folder
    #: each Lua file the stages up to ``key`` ask for, in its transition's place
    scripts: transitions.ScriptSet
    #: renew.lua (stage 02.2 on), which a handler that outlives its lease calls
    renew: scripts.Script | None = None
    #: beat.py (stage 03.7 on): its file, and its ``beat`` imported in this process for the probes
    beat_file: Path | None = None
    beat: Callable[..., Any] | None = None
    files: tuple[str, ...] = field(default_factory=tuple)

    def has(self, name: str) -> bool:
        return name in self.files


def as_folder(answer: Any) -> Folder:
    """What a learner handed the check: a ``Folder`` (or a path to one)."""
    if isinstance(answer, Folder):
        return answer
    if isinstance(answer, (str, Path)):
        return folder(answer)
    raise TypeError(f"hand the check your queue's folder (my_queue.folder()); got {type(answer).__name__}")


def prepare(answer: Any, key: str, f: Findings) -> Folder | None:
    """The folder handed for stage ``key``, its missing starter files copied in; None, with a finding for each,
    when a file an earlier stage asks for is not written yet. Nothing runs on a node here.

    Raises ``NotImplementedError`` (the starter's verdict) while the stage's own files are the starter."""
    mine = as_folder(answer)
    mine.begin(key)
    own = stage(key).files
    unwritten = mine.unwritten(key)
    if not own and len(unwritten) == len(files_upto(key)):
        asking = sorted({s for _, s in unwritten})
        raise NotImplementedError(f"every file of your queue still holds the starter: stages {', '.join(asking)} "
                                  "ask for them, and this stage runs them all together.")
    if own and all(not mine.written(n) for n in own):
        names = [f"my_queue/{n}" for n in own]
        many = len(names) > 1
        raise NotImplementedError(f"{', '.join(names[:-1]) + ' and ' if many else ''}{names[-1]} "
                                  f"{'still hold' if many else 'still holds'} the starter: write what notebook "
                                  f"{key[:2]} asks of {'them' if many else 'it'} (each file's header says where), "
                                  "then check again.")
    for name, first in unwritten:
        f.expect(False, f"my_queue/{name} is not written yet (stage {first} asks for it, and stage {key} runs it): "
                 f'write it, or load its reference and go on: my_queue.folder().load_reference("{first}").')
    return None if f.items else mine


def load(mine: Folder, key: str, conn: Any, f: Findings) -> Loaded | None:
    """The folder's files for stage ``key``, each loaded (a Lua file compiled on ``conn``'s node, beat.py
    imported); None, with the finding, when one does not load."""
    files = files_upto(key)
    replaced: dict[str, scripts.Script] = {}
    renew = None
    for name in files:
        if not name.endswith(".lua"):
            continue
        try:
            sc = scripts.from_file(mine.file(name), name=name.removesuffix(".lua"))
            conn.client.script_load(sc.source)
        except Exception as exc:  # noqa: BLE001 - the node's compile error: a finding naming the file's line
            f.expect(False, lua_error(f"my_queue/{name} does not compile", exc, name))
            return None
        if name in TRANSITIONS:
            replaced[TRANSITIONS[name]] = sc
        elif name == "renew.lua":
            renew = sc
    loaded = Loaded(key, mine, transitions.ScriptSet(replaced), renew, files=files)
    if "beat.py" in files:
        loaded.beat_file = mine.file("beat.py")
        loaded.beat = import_beat(loaded.beat_file, f)
        if loaded.beat is None:
            return None
    return loaded


def import_beat(path: Path, f: Findings) -> Callable[..., Any] | None:
    """``beat`` from beat.py, imported as a module of its own (a fresh one each check); None with a finding
    when it does not import or has no ``beat(queue, handle, budget)``."""
    name = f"my_queue_beat_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the learner's module: its error is the finding
        line = getattr(exc, "lineno", None) or next(
            (fr.lineno for fr in reversed(traceback.extract_tb(exc.__traceback__)) if fr.filename == str(path)), None)
        at = f"line {line} of beat.py" if line else "beat.py"
        f.expect(False, f"my_queue/beat.py does not import: {at}: {type(exc).__name__}: {exc}")
        return None
    finally:
        sys.modules.pop(name, None)
    fn = getattr(module, "beat", None)
    try:
        takes = callable(fn) and len(inspect.signature(fn).parameters) == 3
    except (TypeError, ValueError):
        takes = False
    if not f.expect(takes, "my_queue/beat.py must define beat(queue, handle, budget): a function of three "
                    "arguments, which a worker calls once a beat."):
        return None
    return fn


def failed_in(name: str, when: str, exc: BaseException, f: Findings) -> bool:
    """A call of your ``name`` raised ``exc``: the finding names its line (always False, for a probe's return)."""
    f.expect(False, lua_error(f"your {name} failed {when}", exc, name))
    return False


class Scenario:
    """A probe recorded as a run records it: calls by named workers on one queue of the judge's node, your
    scripts in their transitions' places; ``check`` hands the history and the queue to the checker."""

    def __init__(self, node: Any, loaded: Loaded, queue: str) -> None:
        self.queue = queue
        self.conn = node.connector()
        self.conn.script_set = loaded.scripts
        jobs.drop(self.conn, queue)
        self.folder = Path(tempfile.mkdtemp(prefix="echomq-probe-"))
        self.clock = ServerClock(self.conn)
        self._recs: dict[str, Recorder] = {}

    def rec(self, who: str) -> Recorder:
        """The history of ``who`` (a worker, ``producer``, ``sweeper``)."""
        if who not in self._recs:
            self._recs[who] = Recorder(self.folder, who, self.clock)
        return self._recs[who]

    def enqueue(self, payload: str, job_id: str | None = None) -> str:
        return self.rec("producer").enqueue(self.conn, self.queue, payload, job_id)

    def claim(self, who: str, lease_ms: int) -> jobs.Claimed | None:
        return self.rec(who).claim(self.conn, self.queue, lease_ms)

    def complete(self, who: str, job: str, token: int, result: str = "done") -> str:
        return self.rec(who).complete(self.conn, self.queue, job, token, result, record=True)

    def retry(self, who: str, job: str, token: int, reason: str, delay_ms: int, max_attempts: int) -> str:
        return self.rec(who).retry(self.conn, self.queue, job, token, reason, delay_ms, max_attempts, record=True)

    def reap(self) -> list[str]:
        """The kit's reap (a stage before 03.6 has no recovery of its own), recorded as a sweeper's."""
        return self.rec("sweeper").reap(self.conn, self.queue)

    def recover(self, max_attempts: int) -> Any:
        """The stall sweep (your recover.lua from 03.6 on), recorded as a sweeper's."""
        return self.rec("sweeper").stalled(self.conn, self.queue, max_attempts, record=True)

    def promote(self) -> list[str]:
        return self.rec("sweeper").promote(self.conn, self.queue)

    def history(self) -> History:
        return History.read(self.folder)

    def report(self) -> Report:
        return check(self.history(), FinalState.read(self.conn, self.queue), recorded=True)

    def valid(self, said: str, f: Findings) -> bool:
        """True when the checker finds this probe's history valid; else False, with its counterexample (and the
        probe's timeline, drawn below the verdict)."""
        report = self.report()
        if checker_valid(said, report, f, telling(report)):
            return True
        show_timeline(f, self.history(), report, f"your queue: {said.split(':')[0]}")
        return False

    def close(self) -> None:
        for r in self._recs.values():
            r.close()
        try:
            jobs.drop(self.conn, self.queue)
        finally:
            self.conn.close()
            shutil.rmtree(self.folder, ignore_errors=True)


@contextmanager
def probing(node: Any, loaded: Loaded, queue: str) -> Iterator[Any]:
    """A connector of the judge's node whose calls run your scripts in the kit's places, for probes on ``queue``
    (dropped before and after)."""
    conn = node.connector()
    conn.script_set = loaded.scripts
    try:
        jobs.drop(conn, queue)
        yield conn
    finally:
        try:
            jobs.drop(conn, queue)
        finally:
            conn.close()


def judged_run(run: Any, seed: int, nemesis: Any, deadline_s: float, failed: Callable[[History], bool],
               then: Callable[[Watched], list[Any]] | None = None) -> tuple[Ended, bool]:
    """``run`` (its jobs produced) started, faulted by ``nemesis`` with the queue held to notebook 01's table at
    each point a fault leaves it, waited on until drained (or ``failed(history)``: the verdict is known), and
    ended (``frame.end_run``). Answers what the end read, and whether the queue drained.

    ``Unjudged`` when the run's keeper (a ``KeptRun``'s thread that refills a dead worker's slot) failed: the run
    went on a worker short, and nothing it shows can be held against the answer, a pass least of all.

    ``then(watched)``, once the queue drained, faults the run again late (answers the faults it applied), and the
    run is waited on until it drains again: a fault late in a run finds workers long past their first beats."""
    # a KeptRun's keeper keeps its error here rather than printing it; a run with no keeper never fails one
    keeper: list[BaseException] = getattr(run, "keeper_failures", [])
    run.start()
    watched = Watched(run)
    faults = nemesis.run(watched, deadline_s=deadline_s)
    drained = wait_drained(run, deadline_s, lambda h: bool(keeper) or failed(h))
    if drained and then is not None and not keeper:
        faults = [*faults, *then(watched)]
        drained = wait_drained(run, deadline_s, lambda h: bool(keeper) or failed(h))
    ended = end_run(run, seed, faults, watched=watched)
    if keeper:
        said = str(keeper[0]).split("; the end of its log")[0].splitlines()[0]  # its log's tail says nothing here
        raise Unjudged(f"seed {seed}: the judge could not restart a worker ({type(keeper[0]).__name__}: {said})")
    return ended, drained


@contextmanager
def run_folder() -> Iterator[Path]:
    """A folder of one judged run's own, for the module its workers import their handler from; gone with the run."""
    folder = Path(tempfile.mkdtemp(prefix="echomq-judge-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def scenario(node: Any, loaded: Loaded, queue: str) -> Iterator[Scenario]:
    s = Scenario(node, loaded, queue)
    try:
        yield s
    finally:
        s.close()


def ran_clean(e: Ended, loaded: Loaded, f: Findings, first: Any = None) -> bool:
    """What every judged run of your queue asks first: no file of yours failed inside it (a call refused with a
    Lua error, a beat that raised), the checker says valid (its counterexample and the run's timeline else:
    ``first`` chooses the finding shown), and the queue kept notebook 01's table. False, with the finding."""
    for o in e.history.calls():
        name = FILE_OF.get(o.op)
        if o.at == "refused" and name and loaded.has(name):
            f.expect(False, lua_error(f"{e.said}: your {name} failed inside the run ({o.worker}'s {o.op})",
                                      Exception(o.error), name))
            return False
    raised = e.history.notes("beat-error")
    if raised:
        o = raised[0]
        f.expect(False, f"{e.said}: your beat raised in {o.worker}: {o.extra.get('error')} (the worker beat again, "
                 f"as a worker does after an error; {len(raised)} beat(s) raised in all).")
        return False
    if not checker_valid(e.said, e.report, f, first or telling(e.report)):
        show_timeline(f, e.history, e.report, f"your queue: {e.said}")
        return False
    f.items.extend(e.state.items)
    return not e.state.items


def telling(report: Report) -> Any:
    """The finding that says most about why a run went wrong: a fence violation (a settle from a replaced
    holder) explains the double settles that follow it, and a double hand-out the rest; None when valid."""
    for kind in ("fence_violations", "double_handouts"):
        if report.of(kind):
            return report.of(kind)[0]
    return report.findings[0] if report.findings else None


def show_timeline(f: Findings, history: History, report: Report | None, title: str) -> None:
    """Keep the run's timeline (``lab.timeline``) to be drawn with the verdict, below its findings."""

    def draw() -> Any:
        from ...lab.timeline import draw as timeline

        return timeline(history, report, title=title)

    f.shown.append(draw)
