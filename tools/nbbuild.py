"""Builds the course notebooks from their sources and stores their outputs.

Each notebook is written as ``notebooks/src/NN-name.py`` in jupytext's percent
format (``# %% [markdown]`` and ``# %%`` cells, cell metadata such as
``# %% tags=["nbval-ignore-output"]``), which diffs and reviews like code.
jupytext reads the source; this script gives the notebook clean metadata (the
``python3`` kernelspec, nothing else), stable cell ids, executes it on a fresh
kernel so the outputs are stored and the course reads without running, and
fails loudly if any cell raises.

    python tools/nbbuild.py            # every notebook
    python tools/nbbuild.py 02 05      # the ones whose names start so
    python tools/nbbuild.py --check    # only confirm each .ipynb matches its source

``--check`` compares, cell by cell, the type, the source, the metadata and the
id, and the notebook's metadata; every code cell must have run (stored outputs).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "notebooks" / "src"
OUT = ROOT / "notebooks"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
METADATA = {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}}
#: notebook metadata a build adds beside METADATA: the widget state, so stored widgets render without a kernel,
#: and how long the build's run took (``echomq.run_seconds``: tools/nbtest.sh starts the longest notebooks first)
BUILT_KEYS = {"widgets", "echomq"}


def read_source(src: Path) -> nbformat.NotebookNode:
    """The percent-format source as a notebook: jupytext's cells, our metadata and stable ids."""
    nb = jupytext.read(src, fmt="py:percent")
    nb.metadata = nbformat.from_dict(METADATA)
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{src.stem[:2]}-{i:03d}"  # stable ids keep diffs small
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def build(src: Path, execute: bool = True) -> Path:
    nb = read_source(src)
    if execute:
        # no timing metadata: a cell's metadata is its source's, and --check compares it
        client = NotebookClient(
            nb, timeout=300, kernel_name="python3", record_timing=False, resources={"metadata": {"path": str(OUT)}}
        )
        t0 = time.monotonic()
        client.execute()
        ran = round(time.monotonic() - t0, 1)
        # the widget state stays in the metadata, so the stored widgets render without a kernel
        # (nbviewer, JupyterLab before a run); nbval does not compare it
        nb.metadata.update(METADATA)
        for key in set(nb.metadata) - set(METADATA) - BUILT_KEYS:
            del nb.metadata[key]
        nb.metadata["echomq"] = {"run_seconds": ran}
    out = OUT / (src.stem + ".ipynb")
    nbformat.write(nb, out)
    return out


def differences(src: Path, stored: nbformat.NotebookNode) -> list[str]:
    """What differs between a source and its stored notebook: types, sources, metadata, ids; unrun cells."""
    want = read_source(src)
    out = []
    meta = {k: v for k, v in stored.metadata.items() if k not in BUILT_KEYS}
    if meta != want.metadata:
        out.append(f"notebook metadata {sorted(meta)} differs from {sorted(want.metadata)}")
    if len(stored.cells) != len(want.cells):
        out.append(f"{len(stored.cells)} cells stored, {len(want.cells)} in the source")
    for i, (have, cell) in enumerate(zip(stored.cells, want.cells)):
        for what in ("cell_type", "source", "metadata", "id"):
            if have.get(what) != cell.get(what):
                out.append(f"cell {i}: its {what} differs")
        if have.cell_type == "code" and have.get("execution_count") is None:
            out.append(f"cell {i}: never ran, so it stores no output")
    return out


def main() -> int:
    # a build's kernels keep any committed prediction in a folder of their own, never the learner's, and
    # start from an empty one: a cell that answers a prediction stores its "hidden until you predict" line
    os.environ["ECHOMQ_PREDICTIONS"] = tempfile.mkdtemp(prefix="echomq-predictions-")
    # nor the learner's own queue (course/my_queue): a fresh folder, so a stage stores the starter's verdict
    os.environ["ECHOMQ_MY_QUEUE"] = tempfile.mkdtemp(prefix="echomq-my-queue-")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prefixes", nargs="*", help="build only notebooks whose names start with these")
    ap.add_argument("--check", action="store_true", help="confirm each notebook's cells match its source")
    args = ap.parse_args()
    srcs = sorted(p for p in SRC.glob("*.py") if not args.prefixes or p.stem.startswith(tuple(args.prefixes)))
    if not srcs:
        print("no notebook sources matched", file=sys.stderr)
        return 1
    bad = 0
    for src in srcs:
        if args.check:
            path = OUT / (src.stem + ".ipynb")
            found = differences(src, nbformat.read(path, as_version=4)) if path.exists() else ["not built"]
            if found:
                print(f"{path.name} differs from its source (run tools/nbbuild.py {src.stem[:2]}):")
                print("\n".join(f"  {f}" for f in found[:8]))
                bad += 1
            continue
        t0 = time.monotonic()
        out = build(src)
        print(f"{out.relative_to(ROOT)}  {time.monotonic() - t0:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
