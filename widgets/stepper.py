"""LifecycleStepper: one job across the four sets, one real call per click."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from echomq_teach.connector import Connector
from echomq_teach.keyspace import base
from echomq_teach.nodes.node import Node
from echomq_teach.snapshots import Snapshot

from .model import as_connector
from .render import button, caption_html, esc, fallback, sizes_text, steps_html, stylesheet, trace_html, wrap
from .setview import SetView
from .steps import PATHS, Lifecycle, Outcome, Settings

TITLE = "The lifecycle stepper · one job across the four sets"


class LifecycleStepper(widgets.VBox):
    """Step / Back / Reset through the happy path, the failure fork or recovery.

    Each Step is one real call (``jobs.enqueue``, ``claim``, ``complete``,
    ``retry``, ``promote``, ``reap``) on a queue of the stepper's own; ``queue``
    is the prefix of those names (each reset takes a fresh one). The caption
    is read from the real snapshot, the command and reply from ``conn.trace``.
    """

    def __init__(
        self,
        conn_or_node: Connector | Node,
        queue: str | None = None,
        path: str = "happy",
        *,
        settings: Settings | None = None,
        show_paths: bool = True,
        title: str | None = TITLE,
    ) -> None:
        self.conn = as_connector(conn_or_node)
        self.queue_prefix = queue or "trace"
        self.settings = settings or Settings()
        self.model = Lifecycle(self.conn, path, queue_prefix=self.queue_prefix, settings=self.settings)
        self.error: str | None = None
        self._listeners: list[Callable[[Outcome | None], None]] = []

        self.title_html = widgets.HTML(wrap(f'<div class="emq-title">{esc(title)}</div>') if title else "")
        self.path_buttons = widgets.ToggleButtons(
            options=list(PATHS),
            value=path,
            tooltips=["enqueue → claim → complete", "retry, promote, dead", "a lapsed lease, reap, stale"],
            style={"button_width": "90px"},
        )
        self.path_buttons.layout.display = "" if show_paths else "none"
        self.back_button = button(description="◂ Back", tooltip="reset, then replay all but the last step")
        self.step_button = button(button_style="primary", layout=widgets.Layout(width="200px"))
        self.reset_button = button(description="Reset", tooltip="start again on a fresh queue")
        self.status = widgets.HTML()
        self.progress_html = widgets.HTML()
        self.caption_html = widgets.HTML()
        self.trace_html = widgets.HTML()
        self.set_view = SetView(self.conn, self.model.queue, reader=self.model.reader, autorefresh=False)

        self.step_button.on_click(lambda _b: self._guard(self.step))
        self.back_button.on_click(lambda _b: self._guard(self.back))
        self.reset_button.on_click(lambda _b: self._guard(self.reset))
        self.path_buttons.observe(self._on_path, names="value")

        controls = widgets.HBox(
            [self.back_button, self.step_button, self.reset_button, self.status],
            layout=widgets.Layout(align_items="center"),
        )
        super().__init__(
            [
                stylesheet(),  # once: the values below carry no sheet of their own
                self.title_html,
                self.path_buttons,
                self.progress_html,
                controls,
                self.caption_html,
                self.trace_html,
                self.set_view,
            ],
            layout=widgets.Layout(width="100%"),
        )
        self._draw(None)

    def __repr__(self) -> str:
        # the text/plain fallback (a reader without a kernel, and nbval compares it): no ids, no clocks
        m = self.model
        at = f"step {m.index} of {len(m.steps)}" + (f" ({m.steps[m.index - 1].name})" if m.index else "")
        return fallback(f"Lifecycle stepper, {m.path} path, {at}: {sizes_text(self.set_view.snapshot)}")

    # -- what the notebook reads -------------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self.model.path

    @property
    def queue(self) -> str:
        """The queue the current run uses (a fresh name after each reset)."""
        return self.model.queue

    @property
    def index(self) -> int:
        """How many steps have run."""
        return self.model.index

    @property
    def outcome(self) -> Outcome | None:
        """The last step's outcome: ``headline``, ``caption``, ``detail``, ``call`` (reply, entries, snapshots)."""
        return self.model.last

    @property
    def caption(self) -> str:
        """The caption as text: headline, what moved where, what the script did."""
        return self.outcome.text if self.outcome else self._ready_text()

    @property
    def job_id(self) -> str | None:
        return self.model.job_id

    # -- the moves ---------------------------------------------------------------------------------------
    def step(self) -> Outcome | None:
        """Run the next step (one real call) and redraw; at the end of the path, do nothing."""
        if self.model.done:
            return None
        out = self.model.step()
        self._draw(out)
        return out

    def back(self) -> Outcome | None:
        """Reset to a fresh queue and replay every step but the last."""
        out = self.model.back()
        self._draw(out)
        return out

    def reset(self) -> None:
        self.model.reset()
        self._draw(None)

    def set_path(self, path: str) -> None:
        """Switch to another path (a fresh run)."""
        self.path_buttons.value = path  # the observer does the switch

    def on_step(self, fn: Callable[[Outcome | None], None]) -> None:
        """Call ``fn(outcome)`` after every redraw (``None`` after a reset or a path switch)."""
        self._listeners.append(fn)

    def timeline(self) -> list[tuple[str, Snapshot]]:
        """(label, snapshot) for the start and after each step of the current run, for a CounterPlot."""
        h = self.model.history
        return ([("start", h[0].call.before)] if h else []) + [(o.step.name, o.call.after) for o in h]

    def run_all(self) -> list[Outcome]:
        while not self.model.done:
            self.step()
        return list(self.model.history)

    def close(self) -> None:
        # __del__ calls close even when __init__ failed part way
        if getattr(self, "model", None) is not None:
            self.model.close()
        super().close()

    # -- drawing -----------------------------------------------------------------------------------------
    def _on_path(self, change: dict) -> None:
        def switch() -> None:
            self.model.close()
            self.model = Lifecycle(self.conn, change["new"], queue_prefix=self.queue_prefix, settings=self.settings)
            self.set_view.reader = self.model.reader
            self._draw(None)

        self._guard(switch)

    def _guard(self, fn: Callable[[], object]) -> None:
        # a click must never die silently in the browser: show the error beside the buttons
        try:
            fn()
            self.error = None
            self.status.value = ""
        except Exception as exc:  # noqa: BLE001 - shown, and kept for tests
            self.error = f"{type(exc).__name__}: {exc}"
            self.status.value = wrap(f'<span class="emq-error">{esc(self.error)}</span>')
        finally:
            self._buttons()

    def _buttons(self) -> None:
        nxt = self.model.next_step
        self.step_button.description = f"Step ▸ {nxt.name}" if nxt else "done ✓"
        self.step_button.disabled = nxt is None
        self.back_button.disabled = self.model.index == 0
        self.reset_button.disabled = False

    def _ready_text(self) -> str:
        names = " → ".join(s.name for s in self.model.steps)
        nxt = self.model.steps[0]
        return (
            f"ready — the {self.model.path} path: {names}\n"
            f"the queue {self.model.queue} (keys {base(self.model.queue)}…) is empty · Step runs {nxt.handle}"
        )

    def _draw(self, out: Outcome | None) -> None:
        m = self.model
        if out is None:
            head, body = self._ready_text().split("\n")
            self.caption_html.value = wrap(caption_html(head, body))
            self.trace_html.value = wrap(trace_html([], empty="nothing sent yet"))
            self.set_view.use_queue(m.queue)
        else:
            # the view and its caption first: each update is one message, and the browser draws them in order
            self.set_view.queue = m.queue
            self.set_view.show(out.call.after, out.call.before, out.call.changes)
            self.caption_html.value = wrap(caption_html(out.headline, out.caption, out.detail))
            empty = "nothing sent — no client called anything" if not out.step.handle else "nothing sent"
            self.trace_html.value = wrap(trace_html(out.call.entries, empty=empty))
        self.progress_html.value = wrap(steps_html([s.name for s in m.steps], m.index))
        self._buttons()
        for fn in list(self._listeners):
            fn(out)
