"""The widgets, headless: ``button.click()`` drives each one; then the widget's state AND the node's.

Every click is a real call on a real node; the assertions read snapshots taken
through a separate connector, never the widget's own idea of the state.
"""

from __future__ import annotations

import threading

import pytest
from echomq_widgets import CounterPlot, ExecutorView, FlowComposer, LifecycleStepper, SetView
from echomq_widgets.compare import SCENARIOS
from echomq_widgets.model import ms, when
from echomq_widgets.render import setview_html
from echomq_widgets.steps import Lifecycle, Settings, path_steps

from echomq_teach import flows, jobs, snapshots
from echomq_teach.consumer import Consumer, Error


def snap(conn, queue):
    return snapshots.snapshot(conn, queue)


def scripts_sent(conn):
    return [e.script for e in conn.trace if e.script]


# -- wording ----------------------------------------------------------------------------------------
def test_ms_reads_like_the_page():
    assert ms(29_998) == "+29 998 ms"
    assert ms(-3) == "−3 ms"
    assert ms(1_234_567, sign=False) == "1 234 567 ms"


# -- SetView ------------------------------------------------------------------------------------------
def test_setview_draws_the_four_sets_relative_to_server_now(conn, queue):
    view = SetView(conn, queue)
    assert view.snapshot is not None and view.snapshot.total() == 0
    job = view.run(lambda: jobs.enqueue(conn, queue, "hello"))
    assert view.changed == [f"{job}: nowhere → pending", f"{job}: row written (state pending)"]
    assert f'data-id="{job}"' in view.html.value and "score 0" in view.html.value

    claimed = jobs.claim(conn, queue, 30_000)
    assert claimed is not None
    after = view.refresh()
    assert after.where(job) == ["active"]
    rel = after.relative("active", job)
    assert 0 < rel <= 30_000
    assert f"deadline in {ms(rel)}" in view.html.value
    assert f"{job}: pending → active" in view.changed
    assert f"{job}.attempts: 0 → 1" in view.changed
    # the moved id is highlighted where it is now, and its old place is struck through
    assert f'class="emq-entry emq-chg" data-id="{job}"' in view.html.value
    assert f'class="emq-entry emq-gone" data-id="{job}"' in view.html.value
    assert "active" in view.text and job in view.text


def test_setview_shows_the_server_clock_relative_not_as_an_epoch(conn, queue):
    first = snap(conn, queue)
    jobs.enqueue(conn, queue, "x")
    second = snap(conn, queue)
    alone, after = setview_html(first), setview_html(second, first)
    # no raw epoch (13 digits of ms) on the page: the time of day alone, then the time since the previous picture
    for page in (alone, after):
        assert str(first.now_ms) not in page and str(second.now_ms) not in page
    assert "UTC" in alone and "since the previous picture" not in alone
    assert f"+{second.now_ms - first.now_ms:,} ms</code> since the previous picture" in after


def test_setview_reads_through_its_own_connector(conn, queue):
    conn.clear_trace()
    view = SetView(conn, queue)
    view.refresh()
    assert "@snapshot" not in scripts_sent(conn)
    view.close()


def test_setview_marks_schedule_and_dead_scores(conn, queue):
    job = jobs.enqueue(conn, queue, "x")
    c = jobs.claim(conn, queue, 30_000)
    assert jobs.retry(conn, queue, job, c.attempts, "boom", 60_000, 3) == jobs.SCHEDULED
    s = snap(conn, queue)
    assert when(s, "schedule", job).startswith("run-at in +")
    assert "run-at in +" in setview_html(s)
    other = jobs.enqueue(conn, queue, "y")
    c2 = jobs.claim(conn, queue, 30_000)
    assert c2.id == other
    jobs.retry(conn, queue, other, c2.attempts, "boom", 1, 1)
    s = snap(conn, queue)
    assert when(s, "dead", other).startswith("died ")
    assert "died " in setview_html(s)


