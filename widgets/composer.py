"""FlowComposer: land a parent and N children, settle them one by one, watch :dependencies tick to zero."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from echomq_teach import flows
from echomq_teach.connector import Connector
from echomq_teach.flows import POLICIES
from echomq_teach.nodes.node import Node
from echomq_teach.snapshots import Snapshot

from .flow_model import MAX_CHILDREN, FlowEvent, FlowRun
from .model import as_connector
from .plots import Picture, draw_counter, new_figure
from .render import badge, button, caption_html, esc, fallback, stylesheet, trace_html, wrap
from .setview import SetView

TITLE = "The flow composer · the :dependencies counter ticks to zero"


class FlowComposer(widgets.VBox):
    """Choose N children (1–8) and a parent_policy, land the flow, then complete or fail children.

    Each button is real calls on ``conn``: ``flows.add`` (one @enqueue_flow),
    or ``jobs.claim`` and then ``jobs.complete`` / ``jobs.retry``. The counter
    plot, the parent's state and the caption are read from the snapshot after.
    """

    def __init__(
        self,
        conn: Connector | Node,
        queue: str | None = None,
        *,
        children: int = 3,
        policy: str = "fail",
        title: str | None = TITLE,
    ) -> None:
        self.conn = as_connector(conn)
        self.model = FlowRun(self.conn, queue_prefix=queue or "flow")
        self.error: str | None = None
        self._listeners: list[Callable[[FlowEvent | None], None]] = []

        self.title_html = widgets.HTML(wrap(f'<div class="emq-title">{esc(title)}</div>') if title else "")
        # a number box, not a slider: ipywidgets' slider handle has no accessible name for a screen reader,
        # and the box takes the arrow keys as well as typing
        self.children_input = widgets.BoundedIntText(
            value=children,
            min=1,
            max=MAX_CHILDREN,
            description="children (N)",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="170px"),
        )
        self.policy_input = widgets.Dropdown(
            options=list(POLICIES),
            value=policy,
            description="parent_policy",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="200px"),
        )
        auto = widgets.Layout(width="auto")  # the labels change; never cut them off
        self.land_button = button(description="land the flow", button_style="primary", layout=auto)
        self.complete_button = button(
            description="complete next child", button_style="success", layout=widgets.Layout(width="auto")
        )
        self.fail_button = button(
            description="fail next child", button_style="danger", layout=widgets.Layout(width="auto")
        )
        self.reprocess_button = button(
            description="reprocess dead child", tooltip="jobs.reprocess", layout=widgets.Layout(width="auto")
        )
        self.status = widgets.HTML()
        self.state_html = widgets.HTML()
        self.caption_html = widgets.HTML()
        self.trace_html = widgets.HTML()
        self.reads_html = widgets.HTML()
        self.figure = new_figure(4.4, 2.3)
        self.plot = Picture(490)
        self.set_view = SetView(self.conn, self.model.queue, reader=self.model.reader, rows="table", autorefresh=False)

        self.land_button.on_click(lambda _b: self._guard(self.land))
        self.complete_button.on_click(lambda _b: self._guard(self.complete_next))
        self.fail_button.on_click(lambda _b: self._guard(self.fail_next))
        self.reprocess_button.on_click(lambda _b: self._guard(self.reprocess))
        self.children_input.observe(lambda _c: self._draw_idle(), names="value")
        self.policy_input.observe(lambda _c: self._draw_idle(), names="value")

        row1 = widgets.HBox(
            [self.children_input, self.policy_input, self.land_button],
            layout=widgets.Layout(align_items="center", flex_flow="row wrap"),
        )
        row2 = widgets.HBox(
            [self.complete_button, self.fail_button, self.reprocess_button, self.status],
            layout=widgets.Layout(align_items="center", flex_flow="row wrap"),
        )
        side = widgets.VBox([self.state_html, self.reads_html], layout=widgets.Layout(flex="1 1 300px"))
        middle = widgets.HBox([self.plot, side], layout=widgets.Layout(flex_flow="row wrap"))
        super().__init__(
            [stylesheet(), self.title_html, row1, row2, self.caption_html, self.trace_html, middle, self.set_view],
            layout=widgets.Layout(width="100%"),
        )
        self._draw(None, self.model.snapshot())

    def __repr__(self) -> str:
        # the text/plain fallback (a reader without a kernel, and nbval compares it): no ids, no clocks
        if not self.counter:
            return fallback(f"Flow composer: no flow landed yet (1 to {MAX_CHILDREN} children)")
        ticks = " → ".join(map(str, self.counter))
        return fallback(f"Flow composer: :dependencies {ticks}; the parent is {self.parent_state}")

    # -- what the notebook reads ---------------------------------------------------------------------------
    @property
    def queue(self) -> str:
        return self.model.queue

    @property
    def parent_id(self) -> str | None:
        return self.model.parent_id

    @property
    def child_ids(self) -> tuple[str, ...]:
        return self.model.flow.child_ids if self.model.flow else ()

    @property
    def events(self) -> list[FlowEvent]:
        return self.model.events

    @property
    def counter(self) -> list[int]:
        """The :dependencies value after each action, as plotted."""
        return [e.dependencies for e in self.model.events]

    @property
    def caption(self) -> str:
        return self.model.caption(self.set_view.snapshot) if self.set_view.snapshot else ""

    @property
    def parent_state(self) -> str:
        return self.model.parent_state(self.set_view.snapshot) if self.set_view.snapshot else "none"

    # -- the actions -----------------------------------------------------------------------------------------
    def land(self, n: int | None = None, policy: str | None = None) -> FlowEvent:
        """flows.add with N children under the policy (the inputs' values unless given)."""
        if n is not None:
            self.children_input.value = n
        if policy is not None:
            self.policy_input.value = policy
        ev = self.model.land(self.children_input.value, self.policy_input.value)
        self.set_view.row_order = [self.model.parent_id or "", *self.child_ids]
        self.set_view.names = self.model.names()
        self._draw(ev, ev.call.after)
        return ev

    def complete_next(self) -> FlowEvent:
        """Claim the head of pending and complete it (a child, or the released parent)."""
        ev = self.model.complete_next()
        self._draw(ev, ev.call.after)
        return ev

    def fail_next(self) -> FlowEvent:
        """Claim the next child and fail it at its last attempt: it dies under the flow's policy."""
        ev = self.model.fail_next()
        self._draw(ev, ev.call.after)
        return ev

    def reprocess(self) -> FlowEvent:
        """Reprocess the first dead child (under ``wait`` it still counts toward the parent)."""
        ev = self.model.reprocess_dead()
        self._draw(ev, ev.call.after)
        return ev

    def on_event(self, fn: Callable[[FlowEvent | None], None]) -> None:
        """Call ``fn(event)`` after every redraw (``None`` while no flow is landed)."""
        self._listeners.append(fn)

    def timeline(self) -> list[tuple[str, Snapshot]]:
        """(label, snapshot) after each action on the current flow, for a CounterPlot."""
        return [(e.label, e.call.after) for e in self.model.events]

    def close(self) -> None:
        # __del__ calls close even when __init__ failed part way
        if getattr(self, "model", None) is not None:
            self.model.close()
        super().close()

    # -- drawing ------------------------------------------------------------------------------------------------
    def _guard(self, fn: Callable[[], object]) -> None:
        buttons = (self.land_button, self.complete_button, self.fail_button, self.reprocess_button)
        for b in buttons:
            b.disabled = True
        try:
            fn()
            self.error = None
            self.status.value = ""
        except Exception as exc:  # noqa: BLE001 - shown beside the buttons, and kept for tests
            self.error = f"{type(exc).__name__}: {exc}"
            self.status.value = wrap(f'<span class="emq-error">{esc(self.error)}</span>')
            self._buttons(self.model.snapshot())

    def _draw_idle(self) -> None:
        if not self.model.flow:
            self._draw(None, self.model.snapshot())

    def _draw(self, ev: FlowEvent | None, snap: Snapshot) -> None:
        m = self.model
        if ev is None:
            n, pol = self.children_input.value, self.policy_input.value
            self.caption_html.value = wrap(
                caption_html(
                    f"add/3 → @enqueue_flow: SET :dependencies = {n}, parent held awaiting_children",
                    f"no flow yet · land a parent and {n} children; each child's parent_policy will be {pol}.",
                )
            )
            self.trace_html.value = wrap(trace_html([], empty="nothing sent yet"))
            self.set_view.use_queue(m.queue)
        else:
            self.caption_html.value = wrap(caption_html(ev.headline, m.caption(snap)))
            self.trace_html.value = wrap(trace_html(ev.call.entries))
            self.set_view.queue = m.queue
            self.set_view.show(ev.call.after, ev.call.before, ev.call.changes)
        self._draw_state(snap)
        alt = draw_counter(
            self.figure,
            self.counter,
            [e.label for e in m.events],
            m.n or self.children_input.value,
            title=":dependencies" + (f" of {m.parent_id}" if m.parent_id else ""),
        )
        self.plot.show(self.figure, alt)
        self._buttons(snap)
        for fn in list(self._listeners):
            fn(ev)

    def _draw_state(self, snap: Snapshot) -> None:
        m = self.model
        if not m.flow:
            self.state_html.value = wrap('<div class="emq-none">no flow landed</div>')
            self.reads_html.value = ""
            return
        t = m.tally(snap)
        state = m.parent_state(snap)
        self.state_html.value = wrap(
            f"<div>children (N) <b>{m.n}</b> · children completed <b>{len(t.done)}</b>"
            + (f" · dead <b>{len(t.dead)}</b>" if t.dead else "")
            + f"</div><div style='margin-top:4px'>parent <code>{esc(m.parent_id)}</code> {badge(state)}</div>"
            f"<div style='margin-top:4px'>policy <code>{esc(m.policy)}</code> · "
            f":dependencies <b>{m.dependencies(snap)}</b></div>"
        )
        # the page's three pure reads, through the widget's own reader (they change nothing)
        r, q, p = m.reader, m.queue, m.parent_id or ""
        deps = flows.dependencies(r, q, p)
        values = flows.children_values(r, q, p)
        ignored = flows.ignored_failures(r, q, p)
        self.reads_html.value = wrap(
            '<div class="emq-extra">'
            f"<div><code>dependencies/3</code> → {deps}</div>"
            f"<div><code>children_values/3</code> → {len(values)} result(s)</div>"
            f"<div><code>ignored_failures/3</code> → {esc(_brief(ignored, m.names()))}</div></div>"
        )

    def _buttons(self, snap: Snapshot) -> None:
        m = self.model
        self.land_button.disabled = False
        self.land_button.description = "land the flow" if not m.flow else "land a new flow"
        self.complete_button.disabled = not m.can_complete(snap)
        head = m.next_pending(snap)
        self.complete_button.description = (
            "run the parent" if head is not None and head == m.parent_id else "complete next child"
        )
        self.fail_button.disabled = not m.can_fail(snap)
        self.reprocess_button.disabled = not m.can_reprocess(snap)


def _brief(d: dict[str, str], names: dict[str, str]) -> str:
    if not d:
        return "{}"
    return "{" + ", ".join(f"{names.get(k, k)}: {v}" for k, v in d.items()) + "}"
