"""Estimates each notebook's time from its source, and keeps 00-start-here's course table saying so.

    python tools/reading_times.py            # print the table: notebook, its parts, minutes
    python tools/reading_times.py --write    # also put the minutes in 00's table, and rebuild 00 if they changed

A notebook's time is the sum of three parts, read from ``notebooks/src/NN-*.py`` and the exercise registry:

- **Prose**: the words of its markdown cells at ``WORDS_PER_MINUTE`` = 150. Plain reading runs at
  200–250 words a minute; this prose is technical (every sentence names a set, a key or a rule the next cell
  relies on, and tables and formulas are read twice), so a learner reading it with care goes slower.
- **Code**: each code cell costs ``RUN_CELL_MINUTES`` = 0.5 (run it, wait for it, read what it printed or
  drew), and each non-blank line ``CODE_LINE_MINUTES`` = 0.05 (three seconds: the course's cells are meant to
  be read, not only run).
- **Exercises**: per exercise of the notebook (``echomq_teach.course.registry``, by the key's first two
  digits), a time by its kind, ``EXERCISE_MINUTES``: a *predict* asks for a reasoned answer and shows a run
  (5); a *diagnose* and a *repair* ask to read a queue left in a strange state and write the code that names
  or mends it, usually with a try or two (10); a *build* asks for a mechanism of one's own, judged by the
  checker under a nemesis over several seeds, with the tries that takes (25).

The sum is rounded to the nearest 5 minutes (``ROUND_TO``): the table states an order of magnitude for
planning a session, not a stopwatch reading. ``--write`` changes only the time cell of each notebook's row of
00's table; a notebook without a row there is an error, said before anything is written.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "notebooks" / "src"
START_HERE = SRC / "00-start-here.py"

WORDS_PER_MINUTE = 150
RUN_CELL_MINUTES = 0.5
CODE_LINE_MINUTES = 0.05
EXERCISE_MINUTES = {"predict": 5, "diagnose": 10, "repair": 10, "build": 25}
ROUND_TO = 5

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’_.-]*")
#: a row of 00's course table: ``# | `NN-name` | what it teaches | 45 min |``; group 2 is the minutes
_ROW = re.compile(r"^(# \| `(\d\d-[a-z0-9-]+)` \|.*\| )(\d+)( min \|)$")


@dataclass(frozen=True)
class Estimate:
    """One notebook's estimate and its parts, in minutes."""

    notebook: str
    prose: float
    code: float
    exercises: float
    kinds: tuple[str, ...]

    @property
    def minutes(self) -> int:
        total = self.prose + self.code + self.exercises
        return max(ROUND_TO, int(ROUND_TO * round(total / ROUND_TO)))


def _cells(path: Path) -> list[tuple[str, str]]:
    """The (type, source) of each cell of a jupytext percent source."""
    import jupytext  # the build's own reader: a cell here is a cell in the notebook

    return [(c.cell_type, c.source) for c in jupytext.read(path).cells]


def exercise_kinds() -> dict[str, list[str]]:
    """Each notebook's exercises' kinds, from the registry (every check imported, so every exercise is there)."""
    sys.path.insert(0, str(ROOT))
    from echomq_teach.course import exercises, registry  # noqa: F401 - exercises imports every notebook's checks

    kinds: dict[str, list[str]] = {}
    for key, ex in sorted(registry.REGISTRY.items()):
        kinds.setdefault(registry.NOTEBOOKS[key[:2]], []).append(ex.kind)
    return kinds


def estimate(path: Path, kinds: list[str]) -> Estimate:
    """The estimate for the notebook whose source is ``path``, given its exercises' kinds."""
    words = 0
    code_cells = code_lines = 0
    for kind, source in _cells(path):
        if kind == "markdown":
            words += len(_WORD.findall(source))
        elif kind == "code" and source.strip():
            code_cells += 1
            code_lines += sum(1 for line in source.splitlines() if line.strip())
    unknown = sorted(set(kinds) - set(EXERCISE_MINUTES))
    if unknown:
        raise ValueError(f"{path.stem}: no time for exercise kind(s) {unknown}; add them to EXERCISE_MINUTES")
    return Estimate(
        notebook=path.stem,
        prose=words / WORDS_PER_MINUTE,
        code=code_cells * RUN_CELL_MINUTES + code_lines * CODE_LINE_MINUTES,
        exercises=float(sum(EXERCISE_MINUTES[k] for k in kinds)),
        kinds=tuple(kinds),
    )


def estimates() -> list[Estimate]:
    """Every notebook's estimate, in order."""
    kinds = exercise_kinds()
    return [estimate(p, kinds.get(p.stem, [])) for p in sorted(SRC.glob("[0-9][0-9]-*.py"))]


def table_minutes(text: str) -> dict[str, int]:
    """The minutes 00's course table states, by notebook."""
    return {m.group(2): int(m.group(3)) for m in map(_ROW.match, text.splitlines()) if m}


def rewrite(text: str, minutes: dict[str, int]) -> str:
    """``text`` with each row's minutes set from ``minutes``; every notebook must have its row."""
    missing = sorted(set(minutes) - set(table_minutes(text)))
    if missing:
        raise ValueError(f"00's course table has no row for {', '.join(missing)}: add the row, then re-run")
    lines = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        m = _ROW.match(body)
        if m and m.group(2) in minutes:
            line = f"{m.group(1)}{minutes[m.group(2)]}{m.group(4)}" + line[len(body):]
        lines.append(line)
    return "".join(lines)


def show(rows: list[Estimate]) -> str:
    """The table the tool prints."""
    out = [f"{'notebook':<28} {'prose':>6} {'code':>6} {'exercises':>10}  {'min':>4}  kinds"]
    for e in rows:
        out.append(f"{e.notebook:<28} {e.prose:6.1f} {e.code:6.1f} {e.exercises:10.0f}  {e.minutes:4d}  "
                   f"{', '.join(e.kinds) or '-'}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update 00's table, and rebuild 00 if it changed")
    args = parser.parse_args(argv)
    rows = estimates()
    print(show(rows))
    if not args.write:
        return 0
    text = START_HERE.read_text()
    try:
        new = rewrite(text, {e.notebook: e.minutes for e in rows})
    except ValueError as exc:
        print(f"reading_times: {exc}; nothing written", file=sys.stderr)
        return 2
    if new == text:
        print("00's table already states these times")
        return 0
    START_HERE.write_text(new)
    print("00's table updated; rebuilding 00")
    return subprocess.call([sys.executable, str(ROOT / "tools" / "nbbuild.py"), "00"])


if __name__ == "__main__":
    raise SystemExit(main())