# -- LifecycleStepper: the happy path ----------------------------------------------------------------------
def test_stepper_happy_path_by_clicks(conn):
    st = LifecycleStepper(conn, path="happy")
    q = st.queue
    assert st.step_button.description == "Step ▸ enqueue"
    assert st.back_button.disabled
    assert snap(conn, q).total() == 0

    st.step_button.click()
    assert st.error is None
    job = st.job_id
    s = snap(conn, q)
    assert s.where(job) == ["pending"] and s.rows[job]["state"] == "pending" and s.rows[job]["attempts"] == "0"
    assert st.outcome.headline == "enqueue — enqueue/5 → @enqueue"
    assert st.outcome.caption == f"{job} is held in pending · row state pending, attempts 0"
    assert "EVALSHA &lt;sha&gt; 2" in st.trace_html.value
    assert st.set_view.snapshot.where(job) == ["pending"]

    st.step_button.click()
    s = snap(conn, q)
    assert s.where(job) == ["active"] and s.rows[job]["attempts"] == "1"
    out = st.outcome
    assert out.headline == "claim — claim/3 → @claim2"
    assert out.caption.startswith(f"{job} moved pending → active, deadline in +")
    assert "row state active, attempts 1" in out.caption
    # the host-side pause read is its own round trip, shown before the script
    lines = [e.line for e in out.call.entries]
    assert lines[0] == f"EXISTS emq:{{{q}}}:paused"
    assert lines[1].startswith("EVALSHA <sha> 3 ") and lines[1].endswith(" 30000")
    assert "EXISTS emq:{" in st.trace_html.value

    st.step_button.click()
    s = snap(conn, q)
    assert job not in s.rows and s.total() == 0 and s.completed == 1
    assert st.outcome.headline == "complete — complete/5 → @complete"
    assert "its row is deleted" in st.outcome.caption
    assert "row deleted" in st.set_view.html.value
    assert st.step_button.disabled and st.step_button.description == "done ✓"
    assert not st.back_button.disabled


def test_stepper_back_replays_on_a_fresh_queue(conn):
    st = LifecycleStepper(conn, path="happy")
    for _ in range(3):
        st.step_button.click()
    old_q, old_job = st.queue, st.job_id
    assert snap(conn, old_q).completed == 1

    st.back_button.click()
    assert st.error is None
    assert st.index == 2 and st.queue != old_q
    # the abandoned run's keys are gone, and the replay shows none of them
    old = snap(conn, old_q)
    assert old.total() == 0 and not old.rows and old.completed == 0
    s = snap(conn, st.queue)
    assert s.where(st.job_id) == ["active"] and st.job_id != old_job and s.completed == 0
    assert st.outcome.headline == "claim — claim/3 → @claim2"
    assert st.step_button.description == "Step ▸ complete"

    st.back_button.click()
    s = snap(conn, st.queue)
    assert st.index == 1 and s.where(st.job_id) == ["pending"]


def test_stepper_reset_and_path_switch(conn):
    st = LifecycleStepper(conn, path="happy")
    st.step_button.click()
    q = st.queue
    st.reset_button.click()
    assert st.index == 0 and st.queue != q
    assert snap(conn, q).total() == 0 and snap(conn, st.queue).total() == 0
    assert st.step_button.description == "Step ▸ enqueue"
    assert "ready — the happy path" in st.caption

    st.path_buttons.value = "recovery"
    assert st.path == "recovery" and st.index == 0
    assert [s.name for s in st.model.steps] == [s.name for s in path_steps("recovery")]
    assert st.step_button.description == "Step ▸ enqueue"


def test_stepper_keeps_snapshots_out_of_the_learners_trace(conn):
    conn.clear_trace()
    st = LifecycleStepper(conn, path="happy")
    st.step_button.click()
    st.step_button.click()
    assert scripts_sent(conn) == ["@enqueue", "@claim2"]


def test_stepper_fallback_says_what_it_shows(conn):
    # the text/plain a reader without a kernel sees (and nbval compares): the step and the set sizes, no ids
    st = LifecycleStepper(conn, path="failure")
    assert repr(st) == "Lifecycle stepper, failure path, step 0 of 6: pending 0, active 0, schedule 0, dead 0"
    st.step_button.click()
    st.step_button.click()
    text = st._repr_mimebundle_()["text/plain"]
    assert text == "Lifecycle stepper, failure path, step 2 of 6 (claim): pending 0, active 1, schedule 0, dead 0"
    assert "JOB" not in text and len(text) <= 110


def test_every_widget_fallback_is_short_and_says_what_it_shows(conn, native_conn):
    view = SetView(conn, "fallback-view")
    assert repr(view) == "Set view of queue fallback-view: pending 0, active 0, schedule 0, dead 0"
    fc = FlowComposer(conn, children=2)
    assert repr(fc).startswith("Flow composer: no flow landed yet")
    fc.land_button.click()
    fc.complete_button.click()
    assert repr(fc) == "Flow composer: :dependencies 2 → 1; the parent is awaiting_children"
    ev = ExecutorView(conn, native_conn, "claim")
    assert repr(ev) == (
        "Executor view, claim on both executors: documented differences command, field, score; undocumented 0"
    )
    for w in (view, fc, ev):
        text = w._repr_mimebundle_()["text/plain"]
        assert len(text) <= 110 and "JOB" not in text and "…" not in text


