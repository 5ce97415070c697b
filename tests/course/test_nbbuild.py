"""tools/nbbuild.py: jupytext reads the sources, and --check sees types, metadata and unrun cells too."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("nbbuild", ROOT / "tools" / "nbbuild.py")
nbbuild = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbbuild)

SOURCE = """# %% [markdown]
# # A title
#
# Some prose.

# %% tags=["nbval-ignore-output"]
x = 1
print(x)

# %%
y = 2
"""


def _ran(nb):
    built = copy.deepcopy(nb)
    for n, cell in enumerate(c for c in built.cells if c.cell_type == "code"):
        cell.execution_count = n + 1
    return built


def test_jupytext_reads_the_percent_format(tmp_path):
    src = tmp_path / "99-sample.py"
    src.write_text(SOURCE)
    nb = nbbuild.read_source(src)
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "code"]
    assert nb.cells[0].source == "# A title\n\nSome prose."
    assert nb.cells[1].metadata == {"tags": ["nbval-ignore-output"]} and nb.cells[2].metadata == {}
    assert [c.id for c in nb.cells] == ["99-000", "99-001", "99-002"]
    assert nb.metadata == nbbuild.METADATA


def test_check_compares_types_metadata_and_runs(tmp_path):
    src = tmp_path / "99-sample.py"
    src.write_text(SOURCE)
    good = _ran(nbbuild.read_source(src))
    good.metadata["widgets"] = {"state": {}}  # what a build adds
    good.metadata["echomq"] = {"run_seconds": 1.5}
    assert nbbuild.differences(src, good) == []

    typed = copy.deepcopy(good)
    typed.cells[2].cell_type = "markdown"
    assert "cell 2: its cell_type differs" in nbbuild.differences(src, typed)

    tagged = copy.deepcopy(good)
    tagged.cells[1].metadata = {}
    assert nbbuild.differences(src, tagged) == ["cell 1: its metadata differs"]

    timed = copy.deepcopy(good)
    timed.cells[2].metadata["execution"] = {"iopub.status.idle": "2026"}
    assert nbbuild.differences(src, timed) == ["cell 2: its metadata differs"]

    unrun = copy.deepcopy(good)
    unrun.cells[2].execution_count = None
    assert nbbuild.differences(src, unrun) == ["cell 2: never ran, so it stores no output"]

    extra = copy.deepcopy(good)
    extra.metadata["jupytext"] = {}
    assert nbbuild.differences(src, extra)[0].startswith("notebook metadata")


def test_every_stored_notebook_matches_its_source():
    for src in sorted((ROOT / "notebooks" / "src").glob("*.py")):
        stored = nbformat.read(ROOT / "notebooks" / (src.stem + ".ipynb"), as_version=4)
        assert nbbuild.differences(src, stored) == [], f"run tools/nbbuild.py {src.stem[:2]}"


def test_the_notebook_session_starts_the_longest_recorded_run_first(tmp_path):
    from types import SimpleNamespace

    import course_session

    for name, seconds in (("a", 3.0), ("b", None), ("c", 40.5)):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
        if seconds is not None:  # b was built before builds recorded their run time
            nb.metadata["echomq"] = {"run_seconds": seconds}
        nbformat.write(nb, tmp_path / f"{name}.ipynb")
    # two cells of each notebook, collected in name order; the order within a notebook is kept
    items = [SimpleNamespace(path=tmp_path / f"{n}.ipynb", cell=i) for n in "abc" for i in (1, 2)]
    course_session.pytest_collection_modifyitems(None, None, items)
    assert [(i.path.stem, i.cell) for i in items] == [("c", 1), ("c", 2), ("a", 1), ("a", 2), ("b", 1), ("b", 2)]
