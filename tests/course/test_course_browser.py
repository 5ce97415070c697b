"""Every course notebook, run top to bottom in a real JupyterLab by headless Debian chromium.

In CI each notebook runs twice: under ``pytest --nbval`` (tools/nbtest.sh, on nodes its kernel
starts), and once more where it is needed: 01 to 09 here, as a classroom student (nina, provisioned
on a shared scripted node in cluster mode and its native twin, as ``docker/compose.yaml`` lays
them out; her kernels inherit her environment), 10 here as a learner on a laptop (its case models
write keys no student may), and 00 in the hub test (``tests/classroom/test_hub.py``: a student
in a container of her own). Notebooks that share a queue name meet each other's leftovers on
nina's node, as a class's notebooks do.

Two JupyterLab servers run copies of ``notebooks/`` (the ``.ipynb`` files and ``solutions/``):
nina's and the laptop's. For each notebook the test opens it fresh, waits for its kernel, clears
the stored outputs, runs every cell, and waits (bounded) until every code cell has an execution
count and the kernel is idle. Then it asserts that no cell raised and that the notebook's widgets
were drawn by this run, audits 01, 05 and 07 as rendered with axe-core (``a11y_support``: no
violation rated serious or critical), and saves a full-page screenshot to ``artifacts/course-NN.png``
(gitignored). Then it keeps going as a learner does (issue 22): in 01 it clicks Step in the
stepper (after its Reset: the notebook leaves it at its last step); in 07 and 09 it runs a cell
in the middle again, which must run clean; in 07 it clicks the chaos widget's *enqueue* and
watches the round drain to a verdict, then stops the widget from a cell added at the end, which
must say how to get a live one back; in 09 the three counter plots must show at their stored size.
Each notebook's kernel is shut down (DELETE /api/sessions) before the next one opens; Jupyter is
stopped by its PID at the end, and the shared nodes with it.
"""

from __future__ import annotations

import re

import a11y_support as a11y
import browser_support as bs
import pytest
from browser_support import expect

from echomq_teach.classroom import compose, provision
from echomq_teach.nodes.local import LocalNode, free_port

pytestmark = pytest.mark.browser

NOTEBOOKS = bs.ROOT / "notebooks"
COURSE = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))
#: where each notebook's one run beside nbval happens: here as nina, here on a laptop, or in the hub test
AS_STUDENT = [n for n in COURSE if "01" <= n[:2] <= "09"]
ON_A_LAPTOP = [n for n in COURSE if n[:2] >= "10"]
IN_THE_HUB = ["00-start-here.ipynb"]
RUN_ALL_MS = 150_000  # a bound on one notebook's Run All on a slow machine, never a speed check
DRAIN_MS = 120_000  # a bound on a chaos round's drain
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
# a CounterPlot and the composer each draw a picture (an <img> with its words) into a widget; 07's chaos view,
# its sizes and its timeline
IMAGES = {"03": 1, "05": 1, "06": 2, "07": 2, "09": 3}
NO_WIDGETS = {"08", "10"}  # 08 and 10 show matplotlib figures (HTML pictures), drawn by this run
# matplotlib figures drawn by the run, each shown with its text alternative (figures.show): 07's race and
# nemesis timelines, 08's two, 10's six case files (both timelines in one figure each); 09's failover
# timeline waits until 09.1 is committed (a cell tagged reveals:09.1), which a Run All does not do
PLOTS = {"07": 2, "08": 2, "09": 0, "10": 6}
PICTURE = "img.emq-picture"
# the notebooks the accessibility audit reads as rendered, after their run (a11y_support)
AUDITED = {"01", "05", "07"}
STDERR = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
ERROR_CLASS = re.compile(r"\b[A-Z]\w*(Error|Exception)\b")
PROMPT_RAN = re.compile(r"^\[\d+\]:$")
# a cell in the middle that a learner may well run again after Run All (found by its code)
MIDDLE = {
    "07": "draw(History.read(naive_dir), naive",
    "09": "any_node = cluster.nodes[0].client()",
}
#: the classroom's limits on the shared nodes, as tests/classroom/test_classroom.py sets them
LIMITS = compose.protection(maxmemory="256mb", maxclients=200)


