"""The kit's import rules, read from the source (ast), not from a running interpreter.

docs/map.md draws the rooms and the way imports flow: the core (the flat
modules of ``echomq_teach``) uses only itself; the rooms use the core, the
nodes and one another without a circle. Checked here: no import circle between
modules, none between rooms, no core module importing a room (the package's
``__init__`` may re-export ``start_node``), and no private name (``_x``)
imported from another module, tests included. Every import counts: lazy ones
inside functions and ``TYPE_CHECKING`` ones too.

The ``ALLOWED_*`` lists hold what a branch still owes (all empty now); an
allowance that is no longer needed fails too, so that the lists only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"echomq_teach": ROOT / "echomq_teach", "echomq_widgets": ROOT / "widgets"}
ROOMS = ("nodes", "lab", "course", "floor", "classroom", "hub")
#: the one import from the core into a room: the package re-exports the course's entry point, start_node
ENTRY_POINT = ("echomq_teach", "echomq_teach.nodes.providers")

# (importer, imported module, name): a private name still imported across modules
ALLOWED_PRIVATE: set[tuple[str, str, str]] = set()
# rooms that still import each other in a circle: (room, room) edges allowed to close one
ALLOWED_ROOM_EDGES: set[tuple[str, str]] = set()
# module circles still there (none: the exercise registry untied the last one)
ALLOWED_CIRCLES: list[list[str]] = []


def module_files() -> dict[str, Path]:
    """Every module of the kit and of the widgets, by its dotted name (a package by its own name)."""
    out = {}
    for pkg, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([pkg, *parts])] = path
    return out


MODULES = module_files()


def _base(importer: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def imports(name: str, path: Path) -> list[tuple[str, str | None]]:
    """(module, name imported from it or None) for every import in the file, lazy ones included."""
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _base(name, path, node)
            for a in node.names:
                # "from pkg import module" imports the module; "from module import name", the module
                full = f"{base}.{a.name}"
                out.append((full, None) if full in MODULES else (base, a.name))
    return out


def edges() -> dict[str, set[str]]:
    """Module → the kit's modules it imports (itself and its own package left out)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for m, path in MODULES.items():
        for target, _ in imports(m, path):
            if target in MODULES and target != m and not m.startswith(target + "."):
                graph[m].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts with more than one member (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def room(module: str) -> str:
    """``core``, a room's name, or ``widgets``."""
    parts = module.split(".")
    if parts[0] == "echomq_widgets":
        return "widgets"
    return parts[1] if len(parts) > 1 and parts[1] in ROOMS else "core"


def test_the_rule_reader_sees_the_kit():
    graph = edges()
    assert "echomq_teach.connector" in graph["echomq_teach.cluster_connector"]
    assert "echomq_teach.lab.history" in graph["echomq_teach.lab.checker"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_between_modules():
    # exactly the allowed circles: a new one fails, and so does an allowance no longer needed
    assert circles(edges()) == ALLOWED_CIRCLES


def test_no_import_circle_between_rooms():
    graph: dict[str, set[str]] = {}
    for m, targets in edges().items():
        for t in targets:
            if (m, t) == ENTRY_POINT:
                continue
            if room(m) != room(t) and (room(m), room(t)) not in ALLOWED_ROOM_EDGES:
                graph.setdefault(room(m), set()).add(room(t))
    assert circles(graph) == []
    # an allowance is for an edge that still exists and still closes a circle
    for a, b in ALLOWED_ROOM_EDGES:
        graph.setdefault(a, set()).add(b)
        assert any(a in c and b in c for c in circles(graph)), f"allowance {a} → {b} is no longer needed"


def test_the_core_imports_no_room():
    bad = []
    for m, targets in edges().items():
        if room(m) != "core" or not m.startswith("echomq_teach"):
            continue
        for t in targets:
            # the package's own __init__ may re-export the course's entry point, start_node
            if room(t) != "core" and (m, t) != ENTRY_POINT:
                bad.append(f"{m} → {t}")
    assert bad == []


def test_no_private_name_is_imported_across_modules():
    files = dict(MODULES)
    files.update({f"tests.{p.relative_to(ROOT / 'tests').with_suffix('').as_posix().replace('/', '.')}": p
                  for p in sorted((ROOT / "tests").rglob("*.py"))})
    found = set()
    for m, path in files.items():
        for target, name in imports(m, path):
            ours = target in files or target.split(".")[0] in PACKAGES
            if ours and name and name.startswith("_") and not name.startswith("__"):
                found.add((m, target, name))
    assert found - ALLOWED_PRIVATE == set()
    assert ALLOWED_PRIVATE - found == set(), "an allowance is no longer needed: remove it"
