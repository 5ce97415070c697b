"""The docs held to the code: what the README's layout, docs/map.md and the rooms' paragraphs name exists.

Read from the files (ast and text), not from a running interpreter:

- every module, folder or name the README's Layout table, map.md's rooms table and each room's
  ``__init__`` paragraph gives for a room is a module, subpackage or top-level name of that room, and
  every room has its row;
- every repository path, ``echomq_teach.…`` module and ``test_…`` function a doc names exists;
- map.md's table of which rooms each room (and the notebooks) imports is the one the code has, and
  each room's paragraph says it uses exactly those rooms;
- map.md's table of test folders is the folders ``tests/`` has.

A failure says what to change; for the import table it prints the table the code has.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest
from test_imports import ENTRY_POINT, MODULES, ROOMS, edges, room

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "echomq_teach"
README = ROOT / "README.md"
MAP = ROOT / "docs" / "map.md"
#: every markdown file whose paths, modules and test names are held to the tree
DOCS = sorted({README, *ROOT.glob("docs/*.md"), *ROOT.glob("*/README.md")})
#: the folders of each room (the core is the package's own flat modules)
FOLDERS = {"core": PACKAGE, **{r: PACKAGE / r for r in ROOMS}, "widgets": ROOT / "widgets"}
ORDER = ["core", *ROOMS, "widgets", "notebooks"]
#: the first part of a path a doc may name inside the repository
TOP = ("echomq_teach", "tests", "tools", "docs", "notebooks", "native", "docker", "bench", "widgets", "binder", ".ci")
#: a placeholder in a path a doc gives as a pattern (NN-name, <queue>, *.py, …)
PATTERN = re.compile(r"NN|<|\*|…|\{|\$")
IDENT = re.compile(r"[A-Za-z_]\w*")
#: folders git ignores, which a doc may name as what a command makes (bench's node_modules, artifacts/)
IGNORED = tuple(line.rstrip("/") for line in (ROOT / ".gitignore").read_text().splitlines() if "/" in line.strip("/"))


def backticked(text: str) -> list[str]:
    """Every `code` span (and rst ``code``) of a text."""
    return [t.strip() for t in re.findall(r"``?([^`\n]+?)``?", text)]


def table(text: str, heading: str) -> list[list[str]]:
    """The rows (cells; header and rule left out) of the first markdown table from ``heading`` on."""
    rows: list[list[str]] = []
    for line in text[text.index(heading):].splitlines():
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]


# -- what a room holds ---------------------------------------------------------------------------------------
def _python_files(folder: Path, core: bool) -> list[Path]:
    return sorted(folder.glob("*.py")) if core else sorted(folder.rglob("*.py"))


@cache
def defined(path: Path) -> frozenset[str]:
    """The top-level names a module defines: functions, classes, assigned names."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return frozenset(names)


def module_path(folder: Path, dotted: str) -> Path | None:
    """``a.b`` under ``folder`` as a module file (or a package's ``__init__``), if it exists."""
    base = folder.joinpath(*dotted.split("."))
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def resolves_in_room(token: str, folder: Path, core: bool) -> bool:
    """A token a doc gives for a room: a path in it, a module of it, a module's name, or a name it defines."""
    token = token.split("(")[0]  # a call's arguments
    if token in ("echomq_teach", "echomq_widgets"):
        return True
    if "/" in token or token.endswith((".py", ".sh", ".md", ".h", ".c")):
        return any((base / token).exists() for base in (folder, PACKAGE, ROOT))
    if not all(IDENT.fullmatch(p) for p in token.split(".")):
        return True  # not a name: a command line, an argument, a key
    if token.startswith(("echomq_teach.", "echomq_widgets.")):
        return names_a_module(token)
    parts = token.split(".")
    for i in range(len(parts), 0, -1):
        path = module_path(folder, ".".join(parts[:i]))
        if path and (core is False or path.parent == folder):
            rest = parts[i:]
            return not rest or (len(rest) == 1 and rest[0] in defined(path))
    # a bare name: defined at the top of one of the room's modules
    return len(parts) == 1 and any(token in defined(p) for p in _python_files(folder, core))


