"""The chaos widget, headless: ChaosRun and ChaosView on real worker processes and a real node.

Every button is clicked in the kernel (``button.click()``) and acts on a real
process (by PID) or the real node. Every run a test makes is closed by the
``made`` fixture, which stops its processes by PID even when the test fails,
and then checks that each PID is gone. Every wait is a bound, never a
measurement.
"""

from __future__ import annotations

import os
import threading
import time

import nbformat
import pytest
from conftest import gone, state, wait_for
from echomq_widgets import ChaosRun, ChaosView
from echomq_widgets.chaos_model import MAX_BATCH, Watch

from echomq_teach import keyspace
from echomq_teach.errors import BadInput
from echomq_teach.lab.run import Run
from echomq_teach.lab.worker import WorkerOptions

PNG = b"\x89PNG\r\n\x1a\n"


def is_png(value) -> bool:
    return bytes(value[:8]) == PNG




@pytest.fixture
def made():
    """Collects every ChaosRun / ChaosView a test makes; closes each at teardown and checks its PIDs are gone."""
    things: list = []
    yield things
    pids: list[int] = []
    for t in things:
        m = t.model if isinstance(t, ChaosView) else t
        if m is not None:
            pids += m.pids
        t.close()
    assert [p for p in pids if not gone(p)] == []


def worker_children() -> set[int]:
    """The worker processes this test process started that still run (read from /proc)."""
    out = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if ppid == os.getpid() and b"echomq_teach.lab.worker" in cmd:
            out.add(int(d))
    return out



def mid_handler(m: ChaosRun, worker: str) -> str | None:
    """The job ``worker`` is running its handler for (its last note is a ``run``), or None."""
    mine = [o for o in m.run.history().ops if o.worker == worker]
    return mine[-1].job if mine and mine[-1].op == "run" else None


def freeze_mid_handler(m: ChaosRun, slot: int) -> str:
    """Freeze the slot's worker while it runs a handler (bounded tries); answers the job it holds."""
    name = m.slots()[slot].worker
    for _ in range(20):
        wait_for(lambda: mid_handler(m, name) is not None, f"{name} runs a handler")
        m.freeze(slot)
        held = mid_handler(m, name)  # frozen now: its history cannot move on
        if held is not None:
            return held
        m.thaw(slot)
    raise AssertionError(f"{name} was never frozen inside a handler")


def node_pid(node) -> int:
    return node.pid


# -- the model ---------------------------------------------------------------------------------------------
def test_a_run_with_a_kill_and_a_zombie_drains_and_is_judged_valid(durable, made):
    m = ChaosRun(durable, workers=3, lease_ms=1_000, work_ms=80, tick_ms=50)
    made.append(m)
    first = m.pids
    assert len(first) == 3 and [s.state for s in m.slots()] == ["running"] * 3
    assert not m.drained and m.waiting_for() == "no jobs yet: enqueue some"
    ids = m.produce(60)
    assert len(ids) == 60 and m.enqueued == 60

    after = m.kill(0)
    assert (after.worker, after.state, after.killed) == ("w0b", "running", ("w0",))
    assert gone(first[0]) and after.pid not in first

    held = freeze_mid_handler(m, 1)
    wait_for(lambda: m.slots()[1].frozen_ms > m.lease_ms, "w1 frozen past its lease")
    assert m.slots()[1].describe(m.lease_ms).startswith("w1 pid ")
    assert "past its lease" in m.slots()[1].describe(m.lease_ms)
    # the job w1 holds goes back by reap and another worker completes it while w1 sleeps
    done = keyspace.queue_key(m.queue, "stream:completions")
    wait_for(lambda: any(f["id"] == held for _, f in m.reader.client.xrange(done)), "the held job completes")
    m.sample()
    assert not m.drained  # a frozen worker keeps the round open
    m.thaw(1)

    v = m.wait_drained(60)
    assert v is not None, m.waiting_for()
    assert v.valid and v.verdict == "valid", v.summary
    r = v.report
    assert (r.enqueued, r.settled, r.lost, r.settled_twice) == (60, 60, [], [])
    assert r.stale_refused >= 1 and held in r.recovered and r.handler_runs[held] == 2
    assert v.summary.startswith("verdict: valid")
    zombie = [o for o in v.history.calls("complete") if o.worker == "w1" and o.job == held]
    assert [o.reply for o in zombie] == ["stale"]
    # the sizes were sampled on the node's clock, and the last sample is the drained queue
    assert len(m.series) >= 2 and m.series.now_ms == sorted(m.series.now_ms)
    assert {s: m.series.sizes[s][-1] for s in ("pending", "active", "schedule")} == \
        {"pending": 0, "active": 0, "schedule": 0}
    assert [e.label for e in m.events] == ["enqueue", "kill w0", "freeze w1", "thaw w1"]
    assert "refused stale" in m.events[-1].text
    assert m.judged and not m.tick()  # a judged round stops the watch

    # the next action opens round 2, with its own samples and events
    m.produce(10)
    assert m.round == 2 and not m.judged and [e.kind for e in m.round_events()] == ["enqueue"]
    v2 = m.wait_drained(60)
    assert v2 is not None and v2.round == 2 and v2.report.enqueued == 70 and v2.valid


