"""Committed predictions: the first answer a learner submits to a prediction, kept, sealed and logged.

A prediction is graded once: the first answer of the right form is kept, and every later check of that
exercise grades that answer, not the new one (a run's true results, once seen, cannot be copied into a
second try). What a learner can do from their kernel to undo that is noticed and said:

* **the place is chosen once**: the folder is ``$ECHOMQ_PREDICTIONS`` as the kernel's process started with
  it (read from ``/proc/self/environ`` where there is one, so a later ``os.environ`` change is ignored,
  and said), else the learner's Jupyter data folder
  (``jupyter_core.paths.jupyter_data_dir()/echomq-teach/predictions``), so a commitment outlives a kernel
  restart. A process started from a kernel (at any depth) keeps that kernel's place, whatever its own
  environment names: a child given a fresh folder cannot try a prediction unseen. The kit's test and build
  machinery chooses another with ``use(folder)``, which a kernel may not call;
* **a record is sealed**: ``<folder>/<key>.json`` carries an HMAC made with a key of this install's, kept
  apart from the records, in ``<folder>.seal/key``; a record edited or written by hand no longer matches it;
* **every commitment is logged, twice**: ``<folder>.seal/log`` holds one line per prediction kept (and per
  prediction a teacher forgot), each line sealed together with the one before it, and only ever grows; the
  same lines go to a witness of this install's outside the folder (in the Jupyter data folder, keyed by the
  folder), and the kernel process remembers what it kept. A record deleted or edited, a log cut short or
  removed, a seal deleted: whichever copy is left grades the first answer, and the verdict says that the
  kept prediction was changed by hand, not where the copy is.

What is not prevented (``docs/decisions.md``, "what a kept prediction resists"): a learner who deletes every
one of these files and then starts a fresh kernel, starts their server with another folder, or rewrites this
module in their kernel. In a classroom each verdict also goes to the instructor's live view as it is given,
and the first report of a prediction there is the authority. This module imports nothing from the rest of
the course.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import BadInput

#: the environment variable naming the folder predictions are kept in (tests, CI, notebook builds)
PREDICTIONS_ENV = "ECHOMQ_PREDICTIONS"
_UNSET = object()  # a name the namespace did not hold


def _environment_at_start(pid: int | str = "self") -> dict[str, str]:
    """The environment process ``pid`` was started with: ``/proc/PID/environ`` (Linux), else ``os.environ`` now."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return dict(os.environ)
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


_KERNEL_ARGS = ("ipykernel_launcher", "ipykernel", "ipykernel_launcher.py")


def _outermost_kernel() -> int | str:
    """This process, or the outermost Jupyter kernel among its ancestors (a probe the kernel starts is its own).

    Read from ``/proc`` (Linux); elsewhere, or when nothing there is a kernel, this process.
    """
    found: int | str = "self"
    pid = os.getpid()
    for _ in range(64):  # a process tree is shallow; a loop in /proc's answers ends here
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        if any(Path(a.decode(errors="replace")).name in _KERNEL_ARGS for a in args):
            found = "self" if pid == os.getpid() else pid
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent <= 1 or parent == pid:
            break
        pid = parent
    return found


@contextlib.contextmanager
def _environ(env: dict[str, str]) -> Iterator[None]:
    """``os.environ``'s Jupyter and home variables as ``env`` has them, for as long as the block runs."""
    names = ("JUPYTER_DATA_DIR", "JUPYTER_PLATFORM_DIRS", "HOME", "XDG_DATA_HOME", "APPDATA")
    saved = {n: os.environ.get(n) for n in names}
    try:
        for n in names:
            if env.get(n) is not None:
                os.environ[n] = env[n]
            else:
                os.environ.pop(n, None)
        yield
    finally:
        for n, v in saved.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v


def _default_place() -> Place:
    """The kernel's place: its folder (named or the data folder's), and the witness in its data folder."""
    from jupyter_core.paths import jupyter_data_dir

    owner = _outermost_kernel()
    env = _environment_at_start() if owner == "self" else _environment_at_start(owner)
    with _environ(env):
        data = Path(jupyter_data_dir()) / "echomq-teach"
    named = env.get(PREDICTIONS_ENV)
    where = Path(named) if named else data / "predictions"
    return Place(where, data / "install" / _folder_id(where))


