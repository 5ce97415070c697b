"""How long the whole course takes to run: every notebook, top to bottom, on a fresh kernel.

A benchmark, not a test: it prints seconds per notebook and the total, and
the share each notebook takes. Run it after changing a notebook to see what
a learner (and CI) waits for.

    .venv/bin/python bench/bench_course.py            # every notebook, once
    .venv/bin/python bench/bench_course.py --rounds 3 # best of three per notebook
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0*.ipynb"))


def run_once(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    client.execute()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=1, help="runs per notebook; the best one counts")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    results = []
    for path in NOTEBOOKS:
        best = min(run_once(path) for _ in range(args.rounds))
        cells = sum(c.cell_type == "code" for c in nbformat.read(path, as_version=4).cells)
        results.append((path.stem, cells, best))
        print(f"{path.stem:<28} {cells:3d} code cells  {best:6.2f} s", flush=True)
    total = sum(r[2] for r in results)
    print(f"{'the whole course':<28} {sum(r[1] for r in results):3d} code cells  {total:6.2f} s")
    for name, _, secs in results:
        print(f"  {name:<26} {secs / total:6.1%} of the total")


if __name__ == "__main__":
    main()