def names_a_module(dotted: str) -> bool:
    """``echomq_teach.a.b`` (or ``echomq_widgets.…``): a module, or a name a module defines."""
    top, _, rest = dotted.partition(".")
    folder = PACKAGE if top == "echomq_teach" else ROOT / "widgets"
    parts = rest.split(".")
    for i in range(len(parts), 0, -1):
        path = module_path(folder, ".".join(parts[:i]))
        if path:
            tail = parts[i:]
            return not tail or (len(tail) == 1 and tail[0] in defined(path))
    return False


def _unresolved(cell: str, folder: Path, core: bool) -> list[str]:
    return [t for t in backticked(cell) if not resolves_in_room(t, folder, core)]


def _folder_of(cell: str) -> Path | None:
    """The folder a table's first cell names: ``**core**``, `nodes/`, `echomq_teach/lab/`, `widgets/`, …"""
    if cell.startswith("**core**"):
        return PACKAGE
    ticks = backticked(cell)
    if not ticks:
        return None
    name = ticks[0].rstrip("/")
    for base in (ROOT, PACKAGE):
        if (base / name).is_dir():
            return base / name
    return None


# -- the README's layout and map.md's rooms ------------------------------------------------------------------
def _rows(doc: Path, heading: str) -> list[tuple[Path | None, str, str]]:
    return [(_folder_of(first), first, holds) for first, holds, *_ in table(doc.read_text(encoding="utf-8"), heading)]


@pytest.mark.parametrize(("doc", "heading"), [(README, "## Layout"), (MAP, "## The rooms")], ids=["readme", "map"])
def test_every_module_a_room_row_names_exists(doc, heading):
    rows = _rows(doc, heading)
    bad = []
    for folder, first, holds in rows:
        for path in backticked(first):
            if "/" in path and "*" not in path and not any((base / path).exists() for base in (ROOT, PACKAGE)):
                bad.append(f"{first}: no {path}")
        if folder is None:
            continue
        core = folder == PACKAGE
        if core or (folder / "__init__.py").is_file():
            bad += [f"{first}: {t}" for t in _unresolved(holds, folder, core)]
        else:  # a folder of other files: a bare name is one of its files or folders
            stems = {p.stem for p in folder.iterdir()}
            bad += [f"{first}: {t}" for t in backticked(holds) if IDENT.fullmatch(t) and t not in stems]
    assert not bad, f"{doc.name} names what the code does not have: " + "; ".join(bad)
    rooms = {folder for folder, _, _ in rows}
    missing = [name for name, folder in FOLDERS.items() if folder not in rooms]
    assert missing == [], f"{doc.name} has no row for {missing}"


@pytest.mark.parametrize("name", [r for r in FOLDERS if r != "core"])
def test_a_rooms_paragraph_names_what_it_holds(name):
    folder = FOLDERS[name]
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    assert doc, f"{name}/__init__.py has no paragraph"
    assert _unresolved(doc, folder, False) == [], f"{name}/__init__.py names what the room does not have"


# -- paths, modules and tests any doc names ------------------------------------------------------------------
@cache
def _test_names() -> frozenset[str]:
    names = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        names |= {n for n in defined(path) if n.startswith("test_")}
    return frozenset(names)