def test_a_node_restart_drop_link_and_script_flush(durable, made, queue):
    m = ChaosRun(durable, queue, workers=2, lease_ms=400, work_ms=10, tick_ms=50)
    made.append(m)
    m.produce(200)
    old_pid = durable.pid
    wait_for(lambda: m.sample() is not None and m.last.settled > 0, "work has begun")
    assert m.drop_link(0) >= 1
    m.script_flush()
    was, now = m.restart_node()
    assert was == old_pid and now == durable.pid != old_pid
    v = m.wait_drained(60)
    assert v is not None and v.valid, v.summary if v else m.waiting_for()
    assert v.report.settled == 200
    assert [e.kind for e in m.events] == ["enqueue", "drop_link", "script_flush", "restart"]
    notes = [o.op for o in v.history.notes() if o.worker == "nemesis"]
    assert notes == ["drop_link", "script_flush", "restart", "restarted"]
    # a queue named by the caller is left as it is on close
    m.close()
    c = durable.connector()
    try:
        assert c.client.xlen(keyspace.queue_key(queue, "stream:completions")) == 200
    finally:
        c.close()


def test_bad_input_is_refused_and_changes_nothing(node, conn, made):
    with pytest.raises(BadInput, match="workers must be 1 … 8"):
        ChaosRun(node, workers=9)
    with pytest.raises(BadInput, match="workers must be 1 … 8"):
        ChaosRun(node, workers=0)
    with pytest.raises(BadInput, match="lifetime_s"):
        ChaosRun(node, lifetime_s=0)
    with pytest.raises(BadInput, match="queue name"):
        ChaosRun(node, "no spaces")
    m = ChaosRun(node, workers=2, lease_ms=400, work_ms=5, tick_ms=50)
    made.append(m)
    m.produce(5)
    assert m.wait_drained(30) is not None
    with pytest.raises(BadInput, match=r"the queue '.+' is in use \(5 settles in its stream\): the checker"):
        ChaosRun(node, m.queue)  # a queue that already saw jobs: its settles would look unexpected
    m.freeze(1)
    before = state(conn, m.queue)
    procs, events = list(m.pids), list(m.events)
    nemesis = len(m.run.history().notes())
    for call, words in (
        (lambda: m.kill(2), r"no worker slot 2: the slots are 0 … 1 \(workers w0 … w1\)"),
        (lambda: m.freeze(-1), "no worker slot -1"),
        (lambda: m.thaw("w1"), "no worker slot 'w1'"),
        (lambda: m.drop_link(True), "no worker slot True"),
        (lambda: m.thaw(0), "w0 is not frozen: nothing to thaw"),
        (lambda: m.freeze(1), "w1 is frozen already: thaw it first"),
        (lambda: m.restart_node(), "durable"),  # a node without persistence would come back empty
        (lambda: m.produce(0), f"enqueue takes 1 … {MAX_BATCH} jobs at a time, got 0"),
        (lambda: m.produce(MAX_BATCH + 1), "enqueue takes 1"),
        (lambda: m.produce(2.5), "enqueue takes 1"),
        (lambda: m.wait_drained(0), "timeout"),
    ):
        with pytest.raises(BadInput, match=words):
            call()
    assert state(conn, m.queue) == before
    assert m.pids == procs and m.events == events
    assert len(m.run.history().notes()) == nemesis  # no fault was recorded either
    assert [s.state for s in m.slots()] == ["running", "frozen"]
    with pytest.raises(BadInput, match="interval"):
        Watch(lambda: True, interval=0)
    with pytest.raises(BadInput, match="limit_s"):
        Watch(lambda: True, limit_s=10_000)


