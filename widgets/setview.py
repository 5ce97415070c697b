"""SetView: the four sorted sets and the rows of one queue, redrawn from a real snapshot."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets

from echomq_teach import snapshots
from echomq_teach.connector import Connector
from echomq_teach.nodes.node import Node
from echomq_teach.snapshots import Change, Snapshot

from .model import as_connector, reader_for
from .render import fallback, setview_html, setview_text, sizes_text, stylesheet, wrap


class SetView(widgets.VBox):
    """pending, active, schedule and dead with ids and scores, the rows beside them, the last diff marked.

    ``refresh()`` reads a real snapshot and marks what changed since the last
    one drawn; ``run(fn)`` snapshots around one call of yours. Snapshots go
    through a second connector, so ``conn.trace`` shows only your own calls.
    """

    def __init__(
        self,
        conn: Connector | Node,
        queue: str,
        *,
        rows: str = "auto",
        title: str | None = None,
        reader: Connector | None = None,
        autorefresh: bool = True,
    ) -> None:
        self.conn = as_connector(conn)
        self._own_reader = reader is None  # a reader handed in belongs to the widget around this view
        self.reader = reader or reader_for(self.conn)
        self.queue = queue
        self.rows = rows
        self.title = title
        self.row_order: Sequence[str] | None = None
        #: role tags shown after ids, e.g. {parent_id: "parent"}
        self.names: dict[str, str] = {}
        self.snapshot: Snapshot | None = None
        self.before: Snapshot | None = None
        self.changes: list[Change] = []
        self.html = widgets.HTML(layout=widgets.Layout(width="auto"))  # 100% plus the widget margin overflowed
        super().__init__([stylesheet(), self.html], layout=widgets.Layout(width="100%"))
        if autorefresh:
            self.refresh()

    def __repr__(self) -> str:
        # the text/plain fallback (a reader without a kernel, and nbval compares it): no ids, no clocks
        return fallback(f"Set view of queue {self.queue}: {sizes_text(self.snapshot)}")

    # -- drawing ---------------------------------------------------------------------------------------
    def refresh(self) -> Snapshot:
        """Read a snapshot now and draw it, marking the diff from the last one drawn."""
        snap = snapshots.snapshot(self.reader, self.queue)
        self.show(snap, before=self.snapshot)
        return snap

    def show(self, after: Snapshot, before: Snapshot | None = None, changes: Sequence[Change] | None = None) -> None:
        """Draw ``after``; the diff from ``before`` (or the ``changes`` given) is highlighted."""
        if before is not None and before.queue != after.queue:
            before = None  # another queue: nothing to compare with
        self.before, self.snapshot = before, after
        self.changes = list(changes) if changes is not None else (snapshots.diff(before, after) if before else [])
        inner = setview_html(
            after, before, self.changes, rows=self.rows, row_order=self.row_order, title=self.title, names=self.names,
            standalone=False,
        )
        self.html.value = wrap(inner)  # the sheet is the hidden first child's, not in every value

    def use_queue(self, queue: str) -> Snapshot:
        """Point the view at another queue and draw it fresh (nothing highlighted)."""
        self.queue, self.snapshot = queue, None
        return self.refresh()

    def run(self, fn: Callable[[], Any]) -> Any:
        """Call ``fn`` (one real call), then draw what it changed; answers its reply."""
        before = snapshots.snapshot(self.reader, self.queue)
        try:
            return fn()
        finally:
            after = snapshots.snapshot(self.reader, self.queue)
            self.show(after, before)

    # -- reading ---------------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        """The drawn snapshot as plain text (one line per set, then the rows)."""
        return setview_text(self.snapshot) if self.snapshot else ""

    @property
    def changed(self) -> list[str]:
        """The last diff, in words."""
        return [c.detail for c in self.changes]

    def close(self) -> None:
        if self._own_reader and self.reader is not self.conn:
            self.reader.close()
        super().close()
