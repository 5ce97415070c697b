"""The chaos widget in a real JupyterLab, driven by headless Debian chromium through Playwright.

A JupyterLab of this test's own runs a copy of ``tests/widgets/browser/chaos_demo.ipynb``
(a durable node and a ChaosView of three worker processes); the test drives it from
the keyboard alone (Tab to each control, arrows in the jobs box, Enter and Space to
press): it sets the batch, enqueues, kills, freezes and thaws, waits for the queue to
drain, and reads the checker's verdict. axe-core audits the view when it is ready,
while a worker is frozen and once judged (``a11y_support``). Screenshots land in
``artifacts/``. The kernel's session is deleted at the end and every worker PID the
page showed must be gone; Jupyter itself is stopped by its PID.
"""

from __future__ import annotations

import re
import time

import a11y_support as a11y
import browser_support as bs
import pytest
from browser_support import expect
from conftest import gone

pytestmark = pytest.mark.browser

DEMO = bs.ROOT / "tests" / "widgets" / "browser" / "chaos_demo.ipynb"
NB = "chaos_demo.ipynb"
DRAIN_MS = 120_000  # bounds on waiting, never measurements
STEP_MS = 30_000  # a click that starts a process or runs the kernel


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with bs.lab_on_copies(tmp_path_factory, DEMO) as server:
        yield server



def pids(widget) -> list[int]:
    return [int(p) for p in widget.locator(".emq-slotline").evaluate_all("els => els.map(e => e.dataset.pid)")]


def test_kill_freeze_thaw_then_the_verdict_from_the_keyboard(lab, record_property):
    seen: set[int] = set()
    with bs.chromium() as browser:
        pg, panel = bs.open_notebook(browser, lab, NB, viewport={"width": 1280, "height": 1800})
        try:
            bs.clear_outputs(pg)
            bs.run_all(pg)
            chaos = panel.locator(".jp-OutputArea-output").filter(has_text="Chaos · worker processes").first
            rows = chaos.locator(".emq-slot")
            expect(rows).to_have_count(3, timeout=bs.UI_MS)
            expect(chaos.locator(".emq-chaos-why")).to_contain_text("no jobs yet: enqueue some", timeout=STEP_MS)
            seen.update(pids(chaos))
            bs.shot(pg, bs.ARTIFACTS / "chaos-ready.png", chaos)
            a11y.audit(pg, chaos, "chaos view, ready", record_property)
            pg.keyboard.press("Escape")  # command mode: the keys below move the focus, they type nothing

            # the jobs box by its name, one down arrow (the box takes it), Tab on to enqueue: the batch is 299
            jobs = chaos.get_by_role("spinbutton", name="jobs")
            a11y.tab_to(pg, jobs)
            pg.keyboard.press("ArrowDown")
            expect(jobs).to_have_value("299")
            enqueue = chaos.get_by_role("button", name="enqueue", exact=True)
            a11y.tab_to(pg, enqueue)
            pg.keyboard.press("Enter")
            expect(chaos.locator(".emq-chaos-why")).to_contain_text("draining: pending", timeout=STEP_MS)

            w0 = rows.nth(0)
            a11y.tab_to(pg, w0.get_by_role("button", name="kill", exact=True))
            pg.keyboard.press("Space")
            expect(w0).to_contain_text("w0b", timeout=STEP_MS)
            expect(w0).to_contain_text("replaced w0 (killed)", timeout=STEP_MS)
            seen.update(pids(chaos))

            w1 = rows.nth(1)
            a11y.tab_to(pg, w1.get_by_role("button", name="freeze", exact=True))
            pg.keyboard.press("Enter")
            expect(w1.locator(".emq-slotline")).to_have_attribute("data-state", "frozen", timeout=STEP_MS)
            # the watch redraws the slot while it sleeps: its frozen time passes the lease of 800 ms
            expect(w1).to_contain_text("past its lease", timeout=20_000)
            expect(chaos).to_contain_text("freeze w1 (pid", timeout=STEP_MS)
            bs.shot(pg, bs.ARTIFACTS / "chaos-frozen.png", chaos)
            a11y.audit(pg, chaos, "chaos view, a worker frozen", record_property)
            # the freeze button went off with the freeze; the keyboard walks on to thaw from where it was
            a11y.tab_to(pg, w1.get_by_role("button", name="thaw", exact=True))
            pg.keyboard.press("Space")
            expect(w1.locator(".emq-slotline")).to_have_attribute("data-state", "running", timeout=STEP_MS)

            verdict = chaos.locator(".emq-verdict")
            expect(verdict).to_contain_text("verdict: valid", timeout=DRAIN_MS)
            expect(verdict).to_contain_text("enqueued 299 · settled 299", timeout=STEP_MS)
            expect(verdict).to_contain_text("lost 0  settled twice 0", timeout=STEP_MS)
            expect(chaos.locator(".emq-chaos-why")).to_contain_text("drained · verdict: valid", timeout=STEP_MS)
            timeline = chaos.locator("img.emq-picture").nth(1)
            expect(timeline).to_be_visible(timeout=STEP_MS)
            assert timeline.evaluate("e => e.naturalWidth") > 900
            expect(chaos).to_contain_text("kill w0 (pid", timeout=STEP_MS)
            expect(chaos).to_contain_text("thaw w1 after", timeout=STEP_MS)
            expect(timeline).to_have_attribute("alt", re.compile(r"^Timeline: the run after round 1 — checker: valid"))
            seen.update(pids(chaos))
            bs.shot(pg, bs.ARTIFACTS / "chaos-verdict.png", chaos)
            a11y.audit(pg, chaos, "chaos view, judged", record_property)
        except Exception:
            bs.shot(pg, bs.ARTIFACTS / "chaos-failure.png")  # the whole page, for whoever reads the failure
            raise
        finally:
            pg.close()
            lab.close_sessions(NB)  # the kernel ends, and with it the node and the workers it forked
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(gone(p) for p in seen):
        time.sleep(0.1)
    assert len(seen) >= 4 and [p for p in seen if not gone(p)] == []
