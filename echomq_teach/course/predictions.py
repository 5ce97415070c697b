"""Committed predictions: the first answer a learner submits to a prediction, kept on disk.

A prediction is graded once: the first answer of a valid shape is written to
``<folder>/<key>.json`` and every later check of that exercise grades that
answer, not the new one (a run's true results, once seen, cannot be copied
into a second try). The folder is the learner's own Jupyter data folder
(``jupyter_core.paths.jupyter_data_dir()/echomq-teach/predictions``), so a
commitment outlives a kernel restart; ``$ECHOMQ_PREDICTIONS`` names another
folder (the test suite and the notebook builds use a temporary one, never the
learner's). This module imports nothing from the rest of the course.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import BadInput

#: the environment variable naming the folder predictions are kept in (tests, CI, notebook builds)
PREDICTIONS_ENV = "ECHOMQ_PREDICTIONS"


def folder() -> Path:
    """Where committed predictions are kept: ``$ECHOMQ_PREDICTIONS``, else the learner's Jupyter data folder."""
    named = os.environ.get(PREDICTIONS_ENV)
    if named:
        return Path(named)
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "echomq-teach" / "predictions"


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
    """A prediction as it was first submitted, and when (UTC, ISO 8601)."""

    key: str
    answer: Any
    at: str


def _path(key: str) -> Path:
    if not key.replace(".", "").isdigit():
        raise BadInput(f"an exercise key is NN.M, got {key!r}")
    return folder() / f"{key}.json"


def committed(key: str) -> Committed | None:
    """The prediction kept for exercise ``key``, or None before the first answer."""
    try:
        raw = json.loads(_path(key).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None  # a file cut short (a full disk): as if nothing was kept; the next answer is kept
    return Committed(key, raw.get("answer"), raw.get("at", ""))


def commit(key: str, answer: Any) -> Committed:
    """Keep ``answer`` as exercise ``key``'s prediction unless one is kept already; answers the kept one.

    The file is created exclusively (``O_EXCL``): two kernels answering at once keep one answer.
    """
    kept = committed(key)
    if kept is not None:
        return kept
    value = plain(answer)  # refuses before anything is written
    path = _path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    data = json.dumps({"key": key, "answer": value, "at": at}, indent=1).encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return committed(key) or Committed(key, value, at)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return Committed(key, value, at)


def forget(key: str) -> bool:
    """Delete the kept prediction of ``key`` (a teacher resetting a seat); True when there was one."""
    try:
        _path(key).unlink()
        return True
    except FileNotFoundError:
        return False


class Withheld:
    """What a cell shows, withheld until prediction ``key`` is committed: ``with Withheld(key, line):``.

    Before the commitment the cell runs whole (its names are defined, its asserts hold) but what it
    prints or displays (text, widgets, figures) is captured and dropped, and the cell prints ``line``
    instead; once the prediction is kept, the same cell shows everything. A notebook is built, and
    run by CI, with an empty predictions folder, so ``line`` is what every stored notebook holds.
    """

    def __init__(self, key: str, line: str) -> None:
        self.key, self.line = key, line
        self.shown = False
        self._capture: Any = None
        self._figures: set[int] = set()

    def __enter__(self) -> Withheld:
        self.shown = committed(self.key) is not None
        if not self.shown:
            from IPython.utils.capture import capture_output  # IPython is the notebooks' own

            self._figures = _open_figures()
            self._capture = capture_output()
            self._capture.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.shown:
            return
        self._capture.__exit__(kind, exc, tb)
        plt = sys.modules.get("matplotlib.pyplot")
        for number in _open_figures() - self._figures:
            # a figure left open would be drawn by the inline backend after the cell, past the capture
            plt.close(number)  # type: ignore[union-attr]
        if kind is None:
            # one write: print's two (the line, then its newline) can land in two stored outputs under load
            sys.stdout.write(self.line + "\n")


def _open_figures() -> set[int]:
    plt = sys.modules.get("matplotlib.pyplot")  # imported only by a notebook that draws
    return set(plt.get_fignums()) if plt is not None else set()
