"""Builds the course notebooks from their sources and stores their outputs.

Each notebook is written as ``notebooks/src/NN-name.py`` in the percent format
(``# %% [markdown]`` and ``# %%`` cells), which diffs and reviews like code.
This script turns each source into ``notebooks/NN-name.ipynb`` with clean
metadata (the ``python3`` kernelspec, nothing else), executes it on a fresh
kernel so the outputs are stored and the course reads without running, and
fails loudly if any cell raises.

    python tools/nbbuild.py            # every notebook
    python tools/nbbuild.py 02 05      # the ones whose names start so
    python tools/nbbuild.py --check    # only confirm each .ipynb matches its source
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "notebooks" / "src"
OUT = ROOT / "notebooks"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
_CELL = re.compile(r"^# %%(?P<md> \[markdown\])?(?P<tags>.*)$")


def parse(text: str) -> list[nbformat.NotebookNode]:
    """Percent-format source → notebook cells. ``# %% tags=a,b`` sets cell tags."""
    cells: list[nbformat.NotebookNode] = []
    kind, tags, lines = None, [], []

    def flush() -> None:
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in body.splitlines())
            cell = nbformat.v4.new_markdown_cell(body)
        else:
            cell = nbformat.v4.new_code_cell(body)
        if tags:
            cell.metadata["tags"] = tags
        cell.pop("id", None)
        cells.append(cell)

    for line in text.splitlines():
        m = _CELL.match(line)
        if m:
            flush()
            kind = "markdown" if m.group("md") else "code"
            t = m.group("tags").strip()
            tags = t.removeprefix("tags=").split(",") if t.startswith("tags=") else []
            lines = []
        elif kind is not None:
            lines.append(line)
    flush()
    return cells


def build(src: Path, execute: bool = True) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}}
    nb.cells = parse(src.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{src.stem[:2]}-{i:03d}"  # stable ids keep diffs small
    if execute:
        client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(OUT)}})
        client.execute()
        # the widget state stays in the metadata, so the stored widgets render without a kernel
        # (nbviewer, JupyterLab before a run); nbval does not compare it
        nb.metadata["kernelspec"] = KERNELSPEC
        nb.metadata["language_info"] = {"name": "python"}
    out = OUT / (src.stem + ".ipynb")
    nbformat.write(nb, out)
    return out


def main() -> int:
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
            stored = nbformat.read(OUT / (src.stem + ".ipynb"), as_version=4)
            want = [c.source for c in parse(src.read_text(encoding="utf-8"))]
            if [c.source for c in stored.cells] != want:
                print(f"{src.stem}.ipynb differs from its source: run tools/nbbuild.py {src.stem[:2]}")
                bad += 1
            continue
        t0 = time.monotonic()
        out = build(src)
        print(f"{out.relative_to(ROOT)}  {time.monotonic() - t0:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
