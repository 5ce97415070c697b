"""The one tick loop: a thread that calls ``tick()`` at once, then every ``interval_ms``, until stopped."""

from __future__ import annotations

import threading

from ..connector import LINK_ERRORS
from ..jobs import positive_int
from .legs import check_lost_link
from .report import failure


class Ticker:
    """A loop on a thread of its own: ``tick()`` at once, then every ``interval_ms`` until ``stop()``.

    The Metronome and the Pump (``echomq_teach.pump``) are tickers. A lost link
    ends the loop (``lost_link="raise"``) or is counted in ``lost_links`` and the
    next tick comes as usual (``"retry"``); the exception a loop ends on is kept in
    ``errors`` as ``"<who>: ResponseError: …"`` (at most one), not lost with the thread.
    """

    #: how ``errors`` names this ticker
    who = "ticker"

    def __init__(self, interval_ms: int, lost_link: str) -> None:
        positive_int("interval_ms", interval_ms)
        self.lost_link = check_lost_link(lost_link)
        self.interval_ms = interval_ms
        self.lost_links = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> object:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        """True while the tick thread runs."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def started(self) -> bool:
        """True once the tick thread was started (a ticker starts once)."""
        return self._thread is not None

    def start_thread(self, name: str) -> None:
        self._thread = threading.Thread(target=self.run, name=name, daemon=True)
        self._thread.start()

    def run(self) -> None:
        """Tick until ``stop()``, on the calling thread: the first tick at once."""
        try:
            while True:
                try:
                    self.tick()
                except LINK_ERRORS:
                    if self.lost_link == "raise":
                        raise
                    self.lost_links += 1  # the node went away: tick again next interval
                if self._stop.wait(self.interval_ms / 1000):
                    break
        except Exception as exc:  # noqa: BLE001 - kept for whoever started it, not lost with the thread
            self.errors.append(failure(self.who, exc))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