def test_a_run_ends_at_its_time_bound_and_stops_its_processes(node, made):
    # a bound a loaded machine's start of two workers cannot reach before the checks below it
    m = ChaosRun(node, workers=2, lifetime_s=5, tick_ms=50)
    made.append(m)
    fired = threading.Event()
    m.on_expire = fired.set
    pids = m.pids
    metronome = f"metronome-{m.queue}"  # the kit's Metronome, recorded (lab.run.RecordedMetronome)
    assert any(t.name == metronome for t in threading.enumerate())
    assert fired.wait(20)
    assert m.ended and "time bound of 5 s" in m.ended and "cell again" in m.ended
    assert all(gone(p) for p in pids)
    assert [s.state for s in m.slots()] == ["ended", "ended"]
    assert not any(t.name == metronome for t in threading.enumerate())
    with pytest.raises(BadInput, match="time bound"):
        m.produce(1)
    assert not m.tick() and m.waiting_for() == m.ended


def test_watch_is_bounded_and_keeps_its_error():
    ticks = []
    w = Watch(lambda: ticks.append(1) or True, interval=0.01, limit_s=0.3)
    assert w.start() and not w.start()  # one loop at a time
    wait_for(lambda: not w.alive, "the watch reaches its limit", 10)
    assert w.reason == "limit" and len(ticks) >= 2

    w = Watch(lambda: True, interval=0.01, limit_s=60)
    w.start()
    w.stop()
    assert not w.alive and w.reason == "stopped"

    ended = []
    w = Watch(lambda: 1 / 0, interval=0.01, on_end=ended.append)
    w.start()
    wait_for(lambda: not w.alive, "the failing watch ends", 10)
    assert w.reason == ended[0] == "error: ZeroDivisionError: division by zero"


# -- the view: its buttons clicked in the kernel ---------------------------------------------------------------
def test_clicking_every_button_on_real_processes_ends_in_a_valid_verdict(durable, made):
    v = ChaosView(durable, workers=3, batch=240, lease_ms=400, work_ms=40, tick_ms=50)
    made.append(v)
    assert is_png(v.plot.png) and "appears when the queue drains" in v.verdict_html.value
    assert not v.watch.alive  # nothing to watch before there are jobs
    assert [b.disabled for b in v.thaw_buttons] == [True] * 3
    w0 = v.slots()[0].pid
    assert f'data-pid="{w0}"' in v.slot_html[0].value

    v.enqueue_button.click()
    assert v.error is None and v.model.enqueued == 240
    assert v.watch.alive  # the sizes animate while the queue drains

    v.kill_buttons[0].click()
    assert v.error is None and gone(w0)
    s0 = v.slots()[0]
    assert (s0.worker, s0.killed) == ("w0b", ("w0",))
    assert "w0b" in v.slot_html[0].value and "replaced w0 (killed)" in v.slot_html[0].value

    v.freeze_buttons[1].click()
    assert v.slots()[1].state == "frozen"
    assert v.freeze_buttons[1].disabled and not v.thaw_buttons[1].disabled
    wait_for(lambda: v.slots()[1].frozen_ms > 400, "w1 frozen past its lease")
    v.thaw_buttons[1].click()
    assert v.error is None and v.slots()[1].state == "running"

    v.drop_buttons[2].click()
    old = durable.pid
    v.restart_button.click()
    assert v.error is None and durable.pid != old
    v.flush_button.click()
    assert v.error is None
    labels = [e.label for e in v.model.events]
    assert labels == ["enqueue", "kill w0", "freeze w1", "thaw w1", "drop link w2", "restart", "script flush"]
    for e in labels[1:]:
        assert e.split()[0] in v.events_html.value

    # the watch thread judges the round when it drains, then ends by itself
    wait_for(lambda: v.model.judged, "the round drains and is judged", 90)
    wait_for(lambda: not v.watch.alive, "the watch ends after the verdict", 30)
    assert v.watch.reason == "done"
    assert "verdict: valid" in v.verdict_html.value, v.verdict.summary
    assert "verdict: valid" in v.status.value and "drained" in v.status_text
    assert is_png(v.timeline_image.png) and v.timeline_image.layout.display == ""
    assert v.timeline_image.alt.startswith(f"Timeline: the run after round {v.verdict.round}")
    assert v.verdict.report.enqueued == v.verdict.report.settled == 240
    assert is_png(v.plot.png)

    # after a verdict, enqueue opens round 2; wait_drained judges it in this thread
    r = v.model.round
    v.enqueue(30)
    assert v.model.round == r + 1
    got = v.wait_drained(60)
    assert got is not None and got.round == r + 1 and got.valid and not v.watch.alive
    assert f"after round {r + 1}" in v.verdict_html.value

    pids = v.model.pids
    v.close()
    assert all(gone(p) for p in pids) and not v.watch.alive
    assert v.enqueue_button.disabled and all(b.disabled for b in v.kill_buttons)
    assert "closed: every worker process was stopped by its PID" in v.status_text
    assert "cell again" in v.status_text  # and how to get a live one back
    # the run's own queue is dropped on close
    c = durable.connector()
    try:
        assert not c.client.keys(keyspace.queue_key(v.queue, "*"))
    finally:
        c.close()


