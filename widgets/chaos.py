"""ChaosView: worker processes drain one queue while you kill, freeze, thaw and restart things.

The widget of ``chaos_model.ChaosRun`` (which drives an ``echomq_teach.lab.run.Run``)::

    node = start_node(durable=True)          # durable: so that "restart node" keeps the queue
    chaos = ChaosView(node, workers=4, jobs=300)
    chaos                                    # the widget: the workers start at once

What it shows, top to bottom: the enqueue box and button, *restart node*,
*SCRIPT FLUSH* and *refresh*; a status line (round, jobs enqueued and settled,
the four set sizes, and what the round waits for); one row per worker slot —
its worker (``w1``, and after a kill ``w1b``, ``w1c`` …), its PID, its state
(running, frozen for how long and whether past its lease, or ended) and the
workers it replaced — with *kill*, *freeze*, *thaw* and *drop link*; the four
set sizes over node seconds, each action marked where it happened; the list
of what you did, each in words; and, once the queue drains, the checker's
verdict (``Report.summary()``) and the run's timeline (``echomq_teach.lab.timeline``).

What each button does, on a real process or the real node:

* *kill* — SIGKILL the worker by its PID; a new worker process takes the slot.
  Whatever the killed worker held stays in active until its lease lapses and
  the run's metronome reaps it.
* *freeze* / *thaw* — SIGSTOP / SIGCONT. A worker frozen past its lease wakes
  up still holding its job: its settle is refused ``stale`` if another worker
  claimed the job since (the token fence), and its handler has run twice.
* *drop link* — ``CLIENT KILL`` the worker's links: its call in flight loses
  its answer (an indeterminate call in the history).
* *restart node* — SIGKILL the node and start it again on its append-only
  file. Only on a durable node; on any other the widget says so and nothing
  happens (a node without persistence would come back empty).
* *SCRIPT FLUSH* — every connector meets NOSCRIPT once and loads its scripts again.
* *enqueue* — N jobs (1 … 5 000), each a recorded call in the producer's lane.

Rounds: a round ends when pending, active and schedule are empty, no worker
is frozen (thaw it to end the round), and nothing happened for ``quiet_ms``
(a thawed worker's late settle lands first). Then the checker judges the whole
history so far, once. The next action starts a new round: the sizes plot
starts again, the verdict stays until the next one.

Bounds: the animation is a ``Watch``, a background thread that samples and
redraws until the round is judged, the widget is closed, or ``watch_s``
(at most 120 s) passes — *refresh*, or any action, starts it again. The run
itself lives ``lifetime_s`` (600 s by default): then its workers and
metronome are stopped by a timer, even if nobody calls ``close()``. ``close()``
stops the animation, every worker process by its PID and the metronome, and
drops the run's own queue.

In a notebook built with stored outputs, ``wait_drained()`` blocks the cell
(bounded) until the round is judged and draws and sends everything from the
cell's own thread: the stored widget state then holds the last sizes plot,
the verdict and the timeline, and reads without a kernel. Bad input — a slot
that does not exist, a thaw of a worker that is not frozen, a restart of a
node without persistence, an enqueue of 0 — is refused before anything is
sent: the message appears in the widget (``chaos.error``), and a direct call
(``chaos.kill(9)``) raises ``BadInput`` as well.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from echomq_teach.lab.figures import description
from echomq_teach.lab.timeline import draw as draw_timeline

from .chaos_model import EVENT_COLOURS, LIFETIME_S, WATCH_LIMIT_S, ChaosRun, RoundVerdict, SlotState, Watch
from .plots import Picture, draw_sizes, new_figure
from .render import badge, button, esc, stylesheet, wrap

TITLE = "Chaos · worker processes drain one queue while you kill, freeze and restart"
_EVENTS_SHOWN = 8


def slot_html(s: SlotState, lease_ms: int) -> str:
    """One slot's line: the worker, its PID, its state, and whom it replaced."""
    state = s.describe(lease_ms).split(" · ")[1]
    killed = f' <span class="emq-none">replaced {esc(", ".join(s.killed))} (killed)</span>' if s.killed else ""
    return (f'<div class="emq-slotline" data-slot="{s.slot}" data-pid="{s.pid}" data-state="{esc(s.state)}">'
            f"<b>{esc(s.worker)}</b> <code>pid {s.pid}</code> {badge(state)}{killed}</div>")


