"""Where the native module can be neither found prebuilt nor compiled, a kernel says so in one line.

A real kernel (nbclient) runs four cells with the module's sources copied to a folder of their own
(so no prebuilt module fits), an empty cache and ``CC`` naming no compiler: the cell that starts a
native node ends in one ``NoWire6`` line that says why, a later cell that uses a name that cell
never made says so in one line too, a scripted node's cell runs, and any other error keeps its
traceback.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]


def test_a_machine_without_the_module_gets_one_line_and_the_scripted_cells_run(tmp_path, monkeypatch):
    src = tmp_path / "native"
    shutil.copytree(ROOT / "native", src, ignore=shutil.ignore_patterns("*.so", "build"))
    cells = [
        "from echomq_teach import start_node\nscripted = start_node()\nnative = start_node(native=True)\n"
        "n_conn = native.connector()",
        "print(n_conn.wire)",
        "s_conn = scripted.connector()\nprint('wire', s_conn.wire)\nscripted.stop()",
        "print(not_a_name_anyone_made)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    # the kernel inherits them
    monkeypatch.setenv("ECHOMQ_NATIVE_DIR", str(src))
    monkeypatch.setenv("ECHOMQ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CC", "/nonexistent/cc")
    NotebookClient(nb, timeout=120, allow_errors=True, kernel_name="python3").execute()
    out = [c.outputs for c in nb.cells]
    first = [o for o in out[0] if o.output_type == "error"]
    assert len(first) == 1 and len(first[0].traceback) == 1, first
    line = first[0].traceback[0]
    assert "NoWire6" in line and "wire 6 is not available" in line and "/nonexistent/cc" in line
    second = [o for o in out[1] if o.output_type == "error"]
    assert len(second) == 1 and len(second[0].traceback) == 1 and "`n_conn` was never made" in second[0].traceback[0]
    assert not [o for o in out[2] if o.output_type == "error"]
    assert "wire 4" in "".join(o.get("text", "") for o in out[2])
    fourth = [o for o in out[3] if o.output_type == "error"]
    assert len(fourth) == 1 and fourth[0].ename == "NameError" and len(fourth[0].traceback) > 1
    assert not list((tmp_path / "cache").glob("*.so")), "nothing was built"
