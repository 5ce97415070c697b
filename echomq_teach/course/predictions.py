"""Committed predictions: the first answer a learner submits to a prediction, kept, sealed and logged.

A prediction is graded once: the first answer of the right form is kept, and every later check of that
exercise grades that answer, not the new one (a run's true results, once seen, cannot be copied into a
second try). What a learner can do from their kernel to undo that is noticed and said:

* **the place is chosen once**: the folder is ``$ECHOMQ_PREDICTIONS`` as the kernel's process started with
  it (read from ``/proc/self/environ`` where there is one, so a later ``os.environ`` change is ignored,
  and said), else the learner's Jupyter data folder
  (``jupyter_core.paths.jupyter_data_dir()/echomq-teach/predictions``), so a commitment outlives a kernel
  restart. The kit's test and build machinery chooses another with ``use(folder)``, which a kernel may not
  call;
* **a record is sealed**: ``<folder>/<key>.json`` carries an HMAC made with a key of this install's, kept
  apart from the records, in ``<folder>.seal/key``; a record edited or written by hand no longer matches it;
* **every commitment is logged**: ``<folder>.seal/log`` holds one line per prediction kept (and per
  prediction a teacher forgot), each line sealed together with the one before it. A deleted record is
  graded on the log's copy, an edited one too, and either is said in the verdict.

What is not prevented (``docs/decisions.md``, "what a kept prediction resists"): a learner who deletes the
records and the seal together, starts their server with another folder, or rewrites this module in their
kernel. In a classroom each verdict also goes to the instructor's live view as it is given, and the first
report of a prediction there is the authority. This module imports nothing from the rest of the course.
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


def _environment_at_start() -> dict[str, str]:
    """The environment this process was started with: ``/proc/self/environ`` (Linux), else ``os.environ`` now."""
    try:
        raw = Path("/proc/self/environ").read_bytes()
    except OSError:
        return dict(os.environ)
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def _default_folder() -> Path:
    named = _environment_at_start().get(PREDICTIONS_ENV)
    if named:
        return Path(named)
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "echomq-teach" / "predictions"


@dataclass(frozen=True)
class Place:
    """Where predictions are kept: the records' folder, and the seal (its key and log) beside it."""

    folder: Path

    @property
    def seal(self) -> Path:
        return self.folder.with_name(self.folder.name + ".seal")


_PLACE = Place(_default_folder())  # chosen once, as this process started


def folder() -> Path:
    """Where committed predictions are kept (chosen when the process started, or by ``use``)."""
    return _PLACE.folder


def use(where: str | Path) -> Place:
    """Keep predictions in ``where`` from now on (the kit's tests and builds); answers the place used before.

    Refused inside a Jupyter kernel: a learner's predictions stay where the kernel started with them.
    """
    global _PLACE
    if "ipykernel" in sys.modules and _in_kernel():
        raise BadInput("the predictions folder is chosen when the kernel starts ($ECHOMQ_PREDICTIONS); "
                       "it cannot be changed from inside the kernel")
    before, _PLACE = _PLACE, Place(Path(where))
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
                f"kept in {_PLACE.folder} (the folder is chosen when the kernel starts).")
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


def _secret(create: bool) -> bytes | None:
    """This install's sealing key (made on first use, 0600, beside the records, never inside them)."""
    path = _PLACE.seal / "key"
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
        return _secret(create=False)  # another kernel made it a moment ago
    try:
        os.write(fd, secrets.token_hex(32).encode())
    finally:
        os.close(fd)
    return _secret(create=False)


@dataclass(frozen=True)
class _Line:
    n: int
    fields: dict[str, Any]


@dataclass(frozen=True)
class _Log:
    lines: list[_Line]  # the lines whose seals hold, in order, up to the first that does not
    broken_at: int | None  # the number of the first line whose seal does not hold (1-based), or None
    last_mac: str


def _read_log(secret: bytes | None) -> _Log:
    path = _PLACE.seal / "log"
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


def _append(secret: bytes, log: _Log, event: str, key: str, answer: Any, at: str) -> int:
    n = len(log.lines) + 1 if log.broken_at is None else log.broken_at + 10_000  # never a number seen before
    fields = {"n": n, "event": event, "key": key, "answer": answer, "at": at}
    line = json.dumps({**fields, "mac": _mac(secret, {**fields, "prev": log.last_mac})}, ensure_ascii=False)
    with open(_PLACE.seal / "log", "a", encoding="utf-8") as out:
        out.write(line + "\n")
    return n


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def committed(key: str) -> Committed | None:
    """The prediction kept for exercise ``key``, or None before the first answer (see ``Committed``)."""
    path = _record_path(key)
    secret = _secret(create=False)
    log = _read_log(secret)
    notes: list[str] = []
    if log.broken_at is not None and (_PLACE.seal / "log").exists():
        notes.append(f"the log of kept predictions ({_PLACE.seal / 'log'}) was changed by hand from its line "
                     f"{log.broken_at}: what it says from there is not read.")
    events = [ln for ln in log.lines if ln.fields["key"] == key]
    kept = events[-1].fields if events and events[-1].fields["event"] == "kept" else None
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
        if record is None:
            notes.append(f"the kept file {path} was deleted: graded on the copy in the log of kept predictions.")
        elif not sealed or fields is None or fields["answer"] != kept["answer"]:
            said = record.get("answer") if isinstance(record, dict) else None
            notes.append(f"the kept file {path} was changed after it was kept (it says {said!r}): graded on the "
                         f"answer kept at {kept['at']}.")
        return Committed(key, kept["answer"], kept["at"], tuple(notes))
    if record is None:
        return None
    if sealed and fields is not None and fields["key"] == key:
        notes.append(f"the log of kept predictions has lost the line of {key}: graded on its sealed file.")
        return Committed(key, fields["answer"], fields["at"], tuple(notes))
    notes.insert(0, f"{path} holds a prediction the kit did not keep (written or changed by hand, or kept under "
                    "another seal): it is not graded. Delete that file, then make your prediction.")
    return Committed(key, None, "", tuple(notes), forged=True)


def commit(key: str, answer: Any) -> Committed:
    """Keep ``answer`` as exercise ``key``'s prediction unless one is kept already; answers the kept one.

    The log line is written first, then the sealed record (created exclusively), both under the seal's
    lock: two kernels answering at once keep one answer.
    """
    value = plain(answer)  # refuses before anything is written
    with _locked():
        kept = committed(key)
        if kept is not None:
            return kept
        secret = _secret(create=True)
        assert secret is not None
        at = _now()
        n = _append(secret, _read_log(secret), "kept", key, value, at)
        fields = {"key": key, "answer": value, "at": at, "n": n}
        data = json.dumps({**fields, "mac": _mac(secret, fields)}, indent=1, ensure_ascii=False).encode()
        path = _record_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
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
        secret = _secret(create=True)
        assert secret is not None
        if not kept.forged:
            _append(secret, _read_log(secret), "forgotten", key, kept.answer, _now())
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
