"""The kit's import rules, read from the source (ast), not from a running interpreter.

docs/map.md draws the rooms and the way imports flow: the core (the flat
modules of ``echomq_teach``) uses only itself; the rooms use the core, the
nodes and one another without a circle. Checked here: no import circle between
modules, none between rooms, no core module importing a room (the package's
``__init__`` may re-export ``start_node``), no private name (``_x``) imported
from another module, tests included, and no private attribute (``obj._x``,
``self._x`` of a base class) reached from a kit module other than the one that
defines it (tests may reach into what they test). Every import counts: lazy
ones inside functions and ``TYPE_CHECKING`` ones too.

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
# (module, attribute): a private attribute (``obj._x``) still reached from a module other than the one defining it
ALLOWED_REACHES: set[tuple[str, str]] = set()


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


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def defined_attributes(tree: ast.AST) -> set[str]:
    """The private attributes a module defines: ``self._x =`` / ``cls._x =``, and a class's own ``_x`` (a
    method, an assignment, an annotation)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                out.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(item.name):
                    out.add(item.name)
                targets = item.targets if isinstance(item, ast.Assign) else [item.target] if isinstance(
                    item, ast.AnnAssign) else []
                out |= {t.id for t in targets if isinstance(t, ast.Name) and _private(t.id)}
    return out


def _imported_names(m: str, path: Path, tree: ast.AST) -> dict[str, tuple[str, str]]:
    """Each name a module imports from a kit module: local name → (module, name)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _base(m, path, node)
            for a in node.names:
                out[a.asname or a.name] = (base, a.name)
    return out


def _classes(tree: ast.AST) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}


def private_reaches(sources: dict[str, tuple[Path, str]] | None = None) -> set[tuple[str, str]]:
    """(module, attribute) for every private attribute a kit module reaches that another kit module defines.

    Two ways: ``x._name`` where only another module defines ``_name`` (read by name: a module that defines a
    ``_name`` of its own is not judged on it); and ``self._name`` in a class whose base, in another module,
    defines it (an attribute of the base, or a method the class does not override).
    """
    if sources is None:
        sources = {m: (p, p.read_text(encoding="utf-8")) for m, p in MODULES.items()}
    paths = {m: p for m, (p, _) in sources.items()}
    trees = {m: ast.parse(text) for m, (_, text) in sources.items()}
    defined = {m: defined_attributes(t) for m, t in trees.items()}
    anywhere = set().union(*defined.values())
    classes = {m: _classes(t) for m, t in trees.items()}
    found = set()

    def inherited(m: str, cls: ast.ClassDef, seen: set[tuple[str, str]]) -> set[str]:
        """The privates ``cls``'s bases define in modules other than ``m``."""
        names = _imported_names(m, paths[m], trees[m])
        out: set[str] = set()
        for b in cls.bases:
            ref = names.get(b.id) if isinstance(b, ast.Name) else None
            if isinstance(b, ast.Attribute) and isinstance(b.value, ast.Name) and b.value.id in names:
                mod, attr = names[b.value.id]
                ref = (f"{mod}.{attr}", b.attr)
            if isinstance(b, ast.Name) and ref is None and b.id in classes[m]:
                ref = (m, b.id)
            if ref is None or ref[0] not in classes or ref[1] not in classes[ref[0]] or ref in seen:
                continue
            base_mod, base = ref[0], classes[ref[0]][ref[1]]
            if base_mod != m:
                out |= defined_attributes(base)
            out |= inherited(base_mod, base, seen | {ref})
        return out

    for m, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                # a name no kit module defines is another library's (os._exit): not ours to judge
                if node.attr in anywhere and node.attr not in defined[m]:
                    found.add((m, node.attr))
        for cls in classes[m].values():
            theirs = inherited(m, cls, set())
            own = {f.name for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
            for node in ast.walk(cls):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id in ("self", "cls") and node.attr in theirs - own):
                    found.add((m, node.attr))
    return found


def test_the_reach_reader_sees_a_reach():
    here = ast.parse("class A:\n    def _own(self):\n        self._x = 1\n        other._y()\n")
    assert defined_attributes(here) == {"_own", "_x"}
    base = "class Base:\n    def __init__(self):\n        self._held = 1\n    def _hook(self):\n        pass\n"
    sub = ("from .a import Base\nclass Sub(Base):\n    def _hook(self):\n        pass\n"
           "    def go(self, other):\n        self._hook()\n        self._held = 2\n")
    user = "def use(x):\n    return x._held\n"
    found = private_reaches({"pkg.a": (Path("a.py"), base), "pkg.b": (Path("b.py"), sub),
                             "pkg.c": (Path("c.py"), user)})
    # a subclass setting its base's attribute, and another module reading it; the overridden hook is its own
    assert found == {("pkg.b", "_held"), ("pkg.c", "_held")}


def test_no_private_attribute_is_reached_across_modules():
    found = private_reaches()
    assert found - ALLOWED_REACHES == set()
    assert ALLOWED_REACHES - found == set(), "an allowance is no longer needed: remove it"