def test_bad_input_in_the_view_is_shown_and_changes_nothing(node, conn, made):
    with pytest.raises(BadInput, match="workers must be 1 … 8"):
        ChaosView(node, workers=9)
    before_threads, before_workers = {t.name for t in threading.enumerate()}, worker_children()
    with pytest.raises(BadInput, match="enqueue takes 1 … 5000 jobs at a time, got 9999"):
        ChaosView(node, workers=1, jobs=9_999)  # its worker had started: the failed widget stopped it
    assert not {t.name for t in threading.enumerate() if t.name.startswith("run-metronome-")} - before_threads
    assert worker_children() == before_workers
    v = ChaosView(node, workers=2, work_ms=5)
    made.append(v)
    assert set(v.model.pids) <= worker_children()  # the helper above does see running workers
    q = v.queue
    before, pids = state(conn, q), list(v.model.pids)
    v.restart_button.click()  # this node keeps no data across a restart
    assert "durable" in v.error and "durable" in v.status.value and 'class="emq-error"' in v.status.value
    assert v.model.events == []
    v.batch_input.value = 0
    v.enqueue_button.click()
    assert "enqueue takes 1 … 5000 jobs at a time, got 0" in v.error
    with pytest.raises(BadInput, match="no worker slot 7"):
        v.kill(7)
    assert "no worker slot 7" in v.status.value
    assert state(conn, q) == before and v.model.pids == pids
    assert [s.state for s in v.slots()] == ["running", "running"]
    # a good action clears the message
    v.enqueue(3)
    assert v.error is None and 'class="emq-error"' not in v.status.value


def test_closing_mid_animation_stops_the_thread_and_every_process(node, made):
    v = ChaosView(node, workers=2, jobs=3000, work_ms=20)
    made.append(v)
    assert v.watch.alive
    pids = v.model.pids
    v.close()
    assert not v.watch.alive and v.watch.reason == "stopped"
    assert all(gone(p) for p in pids)
    assert not any(t.name.startswith("run-metronome-") and v.queue in t.name for t in threading.enumerate())


def test_the_text_fallback_says_what_it_shows(node, made):
    v = ChaosView(node, workers=2)
    made.append(v)
    text = v._repr_mimebundle_()["text/plain"]
    assert text == repr(v) == ("ChaosView(2 workers): live set sizes; kill/freeze/thaw/drop link; restart node; "
                               "verdict at drain")
    assert len(text) <= 110  # ipywidgets cuts a longer one


