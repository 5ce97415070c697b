"""The judged builds' references under load: each run N times while two busy processes hold the cores.

Your own queue's stages (02.2, 03.3, 03.6, 03.7, 05.2, 10.4) are checked on a folder grown by their references,
the others on their reference solution's function.

A learner's laptop is never quiet, so a judge must pass a right answer every time on a loaded machine
(issue 31): this bench starts two processes that spin on the CPU (each a ``nodes.process.Child``, stopped
by its PID at the end), then checks each build's reference solution N times (5 by default) with
``exercises.check`` as a learner would, and prints, per build, how many tries passed and the seconds each
judged check took (its dry run or probes, and all its seeds). A failed try prints its findings. CI runs
each reference once (tests/course/test_my_queue.py for the stages, tests/course/test_late_exercises.py for the
others); this is the five-times run, by hand.

    .venv/bin/python bench/bench_judges.py                   # every build, 5 tries each, 2 busy processes
    .venv/bin/python bench/bench_judges.py --builds 03.6 05.2 --tries 3 --busy 0
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import statistics
import sys
import tempfile
import time
from pathlib import Path

from machine import print_header

from echomq_teach import start_node
from echomq_teach.course import exercises, my_queue
from echomq_teach.course.my_queue.stages import BY_KEY, upto
from echomq_teach.nodes.process import Child

ROOT = Path(__file__).resolve().parent.parent
BUILDS = (*BY_KEY, "07.2", "08.2", "09.2")
SPIN = "while True:\n    pass\n"


def reference(key: str):
    """The reference solution's function of exercise ``key`` (``notebooks/solutions/NN_M_*.py``), or for a stage of
    your own queue a folder grown by the references up to it."""
    if key in BY_KEY:
        mine = my_queue.folder(Path(tempfile.mkdtemp(prefix="bench-my-queue-")) / "my_queue")
        for s in upto(key):
            mine.load_reference(s.key)
        return mine
    path = next((ROOT / "notebooks" / "solutions").glob(f"{key.replace('.', '_')}_*.py"))
    spec = importlib.util.spec_from_file_location(f"solution_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    (fn,) = [f for _, f in inspect.getmembers(module, inspect.isfunction) if f.__module__ == module.__name__]
    return fn


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builds", nargs="*", default=list(BUILDS), help="exercise keys (default: every judged build)")
    ap.add_argument("--tries", type=int, default=5)
    ap.add_argument("--busy", type=int, default=2, help="processes spinning on the CPU meanwhile")
    args = ap.parse_args()
    print_header(f"judged builds' references, {args.tries} tries each, {args.busy} busy processes", args.tries)
    busy = [Child([sys.executable, "-c", SPIN], log=None, what=f"busy process {i}") for i in range(args.busy)]
    node = start_node()
    conn = node.connector()
    failed = 0
    try:
        print(f"{'build':<6} {'passed':>7} {'median s':>9} {'max s':>7}  seconds of each try")
        for key in args.builds:
            fn, took, passed = reference(key), [], 0
            for _ in range(args.tries):
                t0 = time.perf_counter()
                verdict = exercises.check(key, fn, conn)
                took.append(time.perf_counter() - t0)
                passed += verdict.ok
                if not verdict.ok:
                    print(verdict)
            failed += args.tries - passed
            print(f"{key:<6} {passed:>3} of {args.tries} {statistics.median(took):>9.1f} {max(took):>7.1f}  "
                  + ", ".join(f"{s:.1f}" for s in took), flush=True)
    finally:
        conn.close()
        node.stop()
        for b in busy:
            b.kill()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
