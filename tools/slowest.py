"""The slowest tests of a run, from the junit reports of its pytest sessions (tools/test.sh prints this).

    python tools/slowest.py REPORT.xml [REPORT.xml ...] [--top 30]

Each test's time is its set-up, call and tear-down together (a module's fixtures count with the test
that set them up). Prints, per report, how many tests ran and their summed time, then the slowest
tests of all the reports together, each with its report's name.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def cases(report: Path) -> list[tuple[float, str]]:
    """(seconds, node id) for every test case a junit report holds."""
    out = []
    for case in ET.parse(report).getroot().iter("testcase"):
        where = case.get("classname", "")
        out.append((float(case.get("time") or 0), f"{where}::{case.get('name')}" if where else case.get("name", "?")))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+", type=Path)
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args(argv)
    every = []
    for report in args.reports:
        if not report.is_file():
            continue
        found = cases(report)
        every += [(s, report.stem, name) for s, name in found]
        print(f"{report.stem}: {len(found)} tests, {sum(s for s, _ in found):.0f} s of test time")
    print(f"the {min(args.top, len(every))} slowest tests:")
    for seconds, session, name in sorted(every, reverse=True)[: args.top]:
        print(f"{seconds:8.1f} s  {session:<9} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