def _folder_id(where: Path) -> str:
    return hashlib.sha256(str(Path(where).absolute()).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Place:
    """Where predictions are kept: the records' folder, the seal (its key and log) beside it, and the witness.

    The witness holds the log's lines again, sealed with a key of its own, somewhere the records are not.
    """

    folder: Path
    witness: Path

    @property
    def seal(self) -> Path:
        return self.folder.with_name(self.folder.name + ".seal")


_PLACE = _default_place()  # chosen once, as this process (or the kernel that started it) started
_SESSION: dict[tuple[Path, str], dict[str, Any]] = {}  # what this process kept or saw kept, per folder and key


def folder() -> Path:
    """Where committed predictions are kept (chosen when the process started, or by ``use``)."""
    return _PLACE.folder


def use(where: str | Path | Place) -> Place:
    """Keep predictions in ``where`` from now on (the kit's tests and builds); answers the place used before.

    A folder's witness is then ``<folder>.install`` beside it (a ``Place`` names its own). Refused inside a
    Jupyter kernel: a learner's predictions stay where the kernel started with them.
    """
    global _PLACE
    if "ipykernel" in sys.modules and _in_kernel():
        raise BadInput("the predictions folder is chosen when the kernel starts ($ECHOMQ_PREDICTIONS); "
                       "it cannot be changed from inside the kernel")
    if not isinstance(where, Place):
        where = Path(where)
        where = Place(where, where.with_name(where.name + ".install"))
    before, _PLACE = _PLACE, where
    return before


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def env_changed() -> str | None:
    """What to say when ``$ECHOMQ_PREDICTIONS`` now names another folder than the one in use, else None."""
    named = os.environ.get(PREDICTIONS_ENV)
    if named and Path(named) != _PLACE.folder:
        return (f"${PREDICTIONS_ENV} was changed to {named} after the kernel started: predictions are still "
                f"kept in {_PLACE.folder} (the folder is chosen when the kernel starts, and a process the "
                "kernel starts keeps the kernel's).")
    return None


def plain(answer: Any) -> Any:
    """An answer as JSON holds it (tuples become lists), so a kept answer compares equal to a fresh one.

    Raises ``BadInput`` for an answer JSON cannot hold (a set, an object): nothing is written then.
    """
    try:
        return json.loads(json.dumps(answer))
    except (TypeError, ValueError) as exc:
        raise BadInput(f"a prediction must be plain data (dicts, lists, strings, numbers): {exc}") from None


@dataclass(frozen=True)
class Committed:
    """A prediction as it was first kept, and when (UTC, ISO 8601).

    ``notes`` say what was found changed around it (said in the verdict, first). ``forged`` is a record the
    kit never kept (written by hand, or sealed by another install): it holds no answer and grades nothing.
    """

    key: str
    answer: Any
    at: str
    notes: tuple[str, ...] = ()
    forged: bool = False


def _canonical(fields: dict[str, Any]) -> bytes:
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _mac(secret: bytes, fields: dict[str, Any]) -> str:
    return hmac.new(secret, _canonical(fields), hashlib.sha256).hexdigest()


def _check_key(key: str) -> str:
    if not key.replace(".", "").isdigit():
        raise BadInput(f"an exercise key is NN.M, got {key!r}")
    return key


def _record_path(key: str) -> Path:
    return _PLACE.folder / f"{_check_key(key)}.json"


def _secret(create: bool, where: Path | None = None) -> bytes | None:
    """The sealing key of ``where`` (the seal; or the witness, which has its own): made on first use, 0600."""
    where = _PLACE.seal if where is None else where
    path = where / "key"
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        if not create:
            return None
    except (OSError, ValueError):
        return None  # a key cut short or garbled: nothing it sealed can be trusted
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _secret(False, where)  # another kernel made it a moment ago
    try:
        os.write(fd, secrets.token_hex(32).encode())
    finally:
        os.close(fd)
    return _secret(False, where)


@dataclass(frozen=True)
class _Line:
    n: int
    fields: dict[str, Any]


@dataclass(frozen=True)
class _Log:
    lines: list[_Line]  # the lines whose seals hold, in order, up to the first that does not
    broken_at: int | None  # the number of the first line whose seal does not hold (1-based), or None
    last_mac: str


def _read_log(secret: bytes | None, where: Path | None = None) -> _Log:
    path = (_PLACE.seal if where is None else where) / "log"
    try:
        raw = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return _Log([], None, "")
    except OSError:
        return _Log([], 1, "")
    lines: list[_Line] = []
    prev = ""
    for n, text in enumerate(raw, 1):
        try:
            item = json.loads(text)
            fields = {k: item[k] for k in ("n", "event", "key", "answer", "at")}
            ok = secret is not None and fields["n"] == n and hmac.compare_digest(
                item["mac"], _mac(secret, {**fields, "prev": prev}))
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            return _Log(lines, n, prev)
        lines.append(_Line(n, fields))
        prev = item["mac"]
    return _Log(lines, None, prev)


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """One writer of the seal at a time (two kernels answering at once keep one answer)."""
    _PLACE.seal.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # no flock (Windows): the O_EXCL record below still keeps one answer
        yield
        return
    with open(_PLACE.seal / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _append(secret: bytes, log: _Log, event: str, key: str, answer: Any, at: str, where: Path | None = None) -> int:
    n = len(log.lines) + 1 if log.broken_at is None else log.broken_at + 10_000  # never a number seen before
    fields = {"n": n, "event": event, "key": key, "answer": answer, "at": at}
    line = json.dumps({**fields, "mac": _mac(secret, {**fields, "prev": log.last_mac})}, ensure_ascii=False)
    where = _PLACE.seal if where is None else where
    where.mkdir(parents=True, exist_ok=True)
    with open(where / "log", "a", encoding="utf-8") as out:
        out.write(line + "\n")
    return n


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _current(log: _Log, key: str) -> dict[str, Any] | None:
    """The kept line of ``key`` that no later line forgot, in ``log``; or None."""
    events = [ln.fields for ln in log.lines if ln.fields["key"] == key]
    return events[-1] if events and events[-1]["event"] == "kept" else None


def _remember(key: str, kept: dict[str, Any] | None) -> None:
    if kept is None:
        _SESSION.pop((_PLACE.folder, key), None)
    else:
        _SESSION[(_PLACE.folder, key)] = {"answer": kept["answer"], "at": kept["at"]}


def _removed(key: str, at: str) -> str:
    # names neither the files nor where the copy that graded is: a learner is told what happened, not how
    return (f"the prediction kept for {key} at {at} was removed or changed by hand since: graded on the answer "
            "kept then (a prediction is kept once).")


def committed(key: str) -> Committed | None:
    """The prediction kept for exercise ``key``, or None before the first answer (see ``Committed``).

    Three copies of a kept answer are read: the seal's log, the witness's, and what this process kept or saw
    kept. The witness, else this process, grades when the log has lost the line (cut short, removed, or
    begun afresh under a new seal); a record the log no longer knows is then no evidence of anything.
    """
    path = _record_path(key)
    secret = _secret(create=False)
    log = _read_log(secret)
    notes: list[str] = []
    if log.broken_at is not None and (_PLACE.seal / "log").exists():
        notes.append(f"the record of kept predictions was changed by hand from its line {log.broken_at}: what it "
                     "says from there is not read.")
    witness = _read_log(_secret(False, _PLACE.witness), _PLACE.witness)
    kept = _current(log, key)
    if any(ln.fields["key"] == key for ln in witness.lines):
        truth = _current(witness, key)  # kept, or forgotten since (a teacher's reset, in any process)
    elif not any(ln.fields["key"] == key for ln in log.lines):
        truth = _SESSION.get((_PLACE.folder, key))  # both logs lost it: what this process kept
    else:
        truth = None
    if truth is not None and (kept is None or (kept["at"], kept["answer"]) != (truth["at"], truth["answer"])):
        _remember(key, truth)
        return Committed(key, truth["answer"], truth["at"], (*notes, _removed(key, truth["at"])))
    events = [ln for ln in log.lines if ln.fields["key"] == key]
    if kept is not None and len([e for e in events if e.fields["event"] == "kept"]) > 1:
        first = next(e.fields for e in events if e.fields["event"] == "kept")
        notes.append(f"a prediction was kept for {key} at {first['at']} and forgotten since: graded on the one "
                     f"kept at {kept['at']}.")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        fields = {k: record[k] for k in ("key", "answer", "at", "n")}
        sealed = secret is not None and hmac.compare_digest(str(record.get("mac", "")), _mac(secret, fields))
    except FileNotFoundError:
        record, fields, sealed = None, None, False
    except (OSError, ValueError, KeyError, TypeError):
        record, fields, sealed = {}, None, False  # cut short, or not the kit's shape
    if kept is not None:
        _remember(key, kept)
        if record is None:
            notes.append(_removed(key, kept["at"]))
        elif not sealed or fields is None or fields["answer"] != kept["answer"]:
            said = record.get("answer") if isinstance(record, dict) else None
            notes.append(f"the kept file {path} was changed after it was kept (it says {said!r}): graded on the "
                         f"answer kept at {kept['at']}.")
        return Committed(key, kept["answer"], kept["at"], tuple(notes))
    if record is None:
        return None
    if sealed and fields is not None and fields["key"] == key:
        notes.append(f"the record of kept predictions has lost the line of {key}: graded on its sealed file.")
        return Committed(key, fields["answer"], fields["at"], tuple(notes))
    notes.insert(0, f"{path} holds a prediction the kit did not keep (written or changed by hand, or kept under "
                    "another seal): it is not graded. Delete that file, then make your prediction.")
    return Committed(key, None, "", tuple(notes), forged=True)


def _log_twice(event: str, key: str, answer: Any, at: str) -> int:
    """One line to the seal's log and the same to the witness's (each sealed with its own key): the log's number."""
    secret = _secret(create=True)
    assert secret is not None
    n = _append(secret, _read_log(secret), event, key, answer, at)
    witness = _secret(True, _PLACE.witness)
    assert witness is not None
    _append(witness, _read_log(witness, _PLACE.witness), event, key, answer, at, _PLACE.witness)
    return n


def commit(key: str, answer: Any) -> Committed:
    """Keep ``answer`` as exercise ``key``'s prediction unless one is kept already; answers the kept one.

    The log lines are written first (the seal's, then the witness's), then the sealed record (created
    exclusively), all under the seal's lock: two kernels answering at once keep one answer.
    """
    value = plain(answer)  # refuses before anything is written
    with _locked():
        kept = committed(key)
        if kept is not None:
            return kept
        at = _now()
        n = _log_twice("kept", key, value, at)
        secret = _secret(create=False)
        assert secret is not None
        fields = {"key": key, "answer": value, "at": at, "n": n}
        data = json.dumps({**fields, "mac": _mac(secret, fields)}, indent=1, ensure_ascii=False).encode()
        path = _record_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        _remember(key, {"answer": value, "at": at})
    return committed(key) or Committed(key, value, at)


def forget(key: str) -> bool:
    """Forget the kept prediction of ``key`` (a teacher resetting a seat): logged, so the next verdict says so.

    True when there was one.
    """
    path = _record_path(key)
    with _locked():
        kept = committed(key)
        if kept is None:
            return False
        if not kept.forged:
            _log_twice("forgotten", key, kept.answer, _now())
        _remember(key, None)
        path.unlink(missing_ok=True)
    return True


class Withheld:
    """What a cell shows, withheld until prediction ``key`` is committed: ``with Withheld(key, line):``.

    Before the commitment the cell runs whole (its asserts hold) but what it prints or displays (text,
    widgets, figures) is captured and dropped, and the cell prints ``line`` instead; and the names the
    block bound at the cell's top level are taken back (a new one unbound again, a rebound one given its
    old value), so no value it computed can be printed from another cell before the commitment. Once the
    prediction is kept, the same cell shows everything and keeps its names. A notebook is built, and run
    by CI, with an empty predictions folder, so ``line`` is what every stored notebook holds, and no later
    cell may need a name such a cell binds. Each prediction asks about a case no cell runs
    (``docs/decisions.md``): a copy of the block run outside it answers the notebook's case, not the
    prediction's.
    """

    def __init__(self, key: str, line: str) -> None:
        self.key, self.line = key, line
        self.shown = False
        self._capture: Any = None
        self._figures: set[int] = set()
        self._names: dict[str, Any] | None = None  # the cell's namespace, when the block is at its top level
        self._before: dict[str, Any] = {}

    def __enter__(self) -> Withheld:
        kept = committed(self.key)
        self.shown = kept is not None and not kept.forged
        if not self.shown:
            from IPython.utils.capture import capture_output  # IPython is the notebooks' own

            self._figures = _open_figures()
            self._capture = capture_output()
            self._capture.__enter__()
            cell = sys._getframe(1)  # the frame whose with-statement entered this block
            if cell.f_code.co_name == "<module>":
                self._names, self._before = cell.f_globals, dict(cell.f_globals)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.shown:
            return
        self._capture.__exit__(kind, exc, tb)
        self._take_back_names()
        plt = sys.modules.get("matplotlib.pyplot")
        for number in _open_figures() - self._figures:
            # a figure left open would be drawn by the inline backend after the cell, past the capture
            plt.close(number)  # type: ignore[union-attr]
        if kind is None:
            # one write: print's two (the line, then its newline) can land in two stored outputs under load
            sys.stdout.write(self.line + "\n")

    def _take_back_names(self) -> None:
        """Unbind what the block bound, rebind what it rebound: its values wait for the commitment too."""
        names, before = self._names, self._before
        if names is None:
            return
        for name in [n for n in names if n not in before]:
            del names[name]
        for name, value in before.items():
            if names.get(name, _UNSET) is not value:
                names[name] = value


def _open_figures() -> set[int]:
    plt = sys.modules.get("matplotlib.pyplot")  # imported only by a notebook that draws
    return set(plt.get_fignums()) if plt is not None else set()
