"""The widgets in a real JupyterLab, driven by headless Debian chromium through Playwright.

One JupyterLab server (127.0.0.1, a token, temporary JUPYTER_* folders) runs a
copy of ``tests/widgets/browser/widgets_demo.ipynb``; the test runs every cell, clicks
the stepper and the composer, and reads the set view's text after each click. Each
widget is audited by axe-core where its test leaves it (``a11y_support``: no
violation rated serious or critical, the counts printed), and one test drives the
stepper from the keyboard alone. Screenshots land in ``artifacts/`` (gitignored).
Jupyter is stopped by its PID.
"""

from __future__ import annotations

import re
import statistics

import a11y_support as a11y
import browser_support as bs
import pytest
from browser_support import expect
from echomq_widgets.compare import SCENARIOS

pytestmark = pytest.mark.browser

DEMO = bs.ROOT / "tests" / "widgets" / "browser" / "widgets_demo.ipynb"
NB = "widgets_demo.ipynb"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server of this test's own, on a copy of the demo notebook."""
    with bs.lab_on_copies(tmp_path_factory, DEMO) as server:
        yield server


@pytest.fixture(scope="module")
def page(lab):
    with bs.chromium() as browser:
        pg, panel = bs.open_notebook(browser, lab, NB)
        # clear stored outputs first, so that waiting for the widgets means this run drew them
        bs.clear_outputs(pg)
        bs.run_all(pg)
        yield pg, panel


def _shot(pg, name: str, locator=None) -> None:
    bs.shot(pg, bs.ARTIFACTS / f"browser-{name}.png", locator)


def _set(view, name: str):
    return view.locator(f'.emq-set[data-set="{name}"]')


def _stepper(panel):
    return panel.locator(".jp-OutputArea-output").filter(has_text="The lifecycle stepper").first


def test_stepper_steps_back_and_paths(page, capsys, record_property):
    pg, panel = page
    stepper = _stepper(panel)
    step = stepper.locator(".widget-button", has_text="Step ▸")
    view = stepper.locator(".emq-view")
    expect(step).to_have_text("Step ▸ enqueue")
    expect(_set(view, "pending")).to_contain_text("empty")
    _shot(pg, "stepper-ready", stepper)
    a11y.audit(pg, stepper, "stepper, ready", record_property)

    # click to redrawn view, on the page's clock, for each step of five happy runs (a figure, not an assertion:
    # the goal, 20 ms, is the bench's; bench/README.md); the run is then reset and stepped as before
    bs.wait_all_ran(pg, panel, bs.UI_MS)  # a click waits for a kernel still running later cells
    clicks = []
    for _ in range(5):
        for name in ("enqueue", "claim", "complete"):
            expect(step).to_have_text(f"Step ▸ {name}")
            clicks.append((name, bs.click_to_redraw_ms(step.element_handle(), f"{name} — ")))
        stepper.locator(".widget-button", has_text="Reset").click()
        expect(step).to_have_text("Step ▸ enqueue")
        expect(_set(view, "pending")).to_contain_text("empty")
    with capsys.disabled():
        print("\nstepper click → redrawn view (ms): " + ", ".join(f"{n} {ms:.1f}" for n, ms in clicks)
              + f" · median {statistics.median(ms for _, ms in clicks):.1f} · goal 20")

    step.click()
    expect(stepper.locator(".emq-cap")).to_contain_text("enqueue — enqueue/5 → @enqueue")
    expect(stepper.locator(".emq-cap")).to_contain_text("is held in pending · row state pending, attempts 0")
    expect(_set(view, "pending")).to_contain_text("JOB")
    expect(_set(view, "pending")).to_contain_text("score 0")
    expect(stepper.locator(".emq-trace")).to_contain_text("EVALSHA <sha> 2")

    expect(step).to_have_text("Step ▸ claim")
    step.click()
    expect(stepper.locator(".emq-cap")).to_contain_text("claim — claim/3 → @claim2")
    expect(_set(view, "active")).to_contain_text("deadline in +")
    expect(_set(view, "pending")).to_contain_text("left this set")
    expect(stepper.locator(".emq-trace")).to_contain_text("EXISTS emq:")
    expect(view.locator(".emq-card")).to_contain_text("attempts")
    _shot(pg, "stepper-claim", stepper)

    step.click()
    expect(stepper.locator(".emq-cap")).to_contain_text("complete — complete/5 → @complete")
    expect(_set(view, "active")).to_contain_text("left this set")
    expect(view).to_contain_text("row deleted")
    expect(view).to_contain_text("metrics:completed count = 1")
    expect(stepper.locator(".widget-button", has_text="done")).to_be_disabled()
    _shot(pg, "stepper-complete", stepper)

    stepper.locator(".widget-button", has_text="Back").click()
    expect(stepper.locator(".emq-cap")).to_contain_text("claim — claim/3 → @claim2")
    expect(_set(view, "active")).to_contain_text("deadline in +")
    expect(view).to_contain_text("metrics:completed count = 0")  # a fresh queue: the old count did not leak

    stepper.locator(".widget-toggle-button", has_text="failure").click()
    expect(step).to_have_text("Step ▸ enqueue")
    for name in ("enqueue", "claim", "retry", "promote", "second claim", "final retry"):
        expect(step).to_have_text(f"Step ▸ {name}")
        step.click()
        expect(stepper.locator(".emq-cap")).to_contain_text(f"{name} — ")
        if name == "retry":
            expect(_set(view, "schedule")).to_contain_text("run-at")
    expect(_set(view, "dead")).to_contain_text("JOB")
    expect(_set(view, "dead")).to_contain_text("died")
    expect(view.locator(".emq-card")).to_contain_text("boom")
    _shot(pg, "stepper-failure-dead", stepper)

    stepper.locator(".widget-toggle-button", has_text="recovery").click()
    for name in ("enqueue", "claim", "lapse", "reap", "reclaim", "late complete"):
        expect(step).to_have_text(f"Step ▸ {name}")
        step.click()
        expect(stepper.locator(".emq-cap")).to_contain_text(f"{name} — ")
        if name == "lapse":
            expect(_set(view, "active")).to_contain_text("lapsed")
            expect(stepper.locator(".emq-trace")).to_contain_text("nothing sent")
    expect(stepper.locator(".emq-cap")).to_contain_text("answered stale · nothing written")
    expect(view).to_contain_text("changed by the last call: nothing")
    _shot(pg, "stepper-recovery-stale", stepper)
    a11y.audit(pg, stepper, "stepper, recovery path done", record_property)
    a11y.audit(pg, view, "set view, a job reclaimed and its late settle refused", record_property)


