"""The Pump: a caller of promote on a beat, for the queues it is given, and nothing else (EchoMQ.Pump).

The course page names three clients that call promote: a standalone Consumer's
loop, a pool's Metronome, and the Pump. The first two also claim or recover;
the Pump only moves due jobs from each queue's schedule set back to pending. It
suits a deployment whose workers do not sweep (a pool's consumers, or workers
in another language) and where promotion should go on when no pool runs.

``Pump(conn, queues)`` runs on a thread (``start``/``stop``); ``python -m
echomq_teach.pump QUEUE…`` runs it as a process of its own, on the node named by
``$ECHOMQ_URL`` (as the floor's driver is: a URL on the command line carries the
node's password, and ``ps`` shows every argument to every user of the machine),
which stops cleanly on SIGTERM or SIGINT and prints what it promoted. Recovery of
lapsed leases is not its job: a reap or a stall sweep still needs a caller.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from . import jobs
from .connector import Connector, address_from_url, connect
from .consumer.ticker import Ticker
from .errors import BadInput
from .keyspace import check_queue


class Pump(Ticker):
    """Promotes the due jobs of ``queues`` every ``interval_ms`` (EchoMQ.Pump); promote only.

    A ``consumer.Ticker``: a lost link ends its loop (``lost_link="raise"``) or is
    counted in ``lost_links`` (``"retry"``); the error a loop ends on is in ``errors``.
    """

    who = "pump"

    def __init__(
        self,
        conn: Connector,
        queues: Sequence[str],
        interval_ms: int = 100,
        limit: int = jobs.PROMOTE_LIMIT,
        lost_link: str = "raise",
    ) -> None:
        if isinstance(queues, str) or not isinstance(queues, Sequence) or not queues:
            raise BadInput(f"queues must be a non-empty list of queue names, got {queues!r}")
        for q in queues:
            check_queue(q)
        if len(set(queues)) != len(queues):
            raise BadInput(f"a queue is named twice in {list(queues)!r}")
        super().__init__(interval_ms, lost_link)
        jobs.positive_int("limit", limit)
        self.conn, self.queues, self.limit = conn, list(queues), limit
        self.ticks = 0
        #: ids promoted so far, per queue
        self.promoted: dict[str, int] = {q: 0 for q in self.queues}

    def tick(self) -> dict[str, list[str]]:
        """One beat: promote each queue once (at most ``limit`` each). Answers the ids, per queue.

        A queue with more due jobs than ``limit`` keeps the rest for the next beat,
        so one beat never holds the node for long.
        """
        moved: dict[str, list[str]] = {}
        with self.conn.tagged("pump tick"):
            for q in self.queues:
                moved[q] = jobs.promote(self.conn, q, self.limit)
                self.promoted[q] += len(moved[q])
        self.ticks += 1
        return moved

    def start(self) -> None:
        if self.started:
            raise RuntimeError("this pump was started already; make a new Pump to start again")
        self.start_thread("pump")


def main(argv: list[str] | None = None, out: Any = None) -> int:
    """``python -m echomq_teach.pump``: a Pump as a process of its own, until SIGTERM or SIGINT."""
    out = out or sys.stdout
    p = argparse.ArgumentParser(prog="python -m echomq_teach.pump", description=__doc__.splitlines()[0])
    p.add_argument("queues", nargs="+", metavar="QUEUE", help="the queues whose due jobs it promotes")
    p.add_argument("--interval-ms", type=int, default=100, help="the beat (default 100 ms)")
    p.add_argument("--wire", type=int, choices=(4, 6), default=4, help="4: the scripts; 6: the native commands")
    p.add_argument("--url", help=argparse.SUPPRESS)  # refused below, with where the URL goes instead
    p.epilog = "The node: $ECHOMQ_URL, as redis://[user:password@]host:port/0 or unix://[user:password@]/path."
    args = p.parse_args(argv)
    if args.url is not None:
        print("pump: the node's URL goes in $ECHOMQ_URL, not on the command line (ps shows every argument to "
              "every user of the machine, password and all)", file=sys.stderr)
        return 2
    url = os.environ.get("ECHOMQ_URL")
    if not url:
        print("pump: set ECHOMQ_URL to the node, e.g. redis://:password@127.0.0.1:6390/0", file=sys.stderr)
        return 2
    try:
        conn = connect(address_from_url(url), wire=args.wire)
        pump = Pump(conn, args.queues, interval_ms=args.interval_ms, lost_link="retry")
    except (BadInput, ValueError) as exc:  # ValueError: a URL redis-py cannot read
        print(f"pump: {exc}", file=sys.stderr)
        return 2

    # SIGTERM and SIGINT are waited for, not handled: a handler that stopped the loop would take the loop's
    # own lock, and could deadlock if the signal came while the loop held it. Blocked before the tick thread
    # starts, which inherits the mask.
    stops = {signal.SIGTERM, signal.SIGINT}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        pump.start()
        print(f"pump: promoting {', '.join(pump.queues)} every {pump.interval_ms} ms", file=out, flush=True)
        while pump.running and signal.sigtimedwait(stops, 0.1) is None:
            pass  # until a signal, or the loop ended on its own error
        pump.stop()  # the loop ends after the beat it is in
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    conn.close()
    counts = ", ".join(f"{q} {n}" for q, n in pump.promoted.items())
    print(f"pump: stopped after {pump.ticks} beats; promoted {counts}", file=out, flush=True)
    if pump.errors:
        print(pump.errors[0], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