def verdict_html(v: RoundVerdict) -> str:
    cls = "emq-valid" if v.valid else "emq-invalid"
    head = (f"the checker's verdict on {v.report.enqueued} jobs after round {v.round}: "
            f"<b>{esc(v.verdict)}</b>")
    return (f'<div class="emq-verdict {cls}"><div class="emq-h">{head}</div>'
            f"<pre>{esc(v.summary)}</pre></div>")


class ChaosView(widgets.VBox):
    """A pool of worker processes on ``node``, your faults, the sizes live, the checker's verdict at the drain.

    ``ChaosView(node, workers=4, jobs=0, batch=200)``: ``jobs`` are enqueued at
    once (0: press enqueue); ``batch`` is the enqueue box's first value. Every
    button acts on a real process (by PID) or the real node; a restart needs
    ``start_node(durable=True)``. The remaining keywords go to ``ChaosRun``.
    ``close()`` stops every worker process by its PID.
    """

    def __init__(
        self,
        node: Any,
        queue: str | None = None,
        *,
        workers: int = 4,
        jobs: int = 0,
        batch: int = 200,
        lease_ms: int = 1_000,
        work_ms: int = 40,
        lifetime_s: float = LIFETIME_S,
        watch_s: float = WATCH_LIMIT_S,
        interval: float = 0.1,
        redraw_every: float = 0.3,
        title: str | None = TITLE,
        **run_options: Any,
    ) -> None:
        self.model: ChaosRun | None = None
        self.error: str | None = None
        self.redraw_every = redraw_every
        self._draw_lock = threading.RLock()
        self._drawn_at = 0.0
        self.watch = Watch(self._tick, interval=interval, limit_s=watch_s, on_end=self._watch_ended,
                           name="chaos-view-watch")
        self.model = ChaosRun(node, queue, workers=workers, lease_ms=lease_ms, work_ms=work_ms,
                              lifetime_s=lifetime_s, **run_options)
        self.model.on_expire = self._expired

        self.title_html = widgets.HTML(wrap(f'<div class="emq-title">{esc(title)}</div>') if title else "")
        auto = widgets.Layout(width="auto")
        self.batch_input = widgets.IntText(value=batch, description="jobs", style={"description_width": "initial"},
                                           layout=widgets.Layout(width="120px"))
        self.enqueue_button = button(description="enqueue", button_style="primary", layout=auto,
                                             tooltip="enqueue this many jobs (the producer's lane)")
        self.restart_button = button(description="restart node", button_style="danger", layout=auto,
                                             tooltip="SIGKILL the node and start it on its append-only file")
        self.flush_button = button(description="SCRIPT FLUSH", layout=auto,
                                           tooltip="the node forgets every script: NOSCRIPT, then a reload")
        self.refresh_button = button(description="refresh", layout=auto,
                                             tooltip="read the sizes now and watch again")
        self.status = widgets.HTML()
        self.slot_html: list[widgets.HTML] = []
        self.kill_buttons: list[widgets.Button] = []
        self.freeze_buttons: list[widgets.Button] = []
        self.thaw_buttons: list[widgets.Button] = []
        self.drop_buttons: list[widgets.Button] = []
        rows = []
        for i in range(self.model.size):
            label = widgets.HTML(layout=widgets.Layout(width="430px"))
            kill = button(description="kill", button_style="danger", layout=auto,
                                  tooltip="SIGKILL by PID; a new worker takes the slot")
            freeze = button(description="freeze", button_style="info", layout=auto, tooltip="SIGSTOP")
            thaw = button(description="thaw", layout=auto, tooltip="SIGCONT")
            drop = button(description="drop link", button_style="warning", layout=auto,
                                  tooltip="CLIENT KILL the worker's link")
            kill.on_click(lambda _b, i=i: self._guard(lambda: self.model.kill(i)))
            freeze.on_click(lambda _b, i=i: self._guard(lambda: self.model.freeze(i)))
            thaw.on_click(lambda _b, i=i: self._guard(lambda: self.model.thaw(i)))
            drop.on_click(lambda _b, i=i: self._guard(lambda: self.model.drop_link(i)))
            row = widgets.HBox([label, kill, freeze, thaw, drop], layout=widgets.Layout(align_items="center"))
            row.add_class("emq-slot")
            rows.append(row)
            self.slot_html.append(label)
            self.kill_buttons.append(kill)
            self.freeze_buttons.append(freeze)
            self.thaw_buttons.append(thaw)
            self.drop_buttons.append(drop)
        self.enqueue_button.on_click(lambda _b: self._guard(lambda: self.model.produce(self.batch_input.value)))
        self.restart_button.on_click(lambda _b: self._guard(self.model.restart_node))
        self.flush_button.on_click(lambda _b: self._guard(self.model.script_flush))
        self.refresh_button.on_click(lambda _b: self._guard(lambda: None))

        self.figure = new_figure(6.4, 2.7)
        self.plot = Picture(704)
        self.events_html = widgets.HTML(layout=widgets.Layout(flex="1 1 280px", min_width="260px"))
        self.verdict_html = widgets.HTML()
        self.timeline_image = Picture(1056, layout=widgets.Layout(display="none"))
        self.timeline_figure: Any = None
        self._timeline_round: tuple[int, float] | None = None

        controls = widgets.HBox(
            [self.batch_input, self.enqueue_button, self.restart_button, self.flush_button, self.refresh_button],
            layout=widgets.Layout(align_items="center", flex_flow="row wrap"),
        )
        middle = widgets.HBox([self.plot, self.events_html], layout=widgets.Layout(flex_flow="row wrap"))
        super().__init__(
            [stylesheet(),  # once: the HTML values below carry no sheet of their own
             self.title_html, controls, self.status, widgets.VBox(rows), middle, self.verdict_html,
             self.timeline_image],
            layout=widgets.Layout(width="100%"),
        )
        try:
            if jobs:
                self.enqueue(jobs)
            else:
                self.model.sample()
                self._draw_all()
        except BaseException:
            self.close()  # its worker processes are running: a widget that failed to build stops them now
            raise

    def __repr__(self) -> str:
        # nbval compares the text/plain repr: what the widget shows, no ids, no clocks
        n = self.model.size if self.model is not None else 0
        return f"ChaosView({n} workers): live set sizes; kill/freeze/thaw/drop link; restart node; verdict at drain"

    # -- what the notebook reads --------------------------------------------------------------------------------
    @property
    def queue(self) -> str:
        return self.model.queue

    @property
    def verdict(self) -> RoundVerdict | None:
        """The last round's verdict (``.report``, ``.summary``, ``.valid``), None before the first drain."""
        return self.model.verdict

    @property
    def status_text(self) -> str:
        return self._status_text()

    def slots(self) -> list[SlotState]:
        return self.model.slots()

    # -- the actions (each as its button does it; a refusal is shown in the widget and raised) ---------------
    def enqueue(self, n: int | None = None) -> list[str]:
        """Enqueue ``n`` jobs (the box's value when not given)."""
        if n is not None:
            self.batch_input.value = n
        return self._guard(lambda: self.model.produce(self.batch_input.value), raise_=True)

    def kill(self, slot: int) -> SlotState:
        return self._guard(lambda: self.model.kill(slot), raise_=True)

    def freeze(self, slot: int) -> SlotState:
        return self._guard(lambda: self.model.freeze(slot), raise_=True)

    def thaw(self, slot: int) -> SlotState:
        return self._guard(lambda: self.model.thaw(slot), raise_=True)

    def drop_link(self, slot: int) -> int:
        return self._guard(lambda: self.model.drop_link(slot), raise_=True)

    def restart_node(self) -> tuple[int | None, int | None]:
        return self._guard(self.model.restart_node, raise_=True)

    def script_flush(self) -> None:
        self._guard(self.model.script_flush, raise_=True)

    def refresh(self) -> None:
        """Read the sizes now, redraw, and watch again if the round is not over."""
        self._guard(lambda: None, raise_=True)

    def wait_drained(self, timeout: float = 60.0) -> RoundVerdict | None:
        """Block (bounded) until the round drains and is judged; answers the verdict (None if it did not drain).

        Everything is drawn again and sent from this thread: a notebook run with
        stored outputs keeps what a cell's own messages carried, not a thread's.
        """
        self.watch.stop()
        v = self.model.wait_drained(timeout, on_sample=self._draw_live)
        self._draw_all()
        self._send_all()
        return v

    def stop(self) -> None:
        """Stop the animation, then every worker process by its PID and the metronome; drop the run's own queue.

        The widget stays on the page with its last picture and verdict, its buttons off.
        """
        watch = getattr(self, "watch", None)
        if watch is not None:
            watch.stop()
        model = getattr(self, "model", None)
        if model is not None and not model.closed:
            model.close()
            if hasattr(self, "status"):
                # each slot now says "ended", with its worker's exit: what stop() did, on the page
                for slot, label in zip(model.slots(), self.slot_html):
                    label.value = wrap(slot_html(slot, model.lease_ms))
                self._draw_status()
                self._buttons()

    def close(self) -> None:
        """``stop()``, then take the widget off the page (ipywidgets' close)."""
        self.stop()
        super().close()

    # -- inside -------------------------------------------------------------------------------------------------
    def _guard(self, fn: Callable[[], Any], raise_: bool = False) -> Any:
        """Run one action; a refusal becomes a message beside the buttons (and is raised for a direct call)."""
        try:
            out = fn()
            self.error = None
        except Exception as exc:  # noqa: BLE001 - shown in the widget, kept for tests
            self.error = f"{type(exc).__name__}: {exc}"
            self._draw_all()
            if raise_:
                raise
            return None
        self.model.sample()
        self._draw_all()
        m = self.model
        if m.enqueued and not (m.judged or m.ended or m.closed):
            self.watch.start()
        return out

    def _tick(self) -> bool:
        go = self.model.tick()
        if go:
            self._draw_live()
        else:
            self._draw_all()
        return go

    def _watch_ended(self, reason: str) -> None:
        self._draw_status()

    def _expired(self) -> None:
        self.watch.stop()
        self._draw_all()

    def _send_all(self) -> None:
        """Send every part's whole state again (a value unchanged since a thread drew it sends nothing)."""
        with self._draw_lock:
            parts = [self.status, self.plot, self.events_html, self.verdict_html, self.timeline_image,
                     self.timeline_image.layout,
                     *self.slot_html, *self.kill_buttons, *self.freeze_buttons, *self.thaw_buttons, *self.drop_buttons,
                     self.enqueue_button, self.restart_button, self.flush_button, self.refresh_button]
            for w in parts:
                w.send_state()

    def _draw_all(self) -> None:
        with self._draw_lock:
            self._draw_live(force=True)
            self._draw_verdict()

    def _draw_live(self, force: bool = False) -> None:
        """Slots, status and events every time; the sizes plot at most every ``redraw_every`` s."""
        with self._draw_lock:
            m = self.model
            if not m.closed:
                lease = m.lease_ms
                for s, label in zip(m.slots(), self.slot_html):
                    label.value = wrap(slot_html(s, lease))
            self._draw_status()
            self._draw_events()
            self._buttons()
            if force or time.monotonic() - self._drawn_at >= self.redraw_every:
                xs, sizes = m.series_copy()
                marks = [(m.seconds(e.at_ms), e.label, EVENT_COLOURS.get(e.kind, "#59636e"))
                         for e in m.round_events()]
                lo = m.seconds(m.round_start_ms)
                hi = max([lo + 1.0, *xs[-1:]])
                alt = draw_sizes(self.figure, xs, sizes, title=f"set sizes · round {m.round}", marks=marks,
                                 xlabel="seconds since the first worker's first call (node clock)",
                                 xlim=(max(0.0, lo - 0.2), hi + 0.2))
                self.plot.show(self.figure, alt)
                self._drawn_at = time.monotonic()

    def _status_text(self) -> str:
        m = self.model
        last = m.last
        sizes = " · ".join(f"{k} {v}" for k, v in last.sizes.items()) if last else "no sample yet"
        settled = last.settled if last else 0
        head = f"round {m.round} · {m.enqueued} enqueued · {settled} settled · {sizes}"
        if m.closed:
            # a stopped widget stays on the page: it says how to get a live one back
            tail = "closed: every worker process was stopped by its PID · run this widget's cell again to play on"
        elif m.ended:
            tail = m.ended  # the run's time bound: its workers are stopped, and it says how to go on
        elif m.judged and m.verdict is not None:
            tail = f"drained · verdict: {m.verdict.verdict}"
        else:
            tail = m.waiting_for()
            if self.watch.reason == "limit" and not self.watch.alive:
                tail += f" · stopped watching after {self.watch.limit_s:.0f} s: refresh to look again"
            elif self.watch.reason and self.watch.reason.startswith("error"):
                tail += f" · the watch stopped on an {self.watch.reason}"
        return f"{head}\n{tail}"

    def _draw_status(self) -> None:
        head, tail = self._status_text().split("\n", 1)
        err = f'<div class="emq-error">{esc(self.error)}</div>' if self.error else ""
        self.status.value = wrap(f'<div class="emq-head">{esc(head)}</div><div class="emq-chaos-why">{esc(tail)}</div>'
                                 f"{err}")

    def _draw_events(self) -> None:
        m = self.model
        evs = m.round_events()[-_EVENTS_SHOWN:]
        if not evs:
            body = '<div class="emq-none">nothing done yet this round</div>'
        else:
            body = "".join(f'<div class="emq-event emq-ev-{esc(e.kind)}"><code>+{m.seconds(e.at_ms):.1f} s</code> '
                           f"{esc(e.text)}</div>" for e in evs)
        self.events_html.value = wrap(f'<div class="emq-events"><div class="emq-events-head">what you did '
                                      f"(round {m.round})</div>{body}</div>")

    def _draw_verdict(self) -> None:
        m = self.model
        v = m.verdict
        if v is None:
            self.verdict_html.value = wrap('<div class="emq-none">the checker\'s verdict appears when the queue '
                                           "drains</div>")
            return
        if self._timeline_round == (v.round, v.at_ms):
            return
        self.verdict_html.value = wrap(verdict_html(v))
        lanes = len([w for w in v.history.workers() if w not in ("producer", "nemesis")])
        fig = new_figure(9.6, 0.42 * lanes + 1.9, layout=None)
        draw_timeline(v.history, v.report, ax=fig.add_subplot(), title=f"the run after round {v.round}")
        self.timeline_figure = fig
        self.timeline_image.show(fig, description(fig))
        self.timeline_image.layout.display = ""
        self._timeline_round = (v.round, v.at_ms)

    def _buttons(self) -> None:
        m = self.model
        over = m.closed or m.ended is not None
        for b in (self.enqueue_button, self.restart_button, self.flush_button, self.refresh_button):
            b.disabled = over
        slots = [] if m.closed else m.slots()
        for i in range(m.size):
            s = slots[i] if slots else None
            self.kill_buttons[i].disabled = over
            self.freeze_buttons[i].disabled = over or s is None or s.state != "running"
            self.thaw_buttons[i].disabled = over or s is None or s.state != "frozen"
            self.drop_buttons[i].disabled = over or s is None or s.state == "ended"

