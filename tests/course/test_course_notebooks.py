"""The stored notebooks, read as a learner without a kernel reads them (no node needed).

- An unsolved exercise's stored output says what is not yet true, and never shows an answer: not
  its solution's code, not its hint.
- Each exercise cell, or the prose just above it, names its solution's file, and that file exists.
- Every widget's stored text/plain fallback says what it shows, and no stored plot is empty.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from echomq_teach.course import exercises, registry

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
SOLUTIONS = ROOT / "notebooks" / "solutions"
CHECK = re.compile(r'exercises\.check\("(\d\d\.\d+)"')
WIDGET = "application/vnd.jupyter.widget-view+json"
FALLBACKS = (
    "Lifecycle stepper, ", "Set view of queue ", "Flow composer: ", "Counter plot over ", "Executor view, ",
    "ChaosView(",
)


def stored_text(outputs) -> str:
    """What a cell's stored outputs say, as text (test_blind.py reads them so too)."""
    parts = []
    for o in outputs:
        if "text" in o:
            parts.append(o["text"])
        for mime in ("text/plain", "text/html", "text/markdown"):
            parts.append(str(o.get("data", {}).get(mime, "")))
    return "\n".join(parts)


def _exercise_cells() -> list[tuple[str, str, str, str]]:
    """(notebook, key, the cell's stored output, the cell's source and the prose above it)."""
    found = []
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            for key in CHECK.findall(cell.source):
                above = nb.cells[i - 1].source if i and nb.cells[i - 1].cell_type == "markdown" else ""
                found.append((path.name, key, stored_text(cell.outputs), above + "\n" + cell.source))
    return found


CELLS = _exercise_cells()


def _solution_lines(key: str) -> list[str]:
    """The lines of a solution's body that carry its answer: code, not imports, signatures or comments."""
    name = registry.REGISTRY[key].solution
    # a stage of your own queue names a folder: its files' code lines (a Lua comment starts with --)
    path = SOLUTIONS / name
    texts = [p.read_text(encoding="utf-8") for p in sorted(path.iterdir())] if path.is_dir() else [path.read_text()]
    lines = []
    for line in "\n".join(texts).splitlines():
        s = line.split("#")[0].split("--")[0].strip()
        if len(s) < 8 or s.startswith(("def ", "from ", "import ", "]", "}", ")")) or s.endswith(("= {", "= [")):
            continue  # a prediction's answer opens as its starter does: its lines inside are the answer
        lines.append(s)
    return lines


def test_every_exercise_of_the_course_is_in_a_notebook():
    keys = sorted(k for _, k, _, _ in CELLS)
    assert keys == sorted(set(keys)), "an exercise is checked in two cells"
    assert set(keys) == set(exercises.titles())


def test_a_notebooks_exercises_are_numbered_in_the_order_a_learner_meets_them():
    # CELLS is in notebook order: NN.1, NN.2, ... with no gap, whatever cell a check sits in
    by_notebook: dict[str, list[str]] = {}
    for notebook, key, _, _ in CELLS:
        by_notebook.setdefault(notebook, []).append(key)
    for notebook, keys in by_notebook.items():
        nn = notebook[:2]
        assert keys == [f"{nn}.{i}" for i in range(1, len(keys) + 1)], (notebook, keys)


@pytest.mark.parametrize(("notebook", "key", "stored", "source"), CELLS, ids=[f"{c[1]}" for c in CELLS])
def test_an_unsolved_exercise_shows_no_answer(notebook, key, stored, source):
    ex = registry.REGISTRY[key]
    assert f"✗ {key}" in stored and "not yet" in stored, f"{notebook}: {key}'s stored output is not a 'not yet'"
    assert "Hint:" not in stored and ex.hint not in stored
    code = _solution_lines(key)
    assert code, f"{ex.solution} has no answer lines to look for"
    shown = [line for line in code if line in stored or line in source]
    assert shown == [], f"{notebook}: {key} shows its solution's code"


@pytest.mark.parametrize(("notebook", "key", "stored", "source"), CELLS, ids=[f"{c[1]}" for c in CELLS])
def test_an_exercise_names_its_solution(notebook, key, stored, source):
    name = registry.REGISTRY[key].solution
    assert name and ((SOLUTIONS / name).is_file() or (SOLUTIONS / name).is_dir())
    assert f"solutions/{name}" in source, f"{notebook}: {key} does not say where its solution is"


def test_the_check_catches_a_leak():
    key, lines = "03.5", _solution_lines("03.5")
    leaked = "✗ 03.5 …: not yet.\n" + lines[0]
    assert any(line in leaked for line in lines) and registry.REGISTRY[key].hint not in leaked


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_every_stored_widget_says_what_it_shows(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        for o in getattr(cell, "outputs", []):
            data = o.get("data", {})
            if WIDGET not in data:
                continue
            plain = data.get("text/plain", "")
            # a row or column of the kit's widgets: ipywidgets shows its children's fallbacks in its own
            inner = plain.removeprefix("HBox(children=(").removeprefix("VBox(children=(")
            assert inner.startswith(FALLBACKS), f"{path.name}: a widget's fallback is {plain!r}"
            assert "no points yet" not in plain and "not run yet" not in plain, f"{path.name}: {plain!r}"
            assert "step 0 of" not in plain, f"{path.name}: a stepper stored before its first step"
            assert "no flow landed yet" not in plain, f"{path.name}: a composer stored before a run"


# Nothing a learner sees before committing a prediction answers it: tests/course/test_blind.py.
