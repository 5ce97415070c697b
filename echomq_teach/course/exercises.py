"""Exercise checks for the course notebooks.

Each exercise hands the learner's function a fresh queue on their own node,
then reads the real node and says, in plain words, what is not yet true. A
check never crashes the notebook: an exception inside the learner's code, or
one the check's own reads meet in what that code left, is reported as a
finding. A check never prints its hint (a stored output would show the
answer): ``hint(key)`` gives it on request, after a try that did not pass.
Reference solutions live in ``notebooks/solutions/``, one file per exercise,
named ``NN_M_*.py`` (``Exercise.solution``). The checks of notebooks 01–05
live in ``echomq_teach/course/checks/``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import ids
from ..connector import Connector
from . import progress_report


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
    #: the reference solution's file name in ``notebooks/solutions/``
    solution: str = ""

    def hints(self) -> list[str]:
        """What a failed check adds to its findings: where the hint is, never the hint itself."""
        return [f'stuck? exercises.hint("{self.key}") gives a hint now that you have tried.']


_REGISTRY: dict[str, Exercise] = {}
#: the exercises with a try (not the bare starter) that did not pass in this kernel: their hint may be asked for
_TRIED: set[str] = set()
NO_HINT_YET = "No hint yet: write your try and run its check first. A hint comes after a try that did not pass."


def exercise(
    key: str, title: str, hint: str, *, solution: str = ""
) -> Callable[..., Any]:
    """Register a verify function; its ``setup`` is given as an attribute by ``@…setup``. Every hint is on request."""

    def wrap(verify: Callable[..., None]) -> Callable[..., None]:
        _REGISTRY[key] = Exercise(key, title, lambda c, q: (), verify, hint, solution)
        return verify

    return wrap


def hint(key: str) -> str:
    """The hint of exercise ``key``, once a try at it did not pass in this kernel; before that, why not."""
    if key not in _REGISTRY:
        raise KeyError(f"no exercise {key!r}; the exercises are {', '.join(sorted(_REGISTRY))}")
    progress_report.hint_asked(key)  # the live view's "hint" mark (course/progress_report.py)
    return _REGISTRY[key].hint if key in _TRIED else NO_HINT_YET


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
    verdict = _check(key, solution, conn, *others)
    progress_report.report(key, verdict)  # on a hub only, in the background, silent (course/progress_report.py)
    return verdict


def _check(key: str, solution: Callable[..., Any], conn: Connector, *others: Connector) -> Verdict:
    ex = _REGISTRY[key]
    queue = fresh_queue(key)
    conns = (conn, *others)
    try:
        args = ex.setup(conns if others else conn, queue)
    except Exception as exc:  # noqa: BLE001 - e.g. a node that went away: said, not raised
        return Verdict(f"{key} {ex.title}", False,
                       [f"the check could not prepare its queue: {type(exc).__name__}: {exc}."])
    f = _Findings()
    try:
        result = solution(*conns, queue, *args)
    except NotImplementedError:
        # not a try yet: the starter as the notebook stores it; no hint is earned
        return Verdict(
            f"{key} {ex.title}",
            False,
            [
                "your function still raises NotImplementedError: write your try in its body.",
                f'after a try that does not pass, exercises.hint("{key}") gives a hint.',
            ],
        )
    except Exception as exc:  # noqa: BLE001 - the learner's bug is a finding, not a crash
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return _failed(ex, [f"your function raised {type(exc).__name__}: {exc} (line {where.lineno})."])
    try:
        ex.verify(conns if others else conn, queue, result, args, f)
    except Exception as exc:  # noqa: BLE001 - what the learner left can trip the check's own reads
        f.items.append(
            f"the check could not read your queue ({type(exc).__name__}: {exc}): your function left it in a "
            "shape no transition makes, e.g. a set written as another type or an id without its row."
        )
    if f.items:
        return _failed(ex, f.items)
    return Verdict(f"{key} {ex.title}", True, [])


def _failed(ex: Exercise, findings: list[str]) -> Verdict:
    _TRIED.add(ex.key)
    return Verdict(f"{ex.key} {ex.title}", False, [*findings, *ex.hints()])


def titles() -> dict[str, str]:
    return {k: e.title for k, e in sorted(_REGISTRY.items())}


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
    solution="08_1_predict_the_crash.py",
)
def _v081(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: _Findings) -> None:
    from .. import floor
    from ..floor.process import DriverProcess
    from ..floor.workload import stream_len

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
    from ..floor.workload import settle_jobs

    settle_jobs(conn, queue, 35)
    return (_floor_path(queue),)


@exercise(
    "08.2",
    "Find what was lost",
    "Hint: every settle that was not lost is on the floor (floor.open_floor(path).settles(stream)) or still in "
    "the stream (XRANGE); an id in neither was trimmed before any driver folded it.",
    solution="08_2_find_the_lost.py",
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
    from .. import floor
    from ..completions import completions_stream
    from ..floor.workload import settle_jobs

    settled = settle_jobs(conn, queue, 20)
    path = _floor_path(queue)
    with floor.open_floor(path) as fl, floor.Driver(conn, queue, fl, slice_size=10) as driver:
        driver.fold()  # one slice of ten folded and trimmed; ten settles still only in the stream
    conn.call("XTRIM", completions_stream(queue), "MAXLEN", 5)  # an operator trims "to save memory"
    return path, settled


# the checks of notebooks 01–05 register themselves on import
from . import checks  # noqa: E402, F401