def test_stepper_from_the_keyboard(page):
    """Tab, Enter, Space only: choose a path, step, go back, switch paths; what the stepper shows after each key."""
    pg, panel = page
    stepper = _stepper(panel)
    view = stepper.locator(".emq-view")
    caption = stepper.locator(".emq-cap")
    progress = stepper.locator(".emq-steps")
    happy = stepper.locator(".widget-toggle-button", has_text="happy")
    step = stepper.locator(".widget-button", has_text="Step ▸")
    bs.wait_all_ran(pg, panel, bs.UI_MS)
    pg.keyboard.press("Escape")  # command mode: the keys below move the focus, they type nothing

    # the happy path, chosen with Space: a fresh queue, nothing run yet
    a11y.tab_to(pg, happy)
    pg.keyboard.press("Space")
    expect(happy).to_have_class(re.compile(r"\bmod-active\b"))
    a11y.tab_to(pg, stepper.locator(".widget-button", has_text="Reset"))
    pg.keyboard.press("Enter")
    expect(caption).to_contain_text("ready — the happy path: enqueue → claim → complete")
    expect(_set(view, "pending")).to_contain_text("empty")

    # Step by Enter, then by Space: the focus stays on the button while the path goes on
    a11y.tab_to(pg, step, backwards=True)
    expect(step).to_be_focused()
    pg.keyboard.press("Enter")
    expect(caption).to_contain_text("enqueue — enqueue/5 → @enqueue")
    expect(_set(view, "pending")).to_contain_text("JOB")
    expect(progress.locator('[aria-current="step"]')).to_have_text("▸ 1 · enqueue")
    expect(step).to_be_focused()
    pg.keyboard.press("Space")
    expect(caption).to_contain_text("claim — claim/3 → @claim2")
    expect(_set(view, "active")).to_contain_text("deadline in +")
    expect(progress.locator("li").first).to_have_text("✓ 1 · enqueue")
    pg.keyboard.press("Enter")
    expect(caption).to_contain_text("complete — complete/5 → @complete")
    expect(view).to_contain_text("row deleted")
    expect(stepper.locator(".widget-button", has_text="done ✓")).to_be_disabled()

    # Back, reached by the keyboard from wherever the disabled button left the focus
    back = stepper.locator(".widget-button", has_text="Back")
    a11y.tab_to(pg, back)
    pg.keyboard.press("Enter")
    expect(caption).to_contain_text("claim — claim/3 → @claim2")
    expect(view).to_contain_text("metrics:completed count = 0")

    # the failure path by Space on its toggle; two steps by Enter
    failure = stepper.locator(".widget-toggle-button", has_text="failure")
    a11y.tab_to(pg, failure, backwards=True)
    pg.keyboard.press("Space")
    expect(step).to_have_text("Step ▸ enqueue")
    a11y.tab_to(pg, step)
    for name in ("enqueue", "claim", "retry"):
        expect(step).to_have_text(f"Step ▸ {name}")
        pg.keyboard.press("Enter")
        expect(caption).to_contain_text(f"{name} — ")
    expect(_set(view, "schedule")).to_contain_text("run-at")
    expect(stepper.locator(".emq-error")).to_have_count(0)
    _shot(pg, "stepper-keyboard-retry", stepper)


