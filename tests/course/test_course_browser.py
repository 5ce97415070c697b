"""Every course notebook, run top to bottom in a real JupyterLab by headless Debian chromium.

One JupyterLab server runs a temporary copy of ``notebooks/`` (the ``.ipynb`` files
and ``solutions/``). For each course notebook the test opens it fresh, waits for its
kernel, clears the stored outputs, runs every cell, and waits (bounded) until every
code cell has an execution count and the kernel is idle. Then it asserts that no cell
raised and that the notebook's widgets were drawn by this run, clicks Step in 01's
stepper (after its Reset: the notebook leaves it at its last step), and saves a
full-page screenshot to ``artifacts/course-NN.png`` (gitignored).
Each notebook's kernel is shut down (DELETE /api/sessions) before the next one opens;
Jupyter is stopped by its PID at the end.
"""

from __future__ import annotations

import re

import browser_support as bs
import pytest
from browser_support import expect

pytestmark = pytest.mark.browser

NOTEBOOKS = bs.ROOT / "notebooks"
COURSE = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))
RUN_ALL_MS = 150_000  # a bound on one notebook's Run All on a slow machine, never a speed check
WIDGETS = ".widget-button, .widget-toggle-button, .widget-html, .widget-image, .widget-dropdown"
# the widgets each notebook shows, found by the text they draw
WIDGET_TEXT = {
    "01": ["The lifecycle stepper"],
    "02": ["deadline in +"],  # the set view of the lease queue: its active set
    "03": [],  # a CounterPlot: an image, checked below
    "04": ["One transition, two executors"],
    "05": ["The flow composer"],
    "06": ["The lifecycle stepper", "One transition, two executors", "The flow composer"],
    "07": ["verdict: valid"],  # the chaos playground, judged once its round drained
    "09": [],  # three CounterPlots side by side, one per shard: images, checked below
}
# a CounterPlot and the composer each draw a PNG into a widgets.Image; 07's chaos view, its sizes and timeline
IMAGES = {"03": 1, "05": 1, "06": 2, "07": 2, "09": 3}
NO_WIDGETS = {"00", "08", "10"}  # 08 and 10 show matplotlib figures (plain PNG outputs), drawn by this run
# matplotlib figures drawn by the run: 07's race and nemesis timelines, 08's two, 09's failover timeline,
# 10's six case files (the model's and this queue's timelines in one figure each)
PLOTS = {"07": 2, "08": 2, "09": 1, "10": 6}
STDERR = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
ERROR_CLASS = re.compile(r"\b[A-Z]\w*(Error|Exception)\b")


def test_course_notebooks_are_all_here():
    # every notebook built from a source is driven here, and the course runs from 00 to at least 09
    assert [n[:-6] for n in COURSE] == sorted(p.stem for p in (NOTEBOOKS / "src").glob("*.py"))
    assert {"00", "01", "02", "03", "04", "05", "06", "07", "08", "09"} <= {n[:2] for n in COURSE}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One JupyterLab on a copy of the course: kernels outlive pages and autosave may rewrite files."""
    with bs.lab_on_copies(tmp_path_factory, *(NOTEBOOKS / name for name in COURSE), NOTEBOOKS / "solutions") as server:
        yield server


@pytest.fixture(scope="module")
def browser(lab):
    with bs.chromium() as b:
        yield b


@pytest.fixture
def notebook(request, lab, browser):
    """The notebook opened fresh on an idle kernel; its page closed and its kernel shut down after."""
    name = request.param
    pg, panel = bs.open_notebook(browser, lab, name)
    try:
        yield name, pg, panel
    finally:
        pg.close()
        lab.close_sessions(name)  # a kernel per notebook is memory (and a node) on a small machine
        assert not [s for s in lab.sessions() if s.get("path") == name]


def _errors(panel) -> list[str]:
    """The text of every stderr output that is a traceback or names an exception class."""
    texts = panel.locator(STDERR).all_text_contents()
    return [t for t in texts if "Traceback" in t or ERROR_CLASS.search(t)]


def _step_changes_the_set_view(panel) -> None:
    stepper = panel.locator(".jp-OutputArea-output").filter(has_text="The lifecycle stepper").first
    step = stepper.locator(".widget-button", has_text="Step ▸")
    view = stepper.locator(".emq-view")
    # the notebook's own cell left it at its last step, so a reader sees a finished walk; Reset starts over
    expect(stepper.locator(".widget-button", has_text="done ✓")).to_be_visible()
    stepper.locator(".widget-button", has_text="Reset").click()
    expect(step).to_have_text("Step ▸ enqueue")
    pending = view.locator('.emq-set[data-set="pending"]')
    expect(pending).to_contain_text("empty")
    before = view.text_content()
    step.click()
    expect(stepper.locator(".emq-cap")).to_contain_text("enqueue — enqueue/5 → @enqueue")
    expect(pending).to_contain_text("JOB")
    expect(view).not_to_have_text(before)
    expect(stepper.locator(".emq-error")).to_have_count(0)
    expect(step).to_have_text("Step ▸ claim")
    step.click()
    expect(view.locator('.emq-set[data-set="active"]')).to_contain_text("deadline in +")
    expect(pending).to_contain_text("left this set")
    expect(stepper.locator(".emq-error")).to_have_count(0)


@pytest.mark.parametrize("notebook", COURSE, indirect=True, ids=[n[:2] for n in COURSE])
def test_notebook_runs_clean_in_the_browser(notebook):
    name, pg, panel = notebook
    nn = name[:2]
    cells = panel.locator(".jp-CodeCell")
    assert cells.count() > 0
    # clear first: stored [n]: prompts and outputs would make every check below pass at once
    bs.clear_outputs(pg)
    expect(panel.locator(".jp-OutputArea-output")).to_have_count(0)
    bs.run_all(pg)
    bs.wait_all_ran(pg, panel, RUN_ALL_MS)

    assert _errors(panel) == [], f"{name}: a cell raised"
    prompts = [t.strip() for t in panel.locator(".jp-CodeCell .jp-InputArea-prompt").all_text_contents()]
    assert all(re.fullmatch(r"\[\d+\]:", t) for t in prompts), f"{name}: cells left unrun: {prompts}"

    widgets = panel.locator(f".jp-OutputArea-output :is({WIDGETS})")
    if nn in PLOTS:
        figures = panel.locator('.jp-OutputArea-output[data-mime-type="image/png"] img')
        expect(figures).to_have_count(PLOTS[nn])
        assert all(i.evaluate("e => e.naturalWidth") > 300 for i in figures.all())
    if nn in NO_WIDGETS:
        assert widgets.count() == 0
    else:
        # each kit widget's first child is its style sheet, a hidden HTML widget: look for a shown one
        expect(widgets.filter(visible=True).first).to_be_visible()
        assert widgets.count() > 0
        for text in WIDGET_TEXT[nn]:
            expect(panel.locator(".jp-OutputArea-output", has_text=text).first).to_be_visible()
        if nn in IMAGES:
            imgs = panel.locator(".jp-OutputArea-output img.widget-image")
            expect(imgs).to_have_count(IMAGES[nn])
            assert all(i.evaluate("e => e.naturalWidth") > 300 for i in imgs.all())
    # a widget the front end could not draw says so in its output; a failed click shows .emq-error
    expect(panel.get_by_text("Error displaying widget")).to_have_count(0)
    expect(panel.locator(".emq-error")).to_have_count(0)

    if nn == "01":
        _step_changes_the_set_view(panel)
    bs.shot_whole_notebook(pg, panel, bs.ARTIFACTS / f"course-{nn}.png")
