"""Run an archive driver as a process: ``python -m echomq_teach.floor QUEUE --floor PATH``.

The node comes from ``ECHOMQ_URL``; a remote floor from ``ECHOMQ_FLOOR_S3_URL``
(``http://host:port/bucket[/prefix]``) with ``ECHOMQ_FLOOR_S3_ACCESS_KEY`` and
``ECHOMQ_FLOOR_S3_SECRET_KEY``. Secrets stay in the environment, out of ``ps``.
Each fold prints one line. ``--halt-at STEP[:FOLD]`` stops the driver at a
step of a fold (``read``, ``write``, ``commit``, ``upload``, ``trim``) and waits
there to be killed: the crash points the tests and notebook 08 kill it at.
``--stop-at STEP[:FOLD]`` sends the driver SIGSTOP there instead, so that it
can wake (SIGCONT) after its lease ran out, as a paused process does.
SIGTERM finishes the fold under way and gives the lease back.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from ..connector import address_from_url, connect, make_client
from ..errors import EchoMQError
from ..keyspace import BRAND_WIRE6, VERSION_KEY
from .driver import DEFAULT_LEASE_MS, DEFAULT_SLICE, STEPS, Driver, Fold
from .embedded import open_floor
from .remote import Remote

HALT_LIMIT_S = 300  # a halted driver that nobody kills gives up after this long


def remote_from_env() -> Remote | None:
    url = os.environ.get("ECHOMQ_FLOOR_S3_URL")
    if not url:
        return None
    return Remote.from_url(
        url, os.environ.get("ECHOMQ_FLOOR_S3_ACCESS_KEY", ""), os.environ.get("ECHOMQ_FLOOR_S3_SECRET_KEY", "")
    )


def _halt_point(text: str) -> tuple[str, int]:
    step, _, n = text.partition(":")
    if step not in STEPS or (n and not n.isdigit()):
        raise argparse.ArgumentTypeError(f"a crash point is STEP[:FOLD] with STEP one of {', '.join(STEPS)}")
    return step, int(n or 1)


def _say(line: str) -> None:
    print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m echomq_teach.floor", description=__doc__.splitlines()[0])
    ap.add_argument("queue")
    ap.add_argument("--floor", required=True, help="the SQLite file of the embedded floor")
    ap.add_argument("--slice", type=int, default=DEFAULT_SLICE, help="entries per fold")
    ap.add_argument("--lease-ms", type=int, default=DEFAULT_LEASE_MS)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds to run at most")
    ap.add_argument("--follow", action="store_true", help="keep folding new settles until the timeout")
    ap.add_argument("--wait-s", type=float, default=0.0, help="wait this long for a lease another driver left")
    ap.add_argument("--halt-at", type=_halt_point, help="STEP[:FOLD]: stop there and wait to be killed")
    ap.add_argument("--stop-at", type=_halt_point, help="STEP[:FOLD]: SIGSTOP this process there")
    args = ap.parse_args(argv)

    url = os.environ.get("ECHOMQ_URL")
    if not url:
        print("floor: set ECHOMQ_URL to the node, e.g. redis://:password@127.0.0.1:6390/0", file=sys.stderr)
        return 2
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))

    def on_step(step: str, fold: int) -> None:
        if args.halt_at == (step, fold):
            _say(f"halted at {step} of fold {fold}")
            deadline = time.monotonic() + HALT_LIMIT_S
            while time.monotonic() < deadline and not stopping:
                time.sleep(0.05)
            sys.exit(3)  # SIGTERM (or nobody) ended the halt: the fold stays as the crash left it
        if args.stop_at == (step, fold):
            _say(f"stopped at {step} of fold {fold}")
            os.kill(os.getpid(), signal.SIGSTOP)
            _say(f"woke at {step} of fold {fold}")

    def on_fold(f: Fold) -> None:
        if f.read or f.trimmed or f.uploaded:
            _say(
                f"fold: read {f.read} ({f.first}..{f.last}) · uploaded {len(f.uploaded)}"
                f" ({len(f.found_stored)} found already stored) · trimmed {f.trimmed}"
                f" · stream {f.stream_len} · floor {f.floor_rows}"
            )

    try:
        address = address_from_url(url)
        probe = make_client(address)
        wire = 6 if probe.get(VERSION_KEY) == BRAND_WIRE6 else 4  # a native node refuses a wire 4 connector
        probe.close()
        conn = connect(address, wire=wire)
        floor = open_floor(args.floor, remote_from_env())
        driver = Driver(conn, args.queue, floor, slice_size=args.slice, lease_ms=args.lease_ms, on_step=on_step)
        try:
            _say(f"driver on {driver.stream}: token {driver.start(wait_s=args.wait_s)}")
            r = driver.run(
                args.timeout, until_empty=not args.follow, on_fold=on_fold, should_stop=lambda: bool(stopping)
            )
            _say(
                f"done: {r.folds} folds · {r.folded} folded · {r.trimmed} trimmed · {r.uploaded} uploaded"
                f" ({r.stopped_by})"
            )
        finally:
            driver.stop()
            floor.close()
    except EchoMQError as exc:
        print(f"floor: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
