"""How the course reads: 00's map lists every notebook, each notebook says what comes next, and
each ends with further reading whose links are all defined."""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "notebooks" / "src").glob("[0-9][0-9]-*.py"))
STEMS = [p.stem for p in SOURCES]


def markdown(path: Path) -> list[str]:
    return [c.source for c in jupytext.read(path).cells if c.cell_type == "markdown"]


def test_the_map_in_00_lists_every_notebook() -> None:
    (table,) = [m for m in markdown(SOURCES[0]) if "| notebook | what it teaches | time |" in m]
    listed = re.findall(r"^\| `(\d\d-[a-z0-9-]+)` \|", table, flags=re.MULTILINE)
    assert listed == STEMS


@pytest.mark.parametrize("path", SOURCES[:-1], ids=STEMS[:-1])
def test_each_notebook_but_the_last_says_what_comes_next(path: Path) -> None:
    following = STEMS[STEMS.index(path.stem) + 1]
    nexts = [m for text in markdown(path) for m in re.findall(r"Next: \*\*(\d\d-[a-z0-9-]+)\*\*", text)]
    assert nexts == [following], f"{path.stem} points on to {nexts}, the course goes on to {following}"


@pytest.mark.parametrize("path", SOURCES, ids=STEMS)
def test_each_notebook_ends_its_lesson_with_further_reading(path: Path) -> None:
    cells = [m for m in markdown(path) if m.startswith("## Further reading")]
    assert len(cells) == 1, f"{path.stem}: one 'Further reading' cell, found {len(cells)}"
    text = cells[0]
    used = set(re.findall(r"\]\[(r\d+)\]", text))
    defined = dict(re.findall(r"^\[(r\d+)\]: (\S+)$", text, flags=re.MULTILINE))
    assert len(used) >= 2 and used == set(defined), f"{path.stem}: links used {used}, defined {set(defined)}"
    assert all(url.startswith("https://") for url in defined.values())


#: a link's target in markdown: inline `](target)` or a reference definition `[x]: target`
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)|^\[[^\]]+\]: (\S+)", re.MULTILINE)


@pytest.mark.parametrize("path", SOURCES, ids=STEMS)
def test_every_local_link_opens_inside_the_courses_jupyterlab(path: Path) -> None:
    # tools/course.sh serves notebooks/ as JupyterLab's root: a link that climbs out of it does not open there,
    # so the docs are reached through notebooks/docs (a link to ../docs; the course images copy the files)
    notebooks = ROOT / "notebooks"
    for text in markdown(path):
        for m in LINK_TARGET.finditer(text):
            target = (m.group(1) or m.group(2)).split("#")[0]
            if not target or re.match(r"[a-z]+:", target):
                continue  # an anchor in the notebook itself, or a web address
            assert not target.startswith(("/", "..")), f"{path.stem}: {target} climbs out of notebooks/"
            assert (notebooks / target).exists(), f"{path.stem}: {target} is not there"