# -- the failure fork ----------------------------------------------------------------------------------------
def test_stepper_failure_path_into_dead(conn):
    st = LifecycleStepper(conn, path="failure", settings=Settings(retry_delay_ms=20))
    q = st.queue
    seen = []
    while not st.step_button.disabled:
        st.step_button.click()
        assert st.error is None, st.error
        seen.append((st.outcome.step.name, snap(conn, q)))
    names = [n for n, _ in seen]
    assert names == ["enqueue", "claim", "retry", "promote", "second claim", "final retry"]
    job = st.job_id
    by = dict(seen)
    assert by["retry"].where(job) == ["schedule"] and by["retry"].rows[job]["state"] == "scheduled"
    assert by["retry"].rows[job]["last_error"] == "boom"
    assert by["promote"].where(job) == ["pending"] and by["promote"].rows[job]["attempts"] == "1"
    assert by["second claim"].rows[job]["attempts"] == "2"
    end = by["final retry"]
    assert end.where(job) == ["dead"] and end.rows[job]["state"] == "dead" and end.rows[job]["last_error"] == "boom"
    assert st.outcome.call.reply == jobs.DEAD
    assert "attempts 2 = max_attempts 2" in st.outcome.detail
    assert st.outcome.caption.startswith(f"{job} moved active → dead, died ")
    promote = st.model.history[3]
    assert promote.call.reply == [job] and promote.headline == "promote — promote/3 → @promote"


def test_failure_path_wording_comes_from_the_real_calls(conn):
    m = Lifecycle(conn, "failure", settings=Settings(retry_delay_ms=20, reason="disk full"))
    m.run_all()
    retry = m.history[2]
    assert "run-at in +" in retry.caption and "last_error disk full" in retry.caption
    assert '{:error, "disk full"}' in retry.detail
    m.close()


# -- recovery ---------------------------------------------------------------------------------------------------
def test_stepper_recovery_path_refuses_the_late_completion(conn):
    st = LifecycleStepper(conn, path="recovery", settings=Settings(short_lease_ms=30))
    q = st.queue
    outs = {}
    while not st.step_button.disabled:
        st.step_button.click()
        assert st.error is None, st.error
        outs[st.outcome.step.name] = (st.outcome, snap(conn, q))
    job = st.job_id
    lapse, s_lapse = outs["lapse"]
    assert lapse.call.entries == []  # nothing was sent: the lease lapsed on the server clock
    assert s_lapse.where(job) == ["active"] and s_lapse.relative("active", job) < 0
    assert "lapsed" in st.model.history[2].caption
    reap, s_reap = outs["reap"]
    assert reap.call.reply == [job] and s_reap.where(job) == ["pending"] and s_reap.rows[job]["attempts"] == "1"
    _, s_reclaim = outs["reclaim"]
    assert s_reclaim.rows[job]["attempts"] == "2"
    late, s_late = outs["late complete"]
    assert late.call.reply == jobs.STALE and late.call.wrote_nothing
    assert s_late.state_only() == s_reclaim.state_only()
    assert late.caption.startswith("complete/5 with the old token 1 answered stale · nothing written")
    assert "changed by the last call: nothing" in st.set_view.html.value


def test_stepper_on_a_native_connector_names_the_command(native_conn):
    st = LifecycleStepper(native_conn, path="happy")
    st.step_button.click()
    st.step_button.click()
    assert st.outcome.headline == "claim — claim/3 → EMQ.CLAIM"
    assert st.outcome.call.entries[-1].line.startswith("EMQ.CLAIM 3 ")
    s = snap(native_conn, st.queue)
    assert "lease_epoch" in s.rows[st.job_id]
    st.step_button.click()
    assert st.outcome.headline == "complete — complete/5 → EMQ.COMPLETE"