def test_composer_counter_ticks_to_zero(page, record_property):
    pg, panel = page
    comp = panel.locator(".jp-OutputArea-output").filter(has_text="The flow composer").first
    view = comp.locator(".emq-view")
    comp.locator(".widget-button", has_text="land the flow").click()
    expect(comp.locator(".emq-cap")).to_contain_text(
        "0 of 3 children done → each @complete DECR'd the counter → :dependencies = 3, parent still awaiting_children."
    )
    expect(_set(view, "pending")).to_contain_text("child 3")
    expect(view).to_contain_text("awaiting_children")
    done = comp.locator(".widget-button", has_text="complete next child")
    for k in (1, 2):
        done.click()
        expect(comp.locator(".emq-cap")).to_contain_text(f"{k} of 3 children done")
        expect(comp.locator(".emq-cap")).to_contain_text(f":dependencies = {3 - k}, parent still awaiting_children")
    _shot(pg, "composer-midway", comp)
    done.click()
    expect(comp.locator(".emq-cap")).to_contain_text("3 of 3 children done")
    expect(comp.locator(".emq-cap")).to_contain_text(
        ":dependencies = 0, the counter reached zero and released the parent"
    )
    expect(_set(view, "pending")).to_contain_text("parent")
    run_parent = comp.locator(".widget-button", has_text="run the parent")
    expect(run_parent).to_be_enabled()
    _shot(pg, "composer-released", comp)
    run_parent.click()
    expect(comp.locator(".emq-cap")).to_contain_text("the parent ran on its children's results and completed")
    expect(comp.locator(".widget-button", has_text="complete next child")).to_be_disabled()

    # a new flow under ignore: one child dies and still counts as done
    comp.locator("select").select_option("ignore")
    comp.locator(".widget-button", has_text="land a new flow").click()
    expect(comp.locator(".emq-cap")).to_contain_text("0 of 3 children done")
    comp.locator(".widget-button", has_text="fail next child").click()
    expect(comp.locator(".emq-cap")).to_contain_text("0 of 3 children done, 1 dead")
    expect(comp.locator(".emq-cap")).to_contain_text(":dependencies = 2")
    expect(_set(view, "dead")).to_contain_text("child 1")
    expect(comp).to_contain_text("ignored_failures/3 → {child 1: boom}")
    _shot(pg, "composer-ignore", comp)
    a11y.audit(pg, comp, "flow composer, a child dead under ignore", record_property)
    _shot(pg, "notebook")


def test_counter_plot_follows_the_composer(page, record_property):
    pg, panel = page
    # the plot cell follows the composer: one point per click, redrawn as a PNG with its words
    img = panel.locator(".jp-OutputArea-output img.emq-picture").last
    expect(img).to_be_visible()
    assert img.evaluate("e => e.naturalWidth") > 300
    expect(img).to_have_attribute("alt", re.compile(r"^Plot: the composer's queue: set sizes"))
    _shot(pg, "counter-plot", img)
    output = img.locator("xpath=ancestor::div[contains(@class, 'jp-OutputArea-output')][1]")
    a11y.audit(pg, output, "counter plot", record_property)


def test_executor_view_side_by_side(page, record_property):
    pg, panel = page
    ev = panel.locator(".jp-OutputArea-output").filter(has_text="One transition, two executors").first
    expect(ev.locator(".emq-col").nth(0)).to_contain_text("EVALSHA <sha> 3")
    expect(ev.locator(".emq-col").nth(1)).to_contain_text("EMQ.CLAIM 3")
    expect(ev).to_contain_text("every difference is one the page documents")
    expect(ev.locator(".emq-col").nth(1)).to_contain_text("lease_epoch")
    _shot(pg, "executors-claim", ev)
    # the dropdown's options are labelled "name — title"
    ev.locator("select").select_option(label=f"paused-raw — {SCENARIOS['paused-raw'].title}")
    ev.locator(".widget-button", has_text="run on both").click()
    expect(ev).to_contain_text("the pause read moved inside the command")
    expect(ev.locator(".emq-col").nth(1)).to_contain_text("pending · score 0")
    expect(ev.locator(".emq-col").nth(0)).to_contain_text("active · deadline in +")
    _shot(pg, "executors-paused-raw", ev)
    a11y.audit(pg, ev, "executor view", record_property)
