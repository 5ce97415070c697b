"""Every notebook, 00 to 10, ends with three to five "Check yourself" questions (issue 32).

The questions come after the notebook's recap, and only the further reading and the closing note
follow them; each is a numbered question ending in a question mark. Whether each is answerable from
the notebook's own cells is the reviewer's pass (README, "For engineers"); this test keeps the shape.
"""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "notebooks" / "src").glob("[0-9][0-9]-*.py"))
HEADING = re.compile(r"^## (.+)$", re.MULTILINE)
AFTER = {"Further reading", "When you are done"}


def headings(path: Path) -> list[str]:
    return [h for c in jupytext.read(path).cells if c.cell_type == "markdown" for h in HEADING.findall(c.source)]


def questions(text: str) -> list[str]:
    """The numbered items of a markdown list, each joined onto one line."""
    items: list[str] = []
    for line in text.splitlines():
        if re.match(r"\d+\. ", line):
            items.append(line.split(". ", 1)[1])
        elif items and line.startswith("   ") and line.strip():
            items[-1] += " " + line.strip()
    return items


def test_every_notebook_is_here() -> None:
    assert [p.name[:2] for p in SOURCES] == [f"{n:02d}" for n in range(11)]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name[:2])
def test_a_notebook_ends_with_its_questions(path: Path) -> None:
    found = headings(path)
    assert found.count("Check yourself") == 1, f"{path.name}: one 'Check yourself' section, got {found}"
    at = found.index("Check yourself")
    assert found[at - 1].startswith("Recap"), f"{path.name}: 'Check yourself' follows the recap, not {found[at - 1]}"
    assert set(found[at + 1 :]) <= AFTER, f"{path.name}: only {sorted(AFTER)} after the questions, got {found[at + 1:]}"
    [cell] = [c for c in jupytext.read(path).cells if c.cell_type == "markdown" and "## Check yourself" in c.source]
    asked = questions(cell.source)
    assert 3 <= len(asked) <= 5, f"{path.name}: {len(asked)} questions"
    assert all(q.rstrip().endswith("?") for q in asked), f"{path.name}: a question that asks nothing: {asked}"


def test_the_reader_finds_wrapped_questions() -> None:
    text = "## Check yourself\n\nintro\n\n1. What is it, and\n   why?\n2. Where?\n"
    assert questions(text) == ["What is it, and why?", "Where?"]
