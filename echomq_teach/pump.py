"""The Pump: a caller of promote on a beat, for the queues it is given, and nothing else (EchoMQ.Pump).

The course page names three clients that call promote: a standalone Consumer's
loop, a pool's Metronome, and the Pump. The first two also claim or recover;
the Pump only moves due jobs from each queue's schedule set back to pending. It
suits a deployment whose workers do not sweep (a pool's consumers, or workers
in another language) and where promotion should go on when no pool runs.

``Pump(conn, queues)`` runs on a thread (``start``/``stop``); ``python -m
echomq_teach.pump --url redis://… QUEUE…`` runs it as a process of its own, which
stops cleanly on SIGTERM or SIGINT and prints what it promoted. Recovery of
lapsed leases is not its job: a reap or a stall sweep still needs a caller.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from . import jobs
from .connector import LINK_ERRORS, Connector, address_from_url, connect
from .errors import BadInput
from .keyspace import check_queue

#: what a lost link does to the Pump: "raise" (end the loop, kept in ``errors``) or "retry" (beat again)
LOST_LINK = ("raise", "retry")


class Pump:
    """Promotes the due jobs of ``queues`` every ``interval_ms`` (EchoMQ.Pump); promote only."""

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
        jobs.positive_int("interval_ms", interval_ms)
        jobs.positive_int("limit", limit)
        if lost_link not in LOST_LINK:
            raise BadInput(f"lost_link must be one of {LOST_LINK}, got {lost_link!r}")
        self.conn, self.queues = conn, list(queues)
        self.interval_ms, self.limit, self.lost_link = interval_ms, limit, lost_link
        self.ticks = 0
        self.lost_links = 0
        #: ids promoted so far, per queue
        self.promoted: dict[str, int] = {q: 0 for q in self.queues}
        #: the exception a started loop ended on, as ``"pump: ResponseError: …"`` (at most one)
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

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
        if self._thread is not None:
            raise RuntimeError("this pump was started already; make a new Pump to start again")
        self._thread = threading.Thread(target=self.run, name="pump", daemon=True)
        self._thread.start()

    def run(self) -> None:
        """Beat until ``stop()``: the first beat at once, then one every ``interval_ms``."""
        try:
            while True:
                try:
                    self.tick()
                except LINK_ERRORS:
                    if self.lost_link == "raise":
                        raise
                    self.lost_links += 1  # the node is away: beat again next interval
                if self._stop.wait(self.interval_ms / 1000):
                    break
        except Exception as exc:  # noqa: BLE001 - kept for whoever started the pump, not lost with the thread
            self.errors.append(f"pump: {type(exc).__name__}: {exc}")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def main(argv: list[str] | None = None, out: Any = None) -> int:
    """``python -m echomq_teach.pump``: a Pump as a process of its own, until SIGTERM or SIGINT."""
    out = out or sys.stdout
    p = argparse.ArgumentParser(prog="python -m echomq_teach.pump", description=__doc__.splitlines()[0])
    p.add_argument("queues", nargs="+", metavar="QUEUE", help="the queues whose due jobs it promotes")
    p.add_argument("--url", required=True, help="the node, as redis://[user:password@]host:port or unix://path")
    p.add_argument("--interval-ms", type=int, default=100, help="the beat (default 100 ms)")
    p.add_argument("--wire", type=int, choices=(4, 6), default=4, help="4: the scripts; 6: the native commands")
    args = p.parse_args(argv)
    try:
        conn = connect(address_from_url(args.url), wire=args.wire)
        pump = Pump(conn, args.queues, interval_ms=args.interval_ms, lost_link="retry")
    except BadInput as exc:
        print(f"pump: {exc}", file=sys.stderr)
        return 2

    def stop(_sig: int, _frame: Any) -> None:
        pump.stop()  # the loop ends after the beat it is in

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"pump: promoting {', '.join(pump.queues)} every {pump.interval_ms} ms", file=out, flush=True)
    pump.run()
    conn.close()
    counts = ", ".join(f"{q} {n}" for q, n in pump.promoted.items())
    print(f"pump: stopped after {pump.ticks} beats; promoted {counts}", file=out, flush=True)
    if pump.errors:
        print(pump.errors[0], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
