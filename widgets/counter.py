"""CounterPlot: the four set sizes per step, or over time while a Consumer or a Pool runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import ipywidgets as widgets

from echomq_teach import snapshots
from echomq_teach.connector import Connector
from echomq_teach.keyspace import SETS
from echomq_teach.nodes.node import Node
from echomq_teach.snapshots import Snapshot

from .model import as_connector, reader_for
from .plots import Picture, draw_sizes, new_figure
from .render import fallback

if TYPE_CHECKING:
    from .composer import FlowComposer
    from .stepper import LifecycleStepper

WATCH_LIMIT_S = 120.0  # watch() is bounded even when asked for more


@dataclass
class SizeSeries:
    """Set sizes recorded from snapshots: one point per record, on the server's clock."""

    sets: tuple[str, ...] = SETS
    now_ms: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    sizes: dict[str, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.sizes = {s: [] for s in self.sets}

    def record(self, snap: Snapshot, label: str | None = None) -> None:
        self.add(snap.now_ms, snap.sizes(), label)

    def add(self, now_ms: int, sizes: dict[str, int], label: str | None = None) -> None:
        """One point from sizes read some other way (``ZCARD`` each, say), at ``now_ms`` on the node's clock."""
        for s in self.sets:
            self.sizes[s].append(sizes[s])
        self.now_ms.append(now_ms)
        self.labels.append(label if label is not None else str(len(self.labels)))

    def __len__(self) -> int:
        return len(self.now_ms)

    def seconds(self) -> list[float]:
        """Server seconds since the first record."""
        t0 = self.now_ms[0] if self.now_ms else 0
        return [(t - t0) / 1000 for t in self.now_ms]

    def clear(self) -> None:
        self.now_ms.clear()
        self.labels.clear()
        for s in self.sets:
            self.sizes[s].clear()


class CounterPlot(widgets.VBox):
    """A matplotlib plot of pending, active, schedule and dead sizes.

    ``record(snapshot, label)`` adds one step (``x="step"``); ``sample()``
    reads a snapshot itself; ``watch(conn, queue, seconds, interval)`` samples
    on the server clock while your Consumer or Pool runs in another thread, and
    ``callback()`` gives a function to call from your own run loop.
    """

    def __init__(
        self,
        conn: Connector | Node | None = None,
        queue: str | None = None,
        *,
        x: str = "step",
        sets: tuple[str, ...] = SETS,
        title: str = "set sizes",
        width: float = 6.4,
        height: float = 2.6,
        redraw_every: float = 0.25,
    ) -> None:
        if x not in ("step", "time"):
            raise ValueError(f"x must be 'step' or 'time', got {x!r}")
        self.conn = as_connector(conn) if conn is not None else None
        self.reader = reader_for(self.conn) if self.conn is not None else None
        self.queue = queue
        self.x = x
        self.title = title
        self.series = SizeSeries(tuple(sets))
        self.figure = new_figure(width, height)
        self.redraw_every = redraw_every
        # the figure as an <img> with its text alternative (``image.png`` the bytes, ``image.alt`` the words)
        self.image = Picture(int(width * 110))
        self._drawn_at = 0.0
        super().__init__([self.image])
        self.draw()

    def __repr__(self) -> str:
        # the text/plain fallback (a reader without a kernel, and nbval compares it): no ids, no clocks,
        # and no sample count (how many samples a timed watch takes varies from run to run)
        s = self.series
        if not len(s):
            return fallback(f"Counter plot of {', '.join(s.sets)}: no points yet")
        axis = "server seconds" if self.x == "time" else "steps"
        ends = ", ".join(f"{name} {v[0]} → {v[-1]}" for name, v in s.sizes.items())
        return fallback(f"Counter plot over {axis}: {ends}")

    # -- recording ----------------------------------------------------------------------------------------
    def record(self, snap: Snapshot, label: str | None = None, *, draw: bool = True) -> None:
        """Add one point from a snapshot you already read."""
        self.series.record(snap, label)
        if draw:
            self.draw()

    def sample(self, label: str | None = None, *, draw: bool = True) -> Snapshot:
        """Read a snapshot of the plot's queue now and record it."""
        reader, queue = self._source()
        snap = snapshots.snapshot(reader, queue)
        self.record(snap, label, draw=draw)
        return snap

    def callback(self) -> Callable[..., None]:
        """A function for a run loop (``for _ in range(n): c.beat(); cb()``); redraws at most every 0.25 s."""

        def cb(*_args: object) -> None:
            self.sample(draw=False)
            self._maybe_draw()

        return cb

    def watch(
        self,
        conn: Connector | Node | None = None,
        queue: str | None = None,
        seconds: float = 3.0,
        interval: float = 0.05,
        until: Callable[[], bool] | None = None,
    ) -> int:
        """Sample every ``interval`` s for up to ``seconds`` (or until ``until()`` is true); answers the samples.

        Runs in the calling thread: start the Consumer or Pool on a thread first.
        The x axis switches to server seconds.
        """
        if conn is not None:
            self._set_source(conn, queue)
        elif queue is not None:
            self.queue = queue
        self.x = "time"
        seconds = min(float(seconds), WATCH_LIMIT_S)
        start = time.monotonic()
        taken = 0
        while True:
            self.sample(draw=False)
            taken += 1
            self._maybe_draw()
            if until is not None and until():
                break
            if time.monotonic() - start >= seconds:
                break
            time.sleep(interval)
        self.sample(draw=False)  # the end state, after the work stopped
        self.draw()
        return taken + 1

    def clear(self) -> None:
        self.series.clear()
        self.draw()

    def follow(self, widget: LifecycleStepper | FlowComposer) -> None:
        """Plot a stepper's or a composer's run, redrawn after every click (a reset starts it again)."""
        self.x = "step"

        def redraw(_event: object) -> None:
            self.series.clear()
            for label, snap in widget.timeline():
                self.series.record(snap, label)
            self.draw()

        # a stepper calls back per step, a composer per event: the same redraw serves both
        hook = widget.on_step if hasattr(widget, "on_step") else widget.on_event  # type: ignore[union-attr]
        hook(redraw)
        redraw(None)

    # -- drawing -------------------------------------------------------------------------------------------
    def draw(self) -> None:
        s = self.series
        if self.x == "time":
            alt = draw_sizes(self.figure, s.seconds(), s.sizes, xlabel="server seconds", title=self.title)
        else:
            alt = draw_sizes(self.figure, list(range(len(s))), s.sizes, labels=s.labels, title=self.title)
        self.image.show(self.figure, alt)
        self._drawn_at = time.monotonic()

    def _maybe_draw(self) -> None:
        if time.monotonic() - self._drawn_at >= self.redraw_every:
            self.draw()

    def _set_source(self, conn: Connector | Node, queue: str | None) -> None:
        c = as_connector(conn)
        if c is not self.conn:
            if self.reader is not None and self.reader is not self.conn:
                self.reader.close()
            self.conn, self.reader = c, reader_for(c)
        if queue is not None:
            self.queue = queue

    def _source(self) -> tuple[Connector, str]:
        if self.reader is None or self.queue is None:
            raise ValueError("give CounterPlot a conn and a queue (or pass them to watch) before sampling")
        return self.reader, self.queue

    def close(self) -> None:
        if self.reader is not None and self.reader is not self.conn:
            self.reader.close()
        super().close()
