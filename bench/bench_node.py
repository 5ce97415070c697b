"""How long ``start_node()`` takes: from the call to a node that answers, branded, scripted and native.

Each start is timed from ``LocalNode(...)`` to its return (config written,
server launched by the kit's launcher thread, a PING answered, the brand set)
and the node is stopped outside the clock. It runs twice: in a bare
interpreter, and in one that has imported what a course kernel imports
(matplotlib's pyplot, ipywidgets, the kit's widgets), where forking the
server from a larger process costs more. The goal is a median of 50 ms. A
benchmark, not a test: it prints figures.

    .venv/bin/python bench/bench_node.py [N]      # N starts of each kind (default 21)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from machine import print_header

GOAL_MS = 50.0


def starts(n: int, native: bool) -> list[float]:
    from echomq_teach.nodes.local import LocalNode

    LocalNode(native=native).stop()  # the module built and cached, the binary in the page cache
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        node = LocalNode(native=native)
        out.append((time.perf_counter() - t0) * 1000)
        node.stop()
    return out


def child(n: int, heavy: bool) -> None:
    """One row per kind, printed by a fresh interpreter (``heavy``: with a kernel's imports first)."""
    if heavy:
        import echomq_widgets  # noqa: F401
        import ipywidgets  # noqa: F401
        import matplotlib.pyplot  # noqa: F401
    for native in (False, True):
        ms = sorted(starts(n, native))
        print(f"{statistics.median(ms):.1f} {ms[int(0.9 * (len(ms) - 1))]:.1f} {ms[0]:.1f} {ms[-1]:.1f}", flush=True)


def main(argv: list[str]) -> int:
    if len(argv) > 2 and argv[1] == "--child":
        child(int(argv[2]), argv[3] == "heavy")
        return 0
    n = int(argv[1]) if len(argv) > 1 else 21
    if n <= 0:
        print("N must be a positive number of starts", file=sys.stderr)
        return 2
    print_header("The Queue · node start bench: start_node() until the node answers", f"{n} starts per row",
                 packages=("redis",))
    print(f"{'process':<38}{'node':<10}{'median':>8}{'p90':>8}{'min':>8}{'max':>8}   goal {GOAL_MS:.0f} ms median")
    for heavy in (False, True):
        out = subprocess.run([sys.executable, __file__, "--child", str(n), "heavy" if heavy else "bare"],
                             capture_output=True, text=True, check=True).stdout.split("\n")
        where = "as a course kernel (pyplot, widgets)" if heavy else "a bare interpreter"
        for kind, line in zip(("scripted", "native"), out):
            med, p90, lo, hi = (float(x) for x in line.split())
            figures = "".join(f"{v:>6.1f}ms" for v in (med, p90, lo, hi))
            print(f"{where:<38}{kind:<10}{figures}   {med / GOAL_MS:.2f} of the goal")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
