"""00-start-here's course table states the times tools/reading_times.py computes, for every notebook 00–10."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("reading_times", ROOT / "tools" / "reading_times.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # a dataclass looks its module up there
    spec.loader.exec_module(mod)
    return mod


rt = _tool()


@pytest.fixture(scope="module")
def computed() -> dict[str, int]:
    return {e.notebook: e.minutes for e in rt.estimates()}


def test_every_notebook_has_a_row_and_an_estimate(computed):
    stated = rt.table_minutes(rt.START_HERE.read_text())
    want = {p.stem for p in (ROOT / "notebooks" / "src").glob("[0-9][0-9]-*.py")}
    assert {f"{n:02d}" for n in range(11)} <= {s[:2] for s in want}
    assert set(stated) == want == set(computed)


def test_the_table_states_what_the_tool_computes(computed):
    # a notebook that grew (or lost) prose, code or exercises since the last --write fails here: re-run
    # `python tools/reading_times.py --write`
    assert rt.table_minutes(rt.START_HERE.read_text()) == computed


def test_an_exercise_adds_its_kinds_time():
    src = ROOT / "notebooks" / "src" / "06-workshop.py"
    bare, built = rt.estimate(src, []), rt.estimate(src, ["build"])
    assert built.exercises - bare.exercises == rt.EXERCISE_MINUTES["build"] == 25
    assert built.prose == bare.prose > 0 and built.code == bare.code > 0


def test_write_changes_only_the_minutes_cell_and_refuses_a_missing_row():
    text = "# | `01-lifecycle` | the four sets | 45 min |\n# other | 45 min |\n"
    want = "# | `01-lifecycle` | the four sets | 70 min |\n# other | 45 min |\n"
    assert rt.rewrite(text, {"01-lifecycle": 70}) == want
    with pytest.raises(ValueError, match="no row for 02-claim-and-lease"):
        rt.rewrite(text, {"01-lifecycle": 70, "02-claim-and-lease": 50})
