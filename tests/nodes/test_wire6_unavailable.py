"""Where the native module can be neither found prebuilt nor compiled, Run All goes on past the wire-6 cells.

A real kernel (nbclient, which stops at the first cell whose reply is an error, as Run All does) runs
notebook 04 top to bottom with the module's sources copied to a folder of their own (so no prebuilt
module fits), an empty cache and ``CC`` naming no compiler. Each cell that needs wire 6 — one that
starts a native node, or reads a name only such cells make — shows one ``NoWire6`` line that says
why and answers "ok"; every other cell runs without an error; nothing is built. A last cell with an
error of its own keeps its traceback and still stops the run. A check whose judge needs wire 6
raises the same error instead of a verdict, and counts no try.
"""

from __future__ import annotations

import ast
import importlib.util
import shutil
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from echomq_teach.course import exercises, registry
from echomq_teach.ending import cell_names
from echomq_teach.nodes.trafikey import NativeBuildError

ROOT = Path(__file__).resolve().parents[2]
A_REAL_ERROR = "print(not_a_name_anyone_made)"


def _loads(source: str) -> set[str]:
    """The names a cell reads at its top level (not inside its own functions), less those it binds itself."""
    loads: set[str] = set()

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue  # a function's names are its parameters and its own, read when it is called
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                loads.add(child.id)
            walk(child)

    walk(ast.parse(source))
    return loads - cell_names(source)


def wire6_cells(sources: list[str]) -> list[bool]:
    """Which cells need wire 6, read from the code: a native start, or a name only such cells bind."""
    made_by_wire6: set[str] = set()
    made: set[str] = set()
    needs = []
    for source in sources:
        tree = ast.parse(source)
        starts = any(isinstance(k, ast.keyword) and k.arg == "native" and getattr(k.value, "value", None) is True
                     for k in ast.walk(tree))
        wire6 = starts or bool(_loads(source) & (made_by_wire6 - made))
        (made_by_wire6 if wire6 else made).update(cell_names(source))
        needs.append(wire6)
    return needs


def _no_module_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No module fits these sources, none is cached, no compiler runs (a kernel started now inherits it)."""
    src = tmp_path / "native"
    shutil.copytree(ROOT / "native", src, ignore=shutil.ignore_patterns("*.so", "build"))
    monkeypatch.setenv("ECHOMQ_NATIVE_DIR", str(src))
    monkeypatch.setenv("ECHOMQ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setenv("ECHOMQ_PREDICTIONS", str(tmp_path / "predictions"))
    for name in ("ECHOMQ_URL", "ECHOMQ_NATIVE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_run_all_of_04_goes_on_past_each_wire6_cell_on_a_machine_without_the_module(tmp_path, monkeypatch):
    _no_module_here(tmp_path, monkeypatch)
    nb = jupytext.read(ROOT / "notebooks" / "src" / "04-two-executors.py", fmt="py:percent")
    nb.cells = [c for c in nb.cells if c.cell_type == "code"] + [nbformat.v4.new_code_cell(A_REAL_ERROR)]
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "notebooks")}})
    with pytest.raises(CellExecutionError) as stopped:
        client.execute()
    # the run went on to the very last cell, whose own error stopped it with its whole traceback
    assert "not_a_name_anyone_made" in str(stopped.value)
    last = [o for o in nb.cells[-1].outputs if o.output_type == "error"]
    assert len(last) == 1 and last[0].ename == "NameError" and len(last[0].traceback) > 1

    cells = nb.cells[:-1]
    needs = wire6_cells([c.source for c in cells])
    assert sum(needs) >= 20 and needs.count(False) >= 2, needs  # the scripted start and the brand-only node
    for cell, wire6 in zip(cells, needs, strict=True):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if not wire6:
            assert not errors, (cell.source, errors)
            continue
        assert len(errors) == 1 and len(errors[0].traceback) == 1, (cell.source, errors)
        line = errors[0].traceback[0]
        assert "NoWire6" in line and "/nonexistent/cc" in line, (cell.source, line)
        assert "wire 6 is not available" in line or "was never made" in line, line
    first = cells[0].outputs
    assert "scripted: 4 echomq:4.0.0" in "".join(o.get("text", "") for o in first)  # the split: scripted first
    assert not list((tmp_path / "cache").glob("*.so")), "nothing was built"


def test_a_judge_that_needs_wire6_raises_instead_of_a_verdict(tmp_path, monkeypatch):
    _no_module_here(tmp_path, monkeypatch)
    path = ROOT / "notebooks" / "solutions" / "09_2_keep_what_failover_loses.py"
    spec = importlib.util.spec_from_file_location("solution_09_2", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    was = "09.2" in registry.TRIED
    registry.TRIED.add("09.2")  # an earlier try of this kernel's, which the raised check must leave counted
    try:
        tried = set(registry.TRIED)
        with pytest.raises(NativeBuildError, match="/nonexistent/cc"):
            exercises.check("09.2", module.keep_what_failover_loses)
        assert registry.TRIED == tried  # the machine's lack, not a try that failed
        registry.TRIED.discard("09.2")
        with pytest.raises(NativeBuildError, match="/nonexistent/cc"):
            exercises.check("09.2", module.keep_what_failover_loses)
        assert "09.2" not in registry.TRIED  # nor a first try
    finally:
        if was:
            registry.TRIED.add("09.2")