def test_each_notebook_has_its_one_run_beside_nbval():
    # every notebook built from a source runs once beyond nbval, and the course runs from 00 to at least 09
    assert [n[:-6] for n in COURSE] == sorted(p.stem for p in (NOTEBOOKS / "src").glob("*.py"))
    assert sorted(AS_STUDENT + ON_A_LAPTOP + IN_THE_HUB) == COURSE
    assert {"00", "01", "02", "03", "04", "05", "06", "07", "08", "09"} <= {n[:2] for n in COURSE}


@pytest.fixture(scope="module")
def nina():
    """A classroom student's kernel environment: nina on a shared scripted node and its native twin."""
    node = LocalNode(extra_config={**LIMITS, **compose.cluster_mode(bus_port=free_port())})
    nnode = LocalNode(native=True, extra_config=LIMITS)  # standalone, as compose.node_conf writes it
    admin, nadmin = node.client(), nnode.client()
    try:
        [student] = provision.provision_names(admin, ["nina"], nadmin)
        yield student.env
        provision.revoke(admin, ["nina"])
    finally:
        admin.close()
        nadmin.close()
        nnode.stop()
        node.stop()


@pytest.fixture(scope="module")
def student_lab(tmp_path_factory, nina):
    """nina's JupyterLab: kernels outlive pages and autosave may rewrite files, so it runs on copies."""
    paths = [NOTEBOOKS / name for name in AS_STUDENT]
    with bs.lab_on_copies(tmp_path_factory, *paths, NOTEBOOKS / "solutions", env=nina) as server:
        yield server


@pytest.fixture(scope="module")
def laptop_lab(tmp_path_factory):
    with bs.lab_on_copies(tmp_path_factory, *(NOTEBOOKS / n for n in ON_A_LAPTOP), NOTEBOOKS / "solutions") as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    bs.require_chromium()
    with bs.chromium() as b:
        yield b


@pytest.fixture
def notebook(request, browser):
    """The notebook opened fresh on an idle kernel; its page closed and its kernel shut down after."""
    name = request.param
    lab = request.getfixturevalue("student_lab" if name in AS_STUDENT else "laptop_lab")
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


@pytest.mark.parametrize("notebook", AS_STUDENT + ON_A_LAPTOP, indirect=True, ids=lambda n: n[:2])
def test_notebook_runs_clean_in_the_browser(notebook, record_property):
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
        figures = panel.locator(f'.jp-OutputArea-output[data-mime-type="text/html"] {PICTURE}')
        expect(figures).to_have_count(PLOTS[nn])
        assert all(i.evaluate("e => e.naturalWidth") > 300 for i in figures.all())
        assert all(len(i.get_attribute("alt")) > 40 for i in figures.all()), f"{name}: a figure without words"
    if nn in NO_WIDGETS:
        assert widgets.count() == 0
    else:
        # each kit widget's first child is its style sheet, a hidden HTML widget: look for a shown one
        expect(widgets.filter(visible=True).first).to_be_visible()
        assert widgets.count() > 0
        for text in WIDGET_TEXT[nn]:
            expect(panel.locator(".jp-OutputArea-output", has_text=text).first).to_be_visible()
        if nn in IMAGES:
            imgs = panel.locator(f".jp-OutputArea-output .widget-html {PICTURE}")
            expect(imgs).to_have_count(IMAGES[nn])
            assert all(i.evaluate("e => e.naturalWidth") > 300 for i in imgs.all())
    # a widget the front end could not draw says so in its output; a failed click shows .emq-error
    expect(panel.get_by_text("Error displaying widget")).to_have_count(0)
    expect(panel.locator(".emq-error")).to_have_count(0)

    if nn in AUDITED:
        a11y.audit_notebook(pg, panel, f"notebook {nn}", record_property)
    if nn == "01":
        _step_changes_the_set_view(panel)
    bs.shot_whole_notebook(pg, panel, bs.ARTIFACTS / f"course-{nn}.png")
    if nn in MIDDLE:
        _a_middle_cell_again(pg, panel, nn)


