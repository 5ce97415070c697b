"""ExecutorView: the same step on a scripted node and a native node, side by side."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from echomq_teach.connector import Connector
from echomq_teach.keyspace import SETS
from echomq_teach.nodes.node import Node
from echomq_teach.snapshots import Snapshot

from .compare import SCENARIOS, Comparison, Difference, ExecutorRun, Side
from .model import as_connector, when
from .render import button, esc, fallback, ordered_fields, short, stylesheet, trace_html, wrap

TITLE = "One transition, two executors"


def _end_state(snap: Snapshot, job_id: str) -> str:
    where = [f"<b>{s}</b> · {esc(when(snap, s, job_id))}" for s in SETS if job_id in snap.sets[s]]
    row = snap.rows.get(job_id)
    lines = [f"<div>{' / '.join(where) or 'in no set'}</div>"]
    if row:
        cells = "".join(_field_row(f, row[f]) for f in ordered_fields([row]))
        lines.append(f'<div class="emq-card"><table>{cells}</table></div>')
    else:
        lines.append('<div class="emq-none">no row</div>')
    return "".join(lines)


def _field_row(name: str, value: str) -> str:
    # lease_epoch is the one field only the native executor writes: mark it, in words as well as colour
    if name == "lease_epoch":
        return (f'<tr><td>{esc(name)}</td><td class="emq-doc" title="{esc(value)}">{esc(short(value, 20))}'
                '<span class="emq-tag">native only</span></td></tr>')
    return f'<tr><td>{esc(name)}</td><td title="{esc(value)}">{esc(short(value, 20))}</td></tr>'


def _side_html(side: Side, job_id: str, heading: str) -> str:
    c = side.call
    reply = f"(error) {c.error}" if c.error is not None else repr(c.reply)
    return (
        f'<div class="emq-col"><div class="emq-col-head">{esc(heading)}</div>'
        f"{trace_html(c.entries)}"
        f"<div>reply <code>{esc(reply)}</code></div>"
        f'<div style="margin-top:6px">end state of <code>{esc(job_id)}</code></div>'
        f"{_end_state(c.after, job_id)}</div>"
    )


def _diff_html(diffs: list[Difference]) -> str:
    items = []
    for d in diffs:
        if d.documented is None:
            cls, tag = "emq-same", "same"
        elif d.documented:
            cls, tag = "emq-doc", "documented"
        else:
            cls, tag = "emq-undoc", "UNDOCUMENTED"
        items.append(f'<li><span class="emq-badge {cls}">{tag}</span> {esc(d.kind)}: {esc(d.text)}</li>')
    return '<ul class="emq-diff">' + "".join(items) + "</ul>"


class ExecutorView(widgets.VBox):
    """Pick a scenario and run it on both executors; replies, end states and differences side by side.

    ``scripted_conn`` is a wire 4 connector, ``native_conn`` a wire 6 one on a
    node that loads trafikey (``start_node(native=True)``): each executor keeps
    its own node. Differences the page documents are marked; others are flagged.
    """

    def __init__(
        self,
        scripted_conn: Connector | Node,
        native_conn: Connector | Node,
        step: str = "claim",
        *,
        title: str | None = TITLE,
        autorun: bool = True,
    ) -> None:
        self.model = ExecutorRun(as_connector(scripted_conn), as_connector(native_conn))
        self.error: str | None = None
        self.title_html = widgets.HTML(wrap(f'<div class="emq-title">{esc(title)}</div>') if title else "")
        self.step_input = widgets.Dropdown(
            options=[(f"{s.name} — {s.title}", s.name) for s in SCENARIOS.values()],
            value=step,
            description="step",
            layout=widgets.Layout(width="420px"),
        )
        self.run_button = button(description="run on both", button_style="primary")
        self.status = widgets.HTML()
        self.cols_html = widgets.HTML()
        self.diff_html = widgets.HTML()
        self.run_button.on_click(lambda _b: self._guard(self.run))
        controls = widgets.HBox(
            [self.step_input, self.run_button, self.status], layout=widgets.Layout(align_items="center")
        )
        super().__init__(
            [stylesheet(), self.title_html, controls, self.cols_html, self.diff_html],
            layout=widgets.Layout(width="100%"),
        )
        if autorun:
            self.run()

    def __repr__(self) -> str:
        # the text/plain fallback (a reader without a kernel, and nbval compares it): no ids, no clocks
        c = self.model.last
        if c is None:
            return fallback(f"Executor view: {self.step_input.value} not run yet")
        kinds = sorted({d.kind for d in c.differences if d.documented})
        undoc = len(c.undocumented)
        return fallback(
            f"Executor view, {self.step_input.value} on both executors: documented differences "
            f"{', '.join(kinds) or 'none'}; undocumented {undoc}"
        )

    @property
    def comparison(self) -> Comparison | None:
        """The last run: ``.scripted`` / ``.native`` (each with ``.call``), ``.differences``, ``.undocumented``."""
        return self.model.last

    @property
    def differences(self) -> list[Difference]:
        return self.model.last.differences if self.model.last else []

    def run(self, step: str | None = None) -> Comparison:
        """Run ``step`` (the dropdown's value unless given) on both nodes and redraw."""
        if step is not None:
            self.step_input.value = step
        cmp = self.model.run(self.step_input.value)
        self._draw(cmp)
        return cmp

    def close(self) -> None:
        # __del__ calls close even when __init__ refused its connectors
        if getattr(self, "model", None) is not None:
            self.model.close()
        super().close()

    def _guard(self, fn: Callable[[], object]) -> None:
        self.run_button.disabled = True
        try:
            fn()
            self.error = None
            self.status.value = ""
        except Exception as exc:  # noqa: BLE001 - shown beside the button
            self.error = f"{type(exc).__name__}: {exc}"
            self.status.value = wrap(f'<span class="emq-error">{esc(self.error)}</span>')
        finally:
            self.run_button.disabled = False

    def _draw(self, cmp: Comparison) -> None:
        s, n = cmp.scripted, cmp.native
        self.cols_html.value = wrap(
            f'<div class="emq-head">{esc(cmp.scenario.title)} · queue <code>{esc(cmp.queue)}</code> on both nodes</div>'
            '<div class="emq-cols">'
            + _side_html(s, cmp.job_id, f"scripted node · wire {s.conn.wire} · {s.call.executor or 'no script'}")
            + _side_html(n, cmp.job_id, f"native node · wire {n.conn.wire} · {n.call.executor or 'no command'}")
            + "</div>"
        )
        verdict = (
            '<span class="emq-same">every difference is one the page documents</span>'
            if not cmp.undocumented
            else f'<span class="emq-error">{len(cmp.undocumented)} undocumented difference(s)</span>'
        )
        self.diff_html.value = wrap(
            f'<div class="emq-title">what differs <span>· {verdict}</span></div>' + _diff_html(cmp.differences)
        )
