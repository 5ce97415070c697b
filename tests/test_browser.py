"""The widgets in a real JupyterLab, driven by headless Debian chromium through Playwright.

One JupyterLab server (127.0.0.1, a token, temporary JUPYTER_* folders) runs a
copy of ``tests/browser/widgets_demo.ipynb``; the test runs every cell, clicks
the stepper and the composer, and reads the set view's text after each click.
Screenshots land in ``artifacts/`` (gitignored). Jupyter is stopped by its PID.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from echomq_widgets.compare import SCENARIOS

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "tests" / "browser" / "widgets_demo.ipynb"
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = os.environ.get("ECHOMQ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NB = "widgets_demo.ipynb"
START_LIMIT_S = 60  # bounds on waiting for the server, never assertions about speed
UI_MS = 60_000

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settings(settings_dir: Path) -> None:
    # every cell stays in the DOM (windowingMode none), and no news or update checks
    tracker = settings_dir / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True, exist_ok=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}))
    notes = settings_dir / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server of this test's own; yields (base URL, token)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (Debian: apt-get install -y chromium)")
    tmp = tmp_path_factory.mktemp("lab")
    root_dir = tmp / "root"
    root_dir.mkdir()
    shutil.copy(DEMO, root_dir / NB)  # a copy: kernels outlive the page and autosave may rewrite it
    env = dict(os.environ)
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR"):
        env[var] = str(tmp / var.lower())
    env["JUPYTERLAB_SETTINGS_DIR"] = str(tmp / "settings")
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp / "workspaces")
    _settings(tmp / "settings")
    token, port = secrets.token_hex(16), _free_port()
    log = open(tmp / "jupyter.log", "wb")  # noqa: SIM115 - closed at teardown
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--allow-root",
            "--no-browser",
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root_dir}",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_LIMIT_S
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail("JupyterLab did not start:\n" + (tmp / "jupyter.log").read_text()[-3000:])
            time.sleep(0.2)
        yield base, token
    finally:
        # SIGTERM to the server's PID also stops its kernels (and so the node each started)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def page(lab):
    base, token = lab
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pg = browser.new_page(viewport={"width": 1280, "height": 2400})
        pg.set_default_timeout(UI_MS)
        pg.goto(f"{base}/lab/tree/{NB}?reset&token={token}")
        panel = pg.get_by_role("tabpanel", name=NB)
        expect(panel.locator(".jp-Toolbar-kernelName")).to_have_text("Python 3 (ipykernel)", timeout=UI_MS)
        expect(pg.locator(".jp-StatusBar-Widget", has_text="| Idle").first).to_be_visible(timeout=UI_MS)
        # clear stored outputs first, so that waiting for the widgets means this run drew them
        pg.get_by_role("menuitem", name="Edit", exact=True).click()
        pg.get_by_role("menuitem", name="Clear Outputs of All Cells", exact=True).click()
        pg.get_by_role("menuitem", name="Run", exact=True).click()
        pg.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        yield pg, panel
        browser.close()


def _shot(pg, name: str, locator=None) -> None:
    path = ARTIFACTS / f"browser-{name}.png"
    if locator is not None:
        locator.screenshot(path=str(path))
    else:
        pg.screenshot(path=str(path), full_page=True)


def _set(view, name: str):
    return view.locator(f'.emq-set[data-set="{name}"]')


def test_stepper_steps_back_and_paths(page):
    pg, panel = page
    stepper = panel.locator(".jp-OutputArea-output").filter(has_text="The lifecycle stepper").first
    step = stepper.locator(".widget-button", has_text="Step ▸")
    view = stepper.locator(".emq-view")
    expect(step).to_have_text("Step ▸ enqueue")
    expect(_set(view, "pending")).to_contain_text("empty")
    _shot(pg, "stepper-ready", stepper)

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


def test_composer_counter_ticks_to_zero(page):
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
    _shot(pg, "notebook")


def test_counter_plot_follows_the_composer(page):
    pg, panel = page
    # the plot cell follows the composer: one point per click, redrawn as a PNG
    img = panel.locator(".jp-OutputArea-output img.widget-image").last
    expect(img).to_be_visible()
    assert img.evaluate("e => e.naturalWidth") > 300
    _shot(pg, "counter-plot", img)


def test_executor_view_side_by_side(page):
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
