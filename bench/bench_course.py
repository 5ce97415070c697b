"""How long the whole course takes under ``pytest --nbval``: the notebook session as the test suite runs it.

``tools/nbtest.sh`` runs every notebook, stored outputs compared, on parallel
kernels (pytest-xdist, whole notebooks per worker, the longest first); the
test suite (tools/test.sh) and CI run exactly that. This bench times that
command's wall clock, then, for comparison, the same session one notebook
after another, and with ``--per-notebook`` each notebook alone on a fresh
kernel (nbclient) with its share of the total. The goal is 30 s for the
whole course. A benchmark, not a test: it prints figures, and says when a
session failed.

    .venv/bin/python bench/bench_course.py                 # parallel session, then the serial one
    .venv/bin/python bench/bench_course.py --rounds 3      # the median of three of each
    .venv/bin/python bench/bench_course.py --per-notebook  # and each notebook on its own
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from machine import print_header
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
GOAL_S = 30.0


def session(workers: str) -> tuple[float, float, str]:
    """``tools/nbtest.sh`` with ``workers`` kernels at a time: wall seconds, CPU seconds, pytest's closing line.

    The CPU seconds (user + system of the session and every process it waited for: pytest, its
    workers, the kernels, their nodes) move less with other work on the machine than the wall clock.
    """
    env = dict(os.environ, ECHOMQ_NB_WORKERS=workers)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(["bash", str(ROOT / "tools" / "nbtest.sh"), "-q"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    closing = lines[-1].strip("= ") if lines else "(no output)"
    if proc.returncode != 0:
        closing += f" — exit {proc.returncode}"
    return seconds, cpu, closing


def run_once(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    client.execute()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=1, help="runs of each session; the median counts")
    cores = str(os.cpu_count() or 1)
    ap.add_argument("--workers", default=os.environ.get("ECHOMQ_NB_WORKERS", cores), help="kernels at a time")
    ap.add_argument("--per-notebook", action="store_true", help="also each notebook alone on a fresh kernel")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    cells = sum(sum(c.cell_type == "code" for c in nbformat.read(p, as_version=4).cells) for p in NOTEBOOKS)
    print_header("The Queue · course bench: every notebook under pytest --nbval", f"{len(NOTEBOOKS)} notebooks, "
                 f"{cells} code cells, {args.rounds} round(s)", packages=("redis", "hiredis", "nbval", "pytest-xdist"))
    modes = ((f"tools/nbtest.sh, {args.workers} kernels at a time", args.workers), ("one notebook after another", "1"))
    runs: dict[str, list[tuple[float, float, str]]] = {label: [] for label, _ in modes}
    for _ in range(args.rounds):  # interleaved: a shared machine's drifting load falls on both alike
        for label, workers in modes:
            runs[label].append(session(workers))
    rows = []
    for label, _ in modes:
        secs = statistics.median(r[0] for r in runs[label])
        cpu = statistics.median(r[1] for r in runs[label])
        rows.append((label, secs))
        each = "; ".join(f"{w:.1f} s: {c}" for w, _, c in runs[label])
        print(f"{label:<44} {secs:6.1f} s wall  {cpu:6.1f} s CPU   ({each})", flush=True)
    print(f"goal: the whole course in {GOAL_S:.0f} s · parallel {rows[0][1]:.1f} s "
          f"({rows[0][1] / GOAL_S:.2f} of the goal) · {rows[1][1] / rows[0][1]:.2f}× faster than serial")
    print(f"load average after: {os.getloadavg()[0]:.2f} (other work on a shared machine moves every figure)")
    if not args.per_notebook:
        return 0
    print()
    results = []
    for path in NOTEBOOKS:
        best = statistics.median(run_once(path) for _ in range(args.rounds))
        code = sum(c.cell_type == "code" for c in nbformat.read(path, as_version=4).cells)
        results.append((path.stem, best))
        print(f"{path.stem:<28} {code:3d} code cells  {best:6.2f} s", flush=True)
    total = sum(r[1] for r in results)
    print(f"{'every notebook, one by one':<28} {cells:3d} code cells  {total:6.2f} s")
    for name, secs in results:
        print(f"  {name:<26} {secs / total:6.1%} of the total")
    return 0


if __name__ == "__main__":
    sys.exit(main())
