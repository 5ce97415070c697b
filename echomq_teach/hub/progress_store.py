"""The instructor's live view's store: one SQLite file of exercise verdicts, in the hub's state folder.

One row per verdict a student's kernel reported: who (the name the hub gave
for the student's token, never one from the request), which exercise (one the
kit's registry holds), solved or not, the kernel's count of tries, whether a
hint was asked, the findings' first line, and when the service received it
(its own clock: a kernel's time is never trusted). The file is created 0600,
the service's user's alone, in a folder of its own in the hub's state folder,
never in a student's container. Nothing here needs JupyterHub: ``progress.py``
(the service) and the tests use it directly.
"""

from __future__ import annotations

import csv
import io
import math
import os
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    student TEXT NOT NULL,
    exercise TEXT NOT NULL,
    solved INTEGER NOT NULL,
    tries INTEGER NOT NULL,
    hint INTEGER NOT NULL,
    finding TEXT NOT NULL,
    at REAL NOT NULL,
    reference INTEGER NOT NULL DEFAULT 0
)
"""
#: "stuck": at least this many failed tries, the last one within the window, never solved
STUCK_TRIES = 3
STUCK_WINDOW_S = 600.0
MAX_FINDING = 300
MAX_EXERCISE = 40
MAX_TRIES = 10_000
#: a cell a spreadsheet would run as a formula starts with one of these (OWASP's list)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class BadVerdict(ValueError):
    """A report the store refuses: the message names the field."""


@dataclass
class Cell:
    """One student's standing on one exercise."""

    solved: bool
    tries: int
    hint: bool
    last_finding: str
    last_at: float
    #: a stage of your queue that passed with a loaded reference, never solved by the student's own files
    reference: bool = False

    def label(self) -> str:
        if self.solved:
            return "solved"
        if self.reference:
            return "reference" + (" · hint" if self.hint else "")
        return f"tried {self.tries}" + (" · hint" if self.hint else "")


def validate(body: object, exercises: Iterable[str] | None = None) -> dict[str, object]:
    """The verdict's fields, checked; a :class:`BadVerdict` naming the first bad one.

    ``exercises``: the names a report may carry (the kit's registry); ``None`` takes any
    short name (the store's own tests).
    """
    if not isinstance(body, dict):
        raise BadVerdict("the body must be a JSON object")
    allowed = {"exercise", "solved", "reference", "tries", "hint", "finding", "at"}
    extra = sorted(set(body) - allowed)
    if extra:
        # a "student" (or "user") field is refused outright: the name comes from the token alone
        raise BadVerdict(f"unknown field(s) {', '.join(extra)}: the student is the token's owner")
    ex = body.get("exercise")
    if not isinstance(ex, str) or not ex or len(ex) > MAX_EXERCISE:
        raise BadVerdict("exercise must be a non-empty string of at most 40 characters")
    if exercises is not None and ex not in exercises:
        # a name the course does not hold would be a new column in the instructor's grid
        raise BadVerdict(f"exercise {ex[:MAX_EXERCISE]!r} is not one of the course's exercises")
    if not isinstance(body.get("solved"), bool):
        raise BadVerdict("solved must be true or false")
    tries = body.get("tries")
    if not isinstance(tries, int) or isinstance(tries, bool) or not 0 <= tries <= MAX_TRIES:
        raise BadVerdict(f"tries must be a whole number from 0 to {MAX_TRIES}")
    if not isinstance(body.get("hint", False), bool):
        raise BadVerdict("hint must be true or false")
    if not isinstance(body.get("reference", False), bool) or (body.get("reference") and body["solved"]):
        raise BadVerdict("reference must be true or false, and never true with solved")
    finding = body.get("finding", "")
    if not isinstance(finding, str):
        raise BadVerdict("finding must be a string")
    at = body.get("at", 0.0)
    if not isinstance(at, (int, float)) or isinstance(at, bool) or not math.isfinite(at):
        # the kernel's clock is only checked, never kept: the row's time is the service's
        raise BadVerdict("at must be a finite time in seconds")
    return {
        "exercise": ex,
        "solved": body["solved"],
        "tries": tries,
        "hint": body.get("hint", False),
        "reference": body.get("reference", False),
        "finding": finding.splitlines()[0][:MAX_FINDING] if finding else "",
    }


def sheet_cell(text: str) -> str:
    """``text`` as a spreadsheet shows it and never runs it: a leading ``'`` before a formula's first character."""
    return "'" + text if text.startswith(FORMULA_START) else text


