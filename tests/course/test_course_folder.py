"""``python -m echomq_teach.course init DIR``: the course copied into a folder of the learner's own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from echomq_teach.course import folder
from echomq_teach.errors import BadInput

ROOT = Path(__file__).resolve().parents[2]


def _tree(d: Path) -> list[tuple[str, bytes]]:
    return sorted((str(p.relative_to(d)), p.read_bytes()) for p in d.rglob("*") if p.is_file())


def test_init_copies_the_notebooks_solutions_and_docs(tmp_path):
    dest = tmp_path / "courses" / "the-queue"  # parents made as needed
    written = folder.init(dest)
    names = {str(p.relative_to(dest)) for p in written}
    assert {p.name for p in (ROOT / "notebooks").glob("*.ipynb")} <= names
    assert {f"solutions/{p.name}" for p in (ROOT / "notebooks/solutions").glob("*.py")} <= names
    assert {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} <= names
    assert {"pytest.ini", "sanitize.cfg"} <= names
    assert (dest / "00-start-here.ipynb").read_bytes() == (ROOT / "notebooks/00-start-here.ipynb").read_bytes()
    assert "-p no:valkey" in (dest / "pytest.ini").read_text()
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(".")], "no working folder left behind"
    assert dest.stat().st_mode & 0o777 != 0o700


@pytest.mark.parametrize("kind", ["not empty", "a file"])
def test_init_refuses_a_folder_in_use_and_writes_nothing(tmp_path, kind):
    dest = tmp_path / "mine"
    if kind == "a file":
        dest.write_text("my notes")
    else:
        dest.mkdir()
        (dest / "00-start-here.ipynb").write_text("my own work")
    before = _tree(tmp_path)
    with pytest.raises(BadInput) as err:
        folder.init(dest)
    assert str(dest) in str(err.value)
    assert _tree(tmp_path) == before and sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_the_command_line(tmp_path):
    run = [sys.executable, "-m", "echomq_teach.course", "init"]
    first = subprocess.run([*run, str(tmp_path / "c")], capture_output=True, text=True)
    assert first.returncode == 0 and "11 notebooks" in first.stdout, first.stderr
    before = _tree(tmp_path)
    again = subprocess.run([*run, str(tmp_path / "c")], capture_output=True, text=True)
    assert again.returncode == 2 and "not empty" in again.stderr and _tree(tmp_path) == before
    kept = subprocess.run([*run, "--existing-ok", str(tmp_path / "c")], capture_output=True, text=True)
    assert kept.returncode == 0 and "left as it is" in kept.stdout and _tree(tmp_path) == before
    # every notebook of the copy is valid JSON with its outputs (a learner opens them as they are)
    assert all(json.loads(p.read_text())["cells"] for p in (tmp_path / "c").glob("*.ipynb"))