def test_a_notebook_run_stores_the_last_plot_and_the_verdict(tmp_path):
    """Run as nbconvert runs the course: the stored widget state holds the verdict and the figures."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in (
        "from echomq_teach import start_node\nfrom echomq_widgets import ChaosView\nnode = start_node()",
        "chaos = ChaosView(node, workers=2, jobs=40, lease_ms=400, work_ms=20)\nchaos",
        "chaos.kill(0)\nv = chaos.wait_drained(60)\nprint(v.verdict, v.report.settled)",
        "pids = chaos.model.pids\nchaos.close()\nnode.stop()\nprint(pids)",
    )]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    assert nb.cells[2].outputs[0]["text"] == "valid 40\n"
    pids = [int(p) for p in nb.cells[3].outputs[0]["text"].strip("[]\n").split(",")]
    assert all(gone(p) for p in pids)
    assert nb.cells[1].outputs[0]["data"]["text/plain"].startswith("ChaosView(2 workers): live set sizes")
    state_ = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    html = [s["state"].get("value", "") for s in state_.values() if s["model_name"] == "HTMLModel"]
    assert any("verdict: valid" in h and "the checker" in h for h in html)
    # the sizes plot and the timeline: each an <img> with its text alternative, the timeline shown
    pictures = [s["state"] for s in state_.values()
                if s["model_name"] == "HTMLModel" and 'class="emq-picture"' in s["state"].get("value", "")]
    assert sorted(p["value"].split('alt="')[1][:10] for p in pictures) == ["Plot: set ", "Timeline: "]
    assert all("src=\"data:image/png;base64,iVBORw0KGgo" in p["value"] for p in pictures)
    timeline = next(p for p in pictures if 'alt="Timeline: ' in p["value"])
    assert state_[timeline["layout"].removeprefix("IPY_MODEL_")]["state"].get("display") != "none"


# -- the Run's one addition ------------------------------------------------------------------------------------
def test_run_passes_idle_ms_to_its_workers(node, queue, tmp_path):
    with pytest.raises(BadInput, match="idle_ms"):
        Run(node, queue, idle_ms=0, folder=tmp_path / "bad")
    with Run(node, queue, workers=1, idle_ms=70, folder=tmp_path / "r") as run:
        w = run.spawn(0)
        try:
            w.wait_ready()
            # the worker is told its options as one JSON argument, read back as the same dataclass
            assert WorkerOptions.from_json(w.command[-1]).idle_ms == 70 == w.options.idle_ms
        finally:
            run.stop()
    assert gone(w.pid)



def test_stop_ends_every_process_and_leaves_the_widget_on_the_page(durable, made):
    view = ChaosView(durable, workers=2, jobs=20, lease_ms=800, work_ms=5)
    made.append(view)
    assert view.wait_drained(timeout=60) is not None
    pids = list(view.model.pids)
    view.stop()
    assert view.model.closed and view.comm is not None  # still on the page: its last picture stays
    assert all(gone(p) for p in pids)
    assert all('data-state="ended"' in label.value for label in view.slot_html)
    view.close()
    assert view.comm is None


def test_a_judged_widget_that_reaches_its_time_bound_says_how_to_go_on(node, made):
    # Run All leaves the widget judged; ten minutes on its run ends: the status must say so, not the old verdict
    # a bound the drain and its verdict stay inside even on a loaded machine (4 s did not, at load 30)
    v = ChaosView(node, workers=2, jobs=10, work_ms=5, lifetime_s=12, tick_ms=50)
    made.append(v)
    got = v.wait_drained(30)
    assert got is not None and got.valid and "drained · verdict: valid" in v.status_text
    pids = v.model.pids
    deadline = time.monotonic() + 20
    # the run sets its ending, then stops its workers by PID: wait (bounded) for both
    while not (v.model.ended and all(gone(p) for p in pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert v.model.ended is not None and all(gone(p) for p in pids)
    assert "time bound of 12 s" in v.status_text and "cell again" in v.status_text
    assert "drained · verdict" not in v.status_text
    assert v.enqueue_button.disabled