# -- FlowComposer ------------------------------------------------------------------------------------------------
def test_composer_counter_ticks_to_zero_and_releases_the_parent(conn):
    fc = FlowComposer(conn, children=3)
    assert fc.complete_button.disabled and fc.fail_button.disabled
    fc.land_button.click()
    assert fc.error is None
    q, parent = fc.queue, fc.parent_id
    assert flows.dependencies(conn, q, parent) == 3
    s = snap(conn, q)
    assert s.rows[parent]["state"] == "awaiting_children" and s.where(parent) == []
    assert sorted(s.pending) == sorted(fc.child_ids)
    assert fc.events[-1].headline.startswith(
        "add/3 → @enqueue_flow: SET :dependencies = 3, parent held awaiting_children"
    )
    assert fc.caption == (
        "0 of 3 children done → each @complete DECR'd the counter → :dependencies = 3, parent still awaiting_children."
    )

    for k in (1, 2, 3):
        fc.complete_button.click()
        assert fc.error is None
        assert flows.dependencies(conn, q, parent) == 3 - k
        assert f"{k} of 3 children done" in fc.caption
    s = snap(conn, q)
    assert s.rows[parent]["state"] == "pending" and s.where(parent) == ["pending"]
    assert fc.parent_state == "pending"
    assert "released the parent to pending" in fc.caption
    assert fc.complete_button.description == "run the parent" and fc.fail_button.disabled
    assert len(flows.children_values(conn, q, parent)) == 3

    fc.complete_button.click()
    s = snap(conn, q)
    assert parent not in s.rows and s.completed == 4
    assert fc.parent_state == "done" and fc.complete_button.disabled
    assert fc.counter == [3, 2, 1, 0, 0]
    assert fc.plot.png[:8] == b"\x89PNG\r\n\x1a\n" and "outstanding after each action" in fc.plot.alt
    assert "job:" + parent + ":dependencies = 0" in fc.set_view.html.value


def test_composer_children_are_bounded_one_to_eight(conn):
    fc = FlowComposer(conn)
    assert (fc.children_input.min, fc.children_input.max) == (1, 8)
    fc.children_input.value = 8
    fc.land_button.click()
    assert len(fc.child_ids) == 8 and flows.dependencies(conn, fc.queue, fc.parent_id) == 8
    with pytest.raises(ValueError):
        fc.model.land(9)


@pytest.mark.parametrize(
    ("policy", "deps_after", "parent_state"),
    [
        ("fail", 3, "dead"),
        ("ignore", 2, "awaiting_children"),
        ("remove", 2, "awaiting_children"),
        ("wait", 3, "awaiting_children"),
    ],
)
def test_composer_fails_a_child_under_each_policy(conn, policy, deps_after, parent_state):
    fc = FlowComposer(conn, children=3)
    fc.policy_input.value = policy
    fc.land_button.click()
    q, parent = fc.queue, fc.parent_id
    first = fc.child_ids[0]
    fc.fail_button.click()
    assert fc.error is None
    s = snap(conn, q)
    assert s.where(first) == ["dead"]
    assert flows.dependencies(conn, q, parent) == deps_after
    assert s.rows[parent]["state"] == parent_state == fc.parent_state
    assert "1 dead" in fc.caption and f"policy {policy}" in fc.caption
    ignored = flows.ignored_failures(conn, q, parent)
    assert (first in ignored) == (policy == "ignore")
    assert fc.counter == [3, deps_after]
    assert not fc.reprocess_button.disabled


def test_composer_wait_policy_counts_the_child_once_reprocessed(conn):
    fc = FlowComposer(conn, children=2, policy="wait")
    fc.land_button.click()
    q, parent = fc.queue, fc.parent_id
    fc.fail_button.click()
    fc.complete_button.click()  # the second child
    assert flows.dependencies(conn, q, parent) == 1
    fc.reprocess_button.click()
    assert fc.error is None
    first = fc.child_ids[0]
    s = snap(conn, q)
    assert s.where(first) == ["pending"] and s.rows[first].get("parent") == parent
    fc.complete_button.click()
    assert flows.dependencies(conn, q, parent) == 0
    assert snap(conn, q).rows[parent]["state"] == "pending"
    assert fc.counter == [2, 2, 1, 1, 0]


def test_composer_land_again_starts_clean(conn):
    fc = FlowComposer(conn, children=2)
    fc.land_button.click()
    q1 = fc.queue
    fc.complete_button.click()
    fc.land_button.click()
    assert fc.queue != q1 and snap(conn, q1).total() == 0 and not snap(conn, q1).rows
    assert fc.counter == [2]


