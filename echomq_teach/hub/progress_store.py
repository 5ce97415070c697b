"""The instructor's live view's store: one SQLite file of exercise verdicts, in the hub's state folder.

One row per verdict a student's kernel reported: who (the name the hub gave
for the student's token, never one from the request), which exercise, solved
or not, the kernel's count of tries, whether a hint was asked, the findings'
first line and when. The file is created 0600 (the hub runs as root: root's
alone) and lives beside the hub's own database, never in a student's
container. Nothing here needs JupyterHub: ``progress.py`` (the service) and
the tests use it directly.
"""

from __future__ import annotations

import csv
import io
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
    at REAL NOT NULL
)
"""
#: "stuck": at least this many failed tries, the last one within the window, never solved
STUCK_TRIES = 3
STUCK_WINDOW_S = 600.0
MAX_FINDING = 300
MAX_EXERCISE = 40


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

    def label(self) -> str:
        if self.solved:
            return "solved"
        return f"tried {self.tries}" + (" · hint" if self.hint else "")


def validate(body: object) -> dict[str, object]:
    """The verdict's fields, checked; a :class:`BadVerdict` naming the first bad one."""
    if not isinstance(body, dict):
        raise BadVerdict("the body must be a JSON object")
    allowed = {"exercise", "solved", "tries", "hint", "finding", "at"}
    extra = sorted(set(body) - allowed)
    if extra:
        # a "student" (or "user") field is refused outright: the name comes from the token alone
        raise BadVerdict(f"unknown field(s) {', '.join(extra)}: the student is the token's owner")
    ex = body.get("exercise")
    if not isinstance(ex, str) or not ex or len(ex) > MAX_EXERCISE:
        raise BadVerdict("exercise must be a non-empty string of at most 40 characters")
    if not isinstance(body.get("solved"), bool):
        raise BadVerdict("solved must be true or false")
    tries = body.get("tries")
    if not isinstance(tries, int) or isinstance(tries, bool) or not 0 <= tries < 100_000:
        raise BadVerdict("tries must be a whole number from 0")
    if not isinstance(body.get("hint", False), bool):
        raise BadVerdict("hint must be true or false")
    finding = body.get("finding", "")
    if not isinstance(finding, str):
        raise BadVerdict("finding must be a string")
    at = body.get("at", time.time())
    if not isinstance(at, (int, float)) or isinstance(at, bool):
        raise BadVerdict("at must be a time in seconds")
    return {
        "exercise": ex,
        "solved": body["solved"],
        "tries": tries,
        "hint": body.get("hint", False),
        "finding": finding.splitlines()[0][:MAX_FINDING] if finding else "",
        "at": float(at),
    }


class ProgressStore:
    """The verdicts' SQLite file; every call opens its own connection (the service is single-threaded)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            # created 0600 before SQLite writes a byte: never readable by anyone but the hub's user
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        self.path.chmod(0o600)
        with self._conn() as db:
            db.execute(SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path)

    def record(self, student: str, body: object) -> None:
        """Store one verdict for ``student`` (the token's owner); a bad body raises and writes nothing."""
        v = validate(body)
        with self._conn() as db:
            db.execute(
                "INSERT INTO verdicts (student, exercise, solved, tries, hint, finding, at) VALUES (?,?,?,?,?,?,?)",
                (student, v["exercise"], int(v["solved"]), v["tries"], int(v["hint"]), v["finding"], v["at"]),
            )

    def rows(self) -> list[tuple]:
        with self._conn() as db:
            return db.execute(
                "SELECT student, exercise, solved, tries, hint, finding, at FROM verdicts ORDER BY id"
            ).fetchall()

    def clear(self) -> int:
        """Delete every verdict (a new term); answers how many went."""
        with self._conn() as db:
            return db.execute("DELETE FROM verdicts").rowcount

    def grid(self, roster: Iterable[str] = ()) -> tuple[list[str], list[str], dict[tuple[str, str], Cell]]:
        """Students, exercises (both sorted) and each reported (student, exercise)'s cell.

        ``roster`` names students known elsewhere (the hub's users, the roster
        file): each has a row even before their kernel reported anything.
        """
        cells: dict[tuple[str, str], Cell] = {}
        for student, ex, solved, tries, hint, finding, at in self.rows():
            c = cells.get((student, ex))
            if c is None:
                c = cells[(student, ex)] = Cell(False, 0, False, "", 0.0)
            c.solved = c.solved or bool(solved)
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
            if not c.solved and c.tries >= STUCK_TRIES and now - c.last_at <= STUCK_WINDOW_S
        ]
        return sorted(out, key=lambda r: (-r[2], r[0], r[1]))

    def csv(self, roster: Iterable[str] = ()) -> str:
        """The grid as CSV: a row per student (``roster``'s too), a column per exercise, each cell's label."""
        students, exercises, cells = self.grid(roster)
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["student", *exercises])
        for s in students:
            w.writerow([s, *(cells[(s, e)].label() if (s, e) in cells else "not started" for e in exercises)])
        return buf.getvalue()
