"""The roster: who the students of a classroom are (one name per line, or a CSV).

Roster file: one student name per line, or a CSV whose first column is the
name (a header row whose first cell is ``name``, ``username``, ``student``,
``login`` or ``user`` is skipped). Blank lines and lines starting with ``#``
are ignored. Names are lower-cased; each must match ``[a-z][a-z0-9_-]{0,23}``:
no dots (``al`` and ``al.ice`` would otherwise share a key prefix), and short
enough that the hub's per-student container and volume names stay readable.
"""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

from ..errors import EchoMQError

NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{0,23}$")
_HEADERS = {"name", "username", "student", "login", "user"}
#: names a student may not take: the node's own users and the hub's instructor
RESERVED = {"default", "admin", "instructor", "root"}


class RosterError(EchoMQError, ValueError):
    """The roster file cannot be used as it is (the message names the line)."""


def check_name(name: str) -> str:
    """A usable student name, or RosterError saying why not."""
    if not NAME_RE.match(name):
        raise RosterError(
            f"{name!r} is not a usable student name: a letter, then up to 23 letters, digits, '_' or '-' "
            "(no dots, spaces, braces or capitals)"
        )
    if name in RESERVED:
        raise RosterError(f"{name!r} is reserved for the node or the hub itself")
    return name


def parse_roster(text: str, source: str = "roster") -> list[str]:
    """Student names from a roster's text (see the module docstring for the format)."""
    names: list[str] = []
    seen: dict[str, int] = {}
    for lineno, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        cell = row[0].strip() if row else ""
        if not cell or cell.startswith("#"):
            continue
        name = cell.lower()
        if not names and not seen and name in _HEADERS:
            continue  # a CSV header
        try:
            check_name(name)
        except RosterError as exc:
            raise RosterError(f"{source}:{lineno}: {exc}") from None
        if name in seen:
            raise RosterError(f"{source}:{lineno}: {name!r} is listed twice (first on line {seen[name]})")
        seen[name] = lineno
        names.append(name)
    if not names:
        raise RosterError(f"{source}: no student names found")
    return names


def read_roster(path: str | os.PathLike[str]) -> list[str]:
    """Student names from a roster file."""
    p = Path(path)
    return parse_roster(p.read_text(encoding="utf-8-sig"), source=str(p))