class ProgressStore:
    """The verdicts' SQLite file, through one connection kept open (the service is single-threaded).

    The connection is opened when the store is made: the service makes it as
    root, inside the hub's root-only state folder, and then becomes a user that
    could not open the file again (WAL mode: the journal's files stay open too).
    Other processes (the instructor's shell, the tests) read the file meanwhile.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            # created 0600 before SQLite writes a byte: never readable by anyone but the hub's user
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        self.path.chmod(0o600)
        self._db = sqlite3.connect(self.path)
        self._db.execute("PRAGMA journal_mode=WAL")
        with self._db:
            self._db.execute(SCHEMA)
            # a store from before the reference column: it gains it (every old row: not a reference)
            if "reference" not in {r[1] for r in self._db.execute("PRAGMA table_info(verdicts)")}:
                self._db.execute("ALTER TABLE verdicts ADD COLUMN reference INTEGER NOT NULL DEFAULT 0")

    def _conn(self) -> sqlite3.Connection:
        return self._db

    def close(self) -> None:
        self._db.close()

    def record(self, student: str, body: object, exercises: Iterable[str] | None = None,
               now: float | None = None) -> None:
        """Store one verdict for ``student`` (the token's owner), stamped ``now`` (the service's clock).

        A bad body (``validate``) raises and writes nothing.
        """
        v = validate(body, exercises)
        at = time.time() if now is None else now
        with self._conn() as db:
            db.execute(
                "INSERT INTO verdicts (student, exercise, solved, tries, hint, finding, at, reference) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (student, v["exercise"], int(v["solved"]), v["tries"], int(v["hint"]), v["finding"], at,
                 int(v["reference"])),
            )

    def rows(self) -> list[tuple]:
        with self._conn() as db:
            return db.execute(
                "SELECT student, exercise, solved, tries, hint, finding, at FROM verdicts ORDER BY id"
            ).fetchall()

    def clear(self, student: str | None = None) -> int:
        """Delete one student's verdicts, or every verdict (a new term) when ``student`` is None; answers how many."""
        with self._conn() as db:
            if student is None:
                return db.execute("DELETE FROM verdicts").rowcount
            return db.execute("DELETE FROM verdicts WHERE student = ?", (student,)).rowcount

    def grid(self, roster: Iterable[str] = ()) -> tuple[list[str], list[str], dict[tuple[str, str], Cell]]:
        """Students, exercises (both sorted) and each reported (student, exercise)'s cell.

        ``roster`` names students known elsewhere (the hub's users, the roster
        file): each has a row even before their kernel reported anything.
        """
        cells: dict[tuple[str, str], Cell] = {}
        with self._conn() as db:
            rows = db.execute("SELECT student, exercise, solved, tries, hint, finding, at, reference FROM verdicts "
                              "ORDER BY id").fetchall()
        for student, ex, solved, tries, hint, finding, at, reference in rows:
            c = cells.get((student, ex))
            if c is None:
                c = cells[(student, ex)] = Cell(False, 0, False, "", 0.0)
            c.solved = c.solved or bool(solved)
            c.reference = c.reference or bool(reference)
            c.tries = max(c.tries, tries)
            c.hint = c.hint or bool(hint)
            c.last_at = max(c.last_at, at)
            if not solved:
                c.last_finding = finding
        students = sorted({s for s, _ in cells} | set(roster))
        exercises = sorted({e for _, e in cells})
        return students, exercises, cells

    def silent(self, roster: Iterable[str]) -> list[str]:
        """The students of ``roster`` whose kernel has never reported a verdict (sorted)."""
        with self._conn() as db:
            reported = {r[0] for r in db.execute("SELECT DISTINCT student FROM verdicts")}
        return sorted(set(roster) - reported)

    def solve_rates(self) -> dict[str, tuple[int, int]]:
        """Each exercise's (students who solved it, students who reported it)."""
        students, exercises, cells = self.grid()
        return {
            e: (sum(1 for s in students if (s, e) in cells and cells[(s, e)].solved),
                sum(1 for s in students if (s, e) in cells))
            for e in exercises
        }

    def stuck(self, now: float | None = None) -> list[tuple[str, str, int, str]]:
        """(student, exercise, tries, last finding): several failed tries, the last one recent, unsolved."""
        now = time.time() if now is None else now
        _, _, cells = self.grid()
        out = [
            (s, e, c.tries, c.last_finding)
            for (s, e), c in cells.items()
            if not c.solved and not c.reference and c.tries >= STUCK_TRIES and now - c.last_at <= STUCK_WINDOW_S
        ]
        return sorted(out, key=lambda r: (-r[2], r[0], r[1]))

    def csv(self, roster: Iterable[str] = ()) -> str:
        """The grid as CSV: a row per student (``roster``'s too), a column per exercise, each cell's label.

        Every cell goes through ``sheet_cell``: a name the service would refuse today may
        still be in an older file, and a spreadsheet must show it, not run it.
        """
        students, exercises, cells = self.grid(roster)
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow([sheet_cell(x) for x in ("student", *exercises)])
        for s in students:
            labels = (cells[(s, e)].label() if (s, e) in cells else "not started" for e in exercises)
            w.writerow([sheet_cell(x) for x in (s, *labels)])
        return buf.getvalue()
