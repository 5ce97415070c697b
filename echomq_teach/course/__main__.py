"""``python -m echomq_teach.course init DIR``: copy the course into a folder of your own (``course.folder``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import BadInput
from .folder import init


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m echomq_teach.course", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_init = sub.add_parser("init", help="copy the notebooks, solutions and docs into DIR (new or empty)")
    p_init.add_argument("dir", help="the folder to make (or an empty one)")
    p_init.add_argument("--existing-ok", action="store_true",
                        help="a folder that already holds files is left as it is, with exit status 0 "
                             "(a hub's start hook: the student's work stays)")
    args = parser.parse_args(argv)
    if args.existing_ok and Path(args.dir).is_dir() and any(Path(args.dir).iterdir()):
        print(f"The Queue: {args.dir} is already there; left as it is")
        return 0
    try:
        written = init(args.dir)
    except BadInput as exc:
        print(f"course init: {exc}", file=sys.stderr)
        return 2
    notebooks = sum(1 for p in written if p.suffix == ".ipynb")
    print(f"The Queue: {notebooks} notebooks, their solutions and docs in {args.dir}")
    print(f"Open it: jupyter lab {args.dir}   (start with 00-start-here.ipynb)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