def missing(text: str, here: Path) -> list[str]:
    """The repository paths, kit modules and test functions ``text`` names in code spans that do not exist."""
    tests = _test_names()
    bad = []
    for token in backticked(text):
        head = token.split()[0] if token.split() else token
        if head.split("/")[0] in TOP and "/" in head and not PATTERN.search(head):
            path = head.split("::")[0].rstrip(".,:;")
            made = path.startswith(IGNORED)  # made by a command, not stored
            if not made and not (ROOT / path).exists() and not (here / path).exists():
                bad.append(path)
        elif re.fullmatch(r"echomq_(teach|widgets)(\.\w+)+", head) and not names_a_module(head):
            bad.append(head)
        elif re.fullmatch(r"test_\w+", head) and head not in tests:
            bad.append(head)
    return bad


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_path_module_and_test_a_doc_names_exists(doc):
    bad = missing(doc.read_text(encoding="utf-8"), doc.parent)
    assert not bad, f"{doc.relative_to(ROOT)} names what the tree does not have: " + "; ".join(bad)


def test_the_name_checks_can_fail():
    assert not resolves_in_room("inspect", PACKAGE, True)  # gone
    assert not resolves_in_room("checker", PACKAGE, True)  # the lab's, not the core's
    assert resolves_in_room("checker", FOLDERS["lab"], False)
    assert resolves_in_room("models/", FOLDERS["lab"], False)
    assert resolves_in_room("providers.start_node", FOLDERS["nodes"], False)
    assert not resolves_in_room("providers.stop_node", FOLDERS["nodes"], False)
    text = "`tests/queue/test_batch.py`, `echomq_teach.lab.nothing_here`, `test_no_such_test`, `tests/conftest.py`"
    assert missing(text, ROOT) == ["tests/queue/test_batch.py", "echomq_teach.lab.nothing_here", "test_no_such_test"]


# -- which rooms import which --------------------------------------------------------------------------------
def _notebook_rooms() -> set[str]:
    """The rooms the notebooks' sources import from (the package itself counts as the core)."""
    out = set()
    for src in sorted((ROOT / "notebooks" / "src").glob("*.py")):
        for node in ast.walk(ast.parse(src.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                         for a in node.names]
            out |= {room(n) for n in names if n.split(".")[0] in ("echomq_teach", "echomq_widgets")}
    return out


@cache
def room_imports() -> dict[str, set[str]]:
    """Room → the other rooms its modules import (the package's re-export of start_node left out); the notebooks."""
    out: dict[str, set[str]] = {r: set() for r in ORDER}
    for m, targets in edges().items():
        for t in targets:
            if (m, t) != ENTRY_POINT and room(m) != room(t):
                out[room(m)].add(room(t))
    out["notebooks"] = _notebook_rooms()
    return out


def _cell(rooms: set[str]) -> str:
    return ", ".join(r for r in ORDER if r in rooms) or "—"


def import_table() -> str:
    return "\n".join(f"| {r} | {_cell(targets)} |" for r, targets in room_imports().items())


def test_the_maps_import_table_is_the_codes():
    doc = {first.strip("`* "): holds for first, holds in table(MAP.read_text(encoding="utf-8"), "| room | imports |")}
    want = {r: _cell(t) for r, t in room_imports().items()}
    assert doc == want, f"docs/map.md's import table differs from the code's; the code's is:\n{import_table()}"


def test_each_rooms_paragraph_says_which_rooms_it_uses():
    imports = room_imports()
    wrong = []
    for name, folder in FOLDERS.items():
        if name == "core":
            continue
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
        said = re.search(r"\buses? (the [^.;]*)", " ".join(doc.split()))
        if not said:
            wrong.append(f"{name}: no sentence says which rooms it uses")
            continue
        named = {r for r in ORDER if re.search(rf"\b{r}\b", said.group(1))}
        if named != imports[name]:
            wrong.append(f"{name}: says it uses {sorted(named)}, imports {sorted(imports[name])}")
    assert not wrong, "\n".join(wrong)


def test_the_tests_table_is_the_test_folders():
    rows = table(MAP.read_text(encoding="utf-8"), "| folder | holds |")
    doc = {backticked(first)[0].rstrip("/") for first, *_ in rows}
    have = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").iterdir() if any(p.glob("test_*.py"))}
    assert doc == have, "docs/map.md's test folders differ from tests/'s"