def _run_cell(pg, cell) -> None:
    """Run one cell again from command mode (Ctrl+Enter: run in place) and wait, bounded, for its new count."""
    prompt = cell.locator(".jp-InputArea-prompt")
    before = prompt.text_content().strip()
    prompt.click()
    pg.keyboard.press("Escape")
    pg.keyboard.press("Control+Enter")
    expect(prompt).not_to_have_text(before, timeout=bs.UI_MS)
    expect(prompt).to_have_text(PROMPT_RAN, timeout=bs.UI_MS)


def _add_cell_at_end(pg, panel, code: str):
    """A new code cell after the last one, holding ``code``, run; answers the cell."""
    before = panel.locator(".jp-CodeCell").count()
    panel.locator(".jp-Cell").last.locator(".jp-InputPrompt").click()
    pg.keyboard.press("Escape")
    pg.keyboard.press("b")  # insert a cell below, in command mode
    expect(panel.locator(".jp-CodeCell")).to_have_count(before + 1)
    cell = panel.locator(".jp-CodeCell").last
    pg.keyboard.press("Enter")
    pg.keyboard.type(code)
    pg.keyboard.press("Control+Enter")
    expect(cell.locator(".jp-InputArea-prompt")).to_have_text(PROMPT_RAN, timeout=bs.UI_MS)
    return cell


def _a_middle_cell_again(pg, panel, nn: str) -> None:
    """After Run All, as a learner goes on: a cell in the middle again; 07's chaos widget; 09's plots."""
    middle = panel.locator(".jp-CodeCell").filter(has_text=MIDDLE[nn]).first
    _run_cell(pg, middle)
    assert _errors(panel) == [], f"{nn}: the middle cell, run again after Run All, raised"
    expect(middle.locator(STDERR)).to_have_count(0)
    if nn == "07":
        chaos = panel.locator(".jp-OutputArea-output").filter(has_text="Chaos · worker processes").first
        # Run All left the widget live: enqueue another batch and watch it drain to a verdict
        chaos.get_by_role("button", name="enqueue", exact=True).click()
        why = chaos.locator(".emq-chaos-why")
        expect(chaos.locator(".emq-head", has_text="enqueued").first).to_contain_text("round 2 ·", timeout=bs.UI_MS)
        expect(why).to_contain_text("drained · verdict: valid", timeout=DRAIN_MS)
        expect(chaos.locator(".emq-error")).to_have_count(0)
        bs.shot(pg, bs.ARTIFACTS / "course-07-rerun-chaos.png", chaos)
        # a cell that stops the widget: it stays on the page and says how to get a live one back
        _add_cell_at_end(pg, panel, "chaos.stop()")
        expect(why).to_contain_text("closed: every worker process was stopped", timeout=bs.UI_MS)
        expect(why).to_contain_text("run this widget's cell again", timeout=bs.UI_MS)
        expect(chaos.get_by_role("button", name="enqueue", exact=True)).to_be_disabled()
    if nn == "09":
        # the three counter plots wrap onto another row rather than shrink: their text shows at the stored size
        plots = panel.locator(f".jp-OutputArea-output .widget-html {PICTURE}")
        expect(plots).to_have_count(3)
        scales = [i.evaluate("e => e.clientWidth / e.naturalWidth") for i in plots.all()]
        assert all(s >= 0.95 for s in scales), f"counter plots drawn smaller than stored: {scales}"
        bs.shot(pg, bs.ARTIFACTS / "course-09-counter-plots.png",
                panel.locator(".jp-OutputArea-output").filter(has=pg.locator(PICTURE)).first)
    assert _errors(panel) == [], f"{nn}: an error after the re-run"
    bs.shot_whole_notebook(pg, panel, bs.ARTIFACTS / f"course-{nn}-rerun.png")
