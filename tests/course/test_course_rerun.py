"""Run All, then keep going as a learner does: re-run a cell, click the chaos widget (issue 22, item 2).

One JupyterLab of the test's own runs copies of 00, 07 and 09 in headless Debian
chromium. Each notebook runs with Run All (no cell stops its nodes or widgets
any more: the kernel's end does), then a cell in the middle is run again, and
must run clean. In 07 the chaos widget's *enqueue* is clicked after Run All and
its round drains to a verdict; then a cell added at the end stops the widget,
which must say how to get a live one back. In 00 a cell added at the end stops
the node, and the middle cell run again must answer with the course's one-line
message (which node, the call that brings one back), not a traceback. In 09 the
three counter plots must show at their stored size (their text legible), not shrunk.
Every wait is a bound, never a speed check; kernels are shut down by session.
"""

from __future__ import annotations

import re

import browser_support as bs
import pytest
from browser_support import expect

pytestmark = pytest.mark.browser

NOTEBOOKS = bs.ROOT / "notebooks"
RUN_ALL_MS = 150_000  # a bound on one notebook's Run All on a slow machine
DRAIN_MS = 120_000  # a bound on a chaos round's drain
STDERR = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
PROMPT_RAN = re.compile(r"^\[\d+\]:$")
# per notebook: a cell in the middle that a learner may well run again (found by its code)
MIDDLE = {
    "00": "raw = node.client()",
    "07": "draw(History.read(naive_dir), naive",
    "09": "any_node = cluster.nodes[0].client()",
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    names = [next(NOTEBOOKS.glob(f"{nn}-*.ipynb")) for nn in MIDDLE]
    with bs.lab_on_copies(tmp_path_factory, *names, NOTEBOOKS / "solutions") as server:
        yield server


@pytest.fixture(scope="module")
def browser(lab):
    with bs.chromium() as b:
        yield b


def _tracebacks(panel) -> list[str]:
    return [t for t in panel.locator(STDERR).all_text_contents() if "Traceback" in t or re.search(r"\w+Error\b", t)]


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


def _run_all(pg, panel, name: str) -> None:
    bs.clear_outputs(pg)
    expect(panel.locator(".jp-OutputArea-output")).to_have_count(0)
    bs.run_all(pg)
    bs.wait_all_ran(pg, panel, RUN_ALL_MS)
    assert _tracebacks(panel) == [], f"{name}: a cell raised under Run All"
    prompts = [t.strip() for t in panel.locator(".jp-CodeCell .jp-InputArea-prompt").all_text_contents()]
    assert all(PROMPT_RAN.fullmatch(t) for t in prompts), f"{name}: cells left unrun: {prompts}"


@pytest.fixture
def notebook(request, lab, browser):
    name = next(NOTEBOOKS.glob(f"{request.param}-*.ipynb")).name
    pg, panel = bs.open_notebook(browser, lab, name)
    try:
        yield request.param, pg, panel
    finally:
        pg.close()
        lab.close_sessions(name)  # the kernel's end stops its nodes and workers


@pytest.mark.parametrize("notebook", list(MIDDLE), indirect=True)
def test_run_all_then_a_middle_cell_again(notebook):
    nn, pg, panel = notebook
    _run_all(pg, panel, nn)
    middle = panel.locator(".jp-CodeCell").filter(has_text=MIDDLE[nn]).first
    _run_cell(pg, middle)
    assert _tracebacks(panel) == [], f"{nn}: the middle cell, run again after Run All, raised"
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
    if nn == "00":
        # a cell that stops the node; the middle cell run again answers in one line, naming the way back
        _add_cell_at_end(pg, panel, "node.stop()")
        _run_cell(pg, middle)
        said = middle.locator(STDERR)
        expect(said).to_have_count(1)
        text = said.text_content()
        assert "Traceback" not in text and "was stopped" in text and "start_node" in text, text
        assert len(text.strip().splitlines()) == 1, text
        bs.shot(pg, bs.ARTIFACTS / "course-00-stopped-node.png", middle)
    if nn == "09":
        # the three counter plots wrap onto another row rather than shrink: their text shows at the stored size
        plots = panel.locator(".jp-OutputArea-output img.widget-image")
        expect(plots).to_have_count(3)
        scales = [i.evaluate("e => e.clientWidth / e.naturalWidth") for i in plots.all()]
        assert all(s >= 0.95 for s in scales), f"counter plots drawn smaller than stored: {scales}"
        bs.shot(pg, bs.ARTIFACTS / "course-09-counter-plots.png",
                panel.locator(".jp-OutputArea-output").filter(has=pg.locator("img.widget-image")).first)
    assert _tracebacks(panel) == [], f"{nn}: a traceback after the re-run"
    bs.shot_whole_notebook(pg, panel, bs.ARTIFACTS / f"course-{nn}-rerun.png")
