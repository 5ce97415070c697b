"""The ledger of guarantees (docs/guarantees.md) and the notebooks hold each other to their word.

- Every entry has its five lines; every test it names exists; every notebook it names as proof has
  a code cell marked ``# ledger: <entry>``; every notebook it names as showing the break links to it.
- Every link from a notebook to the ledger names an entry, and every entry is linked from a notebook.
- A notebook cell that uses the words of a guarantee links to the ledger, so no promise is made
  without its scope.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[2]
LEDGER = ROOT / "docs" / "guarantees.md"
# the sources the notebooks are built from (tools/nbbuild.py --check keeps the two alike)
NOTEBOOKS = {p.name[:2]: p for p in sorted((ROOT / "notebooks" / "src").glob("[0-9][0-9]-*.py"))}
FIELDS = ("Promise", "Scope", "Proved by", "Breaks when", "Break shown in")
LINK = re.compile(r"guarantees\.md#([a-z0-9-]+)")
MARKER = re.compile(r"#\s*ledger:\s*([a-z0-9-]+)")
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
NOTEBOOK_REF = re.compile(r"notebooks? ((?:\d\d(?:, | and )?)+)")
# the words a promise is made with; a cell that says one of these says where it holds
PROMISE_WORDS = re.compile(
    r"exactly[- ]once|settles? once|settled once|never lost|loses nothing|nothing lost|one holder"
    r"|never reused|never repeats|WAIT confirmed",
    re.IGNORECASE,
)


@dataclass
class Entry:
    name: str
    fields: dict[str, str]


def read_ledger(text: str) -> list[Entry]:
    entries: list[Entry] = []
    for block in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        name, _, body = block.partition("\n")
        fields: dict[str, str] = {}
        for item in re.split(r"^- \*\*", body, flags=re.MULTILINE)[1:]:
            key, _, value = item.partition("**:")
            fields[key.strip()] = " ".join(value.split())
        entries.append(Entry(name.strip(), fields))
    return entries


def notebook_numbers(text: str) -> list[str]:
    found: list[str] = []
    for m in NOTEBOOK_REF.finditer(text):
        found += re.findall(r"\d\d", m.group(1))
    return found


def cells(number: str) -> list:
    return jupytext.read(NOTEBOOKS[number]).cells


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


ENTRIES = read_ledger(LEDGER.read_text())
NAMES = [e.name for e in ENTRIES]


def test_the_ledger_reads_as_entries() -> None:
    assert len(ENTRIES) >= 8, NAMES
    assert len(set(NAMES)) == len(NAMES), "an entry is named twice"
    for e in ENTRIES:
        assert re.fullmatch(r"[a-z0-9-]+", e.name), f"{e.name!r} cannot be a link anchor"
        missing = [f for f in FIELDS if not e.fields.get(f)]
        assert not missing, f"{e.name}: no {missing}"


@pytest.mark.parametrize("entry", ENTRIES, ids=NAMES)
def test_an_entry_is_proved_by_tests_and_cells_that_exist(entry: Entry) -> None:
    proof = entry.fields["Proved by"]
    tests = TEST_REF.findall(proof)
    assert tests, f"{entry.name}: no test proves it"
    for path, name in tests:
        assert (ROOT / path).is_file(), f"{entry.name}: {path} does not exist"
        assert name in defined_tests(ROOT / path), f"{entry.name}: {path} has no {name}"
    for number in notebook_numbers(proof):
        assert number in NOTEBOOKS, f"{entry.name}: no notebook {number}"
        marked = [c for c in cells(number) if c.cell_type == "code" and entry.name in MARKER.findall(c.source)]
        assert marked, f"{entry.name}: notebook {number} has no cell marked '# ledger: {entry.name}'"


@pytest.mark.parametrize("entry", ENTRIES, ids=NAMES)
def test_the_notebook_that_shows_the_break_links_to_the_entry(entry: Entry) -> None:
    shown = entry.fields["Break shown in"]
    numbers = notebook_numbers("notebook " + shown) if re.match(r"\d\d", shown) else []
    assert numbers or shown.startswith("none yet"), f"{entry.name}: 'Break shown in' names no notebook"
    for number in numbers:
        linked = {m for c in cells(number) if c.cell_type == "markdown" for m in LINK.findall(c.source)}
        assert entry.name in linked, f"{entry.name}: notebook {number} shows the break but does not link here"


def test_every_link_names_an_entry_and_every_entry_is_linked() -> None:
    linked: dict[str, set[str]] = {}
    for number in NOTEBOOKS:
        for c in cells(number):
            for name in LINK.findall(c.source):
                linked.setdefault(name, set()).add(number)
            for name in MARKER.findall(c.source):
                assert name in NAMES, f"notebook {number} marks a cell for '{name}', which the ledger lacks"
    unknown = sorted(set(linked) - set(NAMES))
    assert not unknown, f"notebooks link to entries the ledger lacks: {unknown}"
    unused = sorted(set(NAMES) - set(linked))
    assert not unused, f"entries no notebook links to: {unused}"


@pytest.mark.parametrize("number", sorted(NOTEBOOKS))
def test_a_cell_that_makes_a_promise_says_where_it_holds(number: str) -> None:
    bare = [
        PROMISE_WORDS.search(c.source).group(0)
        for c in cells(number)
        if c.cell_type == "markdown" and PROMISE_WORDS.search(c.source) and "guarantees.md" not in c.source
    ]
    assert not bare, f"notebook {number}: promise words with no link to docs/guarantees.md: {bare}"


def test_the_ledger_reader_finds_what_it_is_given() -> None:
    # the reader itself can fail: a missing line and a test reference are seen
    text = "## a-b\n\n- **Promise**: x\n- **Proved by**: `tests/x.py::test_y`, notebook 02 and 07\n"
    (entry,) = read_ledger(text)
    assert entry.fields["Promise"] == "x" and "Scope" not in entry.fields
    assert TEST_REF.findall(entry.fields["Proved by"]) == [("tests/x.py", "test_y")]
    assert notebook_numbers(entry.fields["Proved by"]) == ["02", "07"]