# -- CounterPlot ----------------------------------------------------------------------------------------------------
def test_counter_plot_records_per_step(conn):
    st = Lifecycle(conn, "happy")
    plot = CounterPlot()
    for out in st.run_all():
        plot.record(out.call.after, out.step.name)
    assert plot.series.labels == ["enqueue", "claim", "complete"]
    assert plot.series.sizes["pending"] == [1, 0, 0]
    assert plot.series.sizes["active"] == [0, 1, 0]
    assert plot.image.png[:4] == b"\x89PNG" and "pending 1 → 0 (at most 1)" in plot.image.alt
    assert repr(plot) == "Counter plot over steps: pending 1 → 0, active 0 → 0, schedule 0 → 0, dead 0 → 0"
    assert repr(CounterPlot()) == "Counter plot of pending, active, schedule, dead: no points yet"
    st.close()


def test_counter_plot_watches_a_consumer_run(conn, queue):
    for i in range(12):
        jobs.enqueue(conn, queue, f"job {i}")
    plot = CounterPlot(conn, queue)

    def handler(job):
        return Error("flaky") if job.payload == "job 3" and job.attempts == 1 else "ok"

    consumer = Consumer(conn.fork(), queue, handler, retry_delay_ms=1, max_attempts=2)
    worker = threading.Thread(target=consumer.run, kwargs={"until_idle": True, "timeout": 20})
    worker.start()
    n = plot.watch(seconds=30, interval=0.01, until=lambda: not worker.is_alive())
    worker.join()
    assert plot.x == "time" and n == len(plot.series) >= 2
    end = snap(conn, queue)
    assert end.total() == 0 and end.completed == 12
    # the last sample is the end state the node reports
    assert {s: plot.series.sizes[s][-1] for s in plot.series.sets} == end.sizes()
    assert plot.series.sizes["pending"][0] <= 12


def test_counter_plot_callback_from_a_run_loop(conn, queue):
    for i in range(3):
        jobs.enqueue(conn, queue, str(i))
    plot = CounterPlot(conn, queue)
    cb = plot.callback()
    consumer = Consumer(conn, queue, lambda job: "ok")
    for _ in range(4):
        consumer.beat()
        cb()
    assert plot.series.sizes["pending"] == [2, 1, 0, 0]


# -- ExecutorView ------------------------------------------------------------------------------------------
def test_executor_view_claim_side_by_side(conn, native_conn):
    ev = ExecutorView(conn, native_conn, "claim")
    cmp = ev.comparison
    assert cmp.scripted.call.reply == cmp.native.call.reply
    assert cmp.scripted.call.entries[-1].line.startswith("EVALSHA <sha> 3 ")
    assert cmp.native.call.entries[-1].line.startswith("EMQ.CLAIM 3 ")
    assert cmp.scripted.call.entries[-1].line.split()[2:] == cmp.native.call.entries[-1].line.split()[1:]
    kinds = {(d.kind, d.documented) for d in cmp.differences}
    assert ("command", True) in kinds and ("field", True) in kinds
    assert not cmp.undocumented
    # node state: lease_epoch only on the native row, and it is that server's run_id
    s_row = snap(conn, cmp.queue).rows[cmp.job_id]
    n_row = snap(native_conn, cmp.queue).rows[cmp.job_id]
    assert "lease_epoch" not in s_row and n_row["lease_epoch"] == native_conn.client.info("server")["run_id"]
    assert {k: v for k, v in n_row.items() if k != "lease_epoch"} == s_row
    assert "EMQ.CLAIM" in ev.cols_html.value and "lease_epoch" in ev.diff_html.value


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_executor_view_every_scenario_differs_only_as_documented(conn, native_conn, name):
    ev = ExecutorView(conn, native_conn, "claim", autorun=False)
    ev.step_input.value = name
    ev.run_button.click()
    assert ev.error is None, ev.error
    cmp = ev.comparison
    assert cmp.scenario.name == name
    assert not cmp.undocumented, [d.text for d in cmp.undocumented]
    if name == "paused-raw":
        assert cmp.scripted.call.reply and cmp.native.call.reply == []
        assert snap(native_conn, cmp.queue).where(cmp.job_id) == ["pending"]
        assert snap(conn, cmp.queue).where(cmp.job_id) == ["active"]
    if name == "paused":
        # claim/3's host-side read answers first on both: no script and no command is sent
        assert [e.args[0] for e in cmp.native.call.entries] == ["EXISTS"]
    if name == "ghost":
        assert cmp.scripted.call.reply is None and cmp.native.call.reply is None
        for c in (conn, native_conn):
            assert snap(c, cmp.queue).total() == 0  # both popped the ghost


def test_executor_view_refuses_a_scripted_connector_as_native(conn):
    with pytest.raises(ValueError, match="wire=6"):
        ExecutorView(conn, conn)
