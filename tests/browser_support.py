"""A JupyterLab of a test's own, and headless Debian chromium pages on it, for the browser tests.

``lab_server`` starts ``jupyter lab`` on 127.0.0.1 with a random token, temporary
JUPYTER_* folders and settings that keep every cell in the DOM, waits until
``/api/status`` answers, and stops the server by its PID. ``chromium`` launches
the browser; ``open_notebook`` opens one notebook fresh and waits for its kernel;
``clear_outputs``, ``run_all`` and ``wait_all_ran`` drive it; ``shot`` saves a PNG.
Every wait is a bound, never an assertion about speed.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import terminate

from echomq_teach.hub.lab_server import SERVER_ARGS

ROOT = Path(__file__).resolve().parent.parent
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
KERNEL_NAME = "Python 3 (ipykernel)"
START_LIMIT_S = 60  # bounds on waiting, never assertions about speed
UI_MS = 60_000

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect


def require_chromium() -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (Debian: apt-get install -y chromium)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_settings(settings_dir: Path, notifications: bool = True) -> None:
    """Every cell stays in the DOM (windowingMode none), no blank page past the last cell, no news or updates.

    ``notifications=False`` leaves the news and update settings to the server's defaults (the course's
    ``tools/jupyterlab/overrides.json`` when it is given as the app settings).
    """
    tracker = settings_dir / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True, exist_ok=True)
    tracker.write_text(json.dumps({"windowingMode": "none", "scrollPastEnd": False}))
    if not notifications:
        return
    notes = settings_dir / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))


@dataclass
class Lab:
    base: str
    token: str
    root_dir: Path
    log_path: Path
    proc: subprocess.Popen

    def url(self, notebook: str) -> str:
        """The notebook's page, opened with a fresh workspace (no tabs restored)."""
        return f"{self.base}/lab/tree/{quote(notebook)}?reset&token={self.token}"

    def api(self, method: str, path: str) -> object:
        req = urllib.request.Request(
            f"{self.base}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def sessions(self) -> list[dict]:
        return self.api("GET", "/api/sessions")  # type: ignore[return-value]

    def close_sessions(self, notebook: str | None = None) -> int:
        """Delete the sessions (and so shut down the kernels) of one notebook, or of all; answers how many."""
        gone = 0
        for s in self.sessions():
            if notebook is None or s.get("path") == notebook:
                self.api("DELETE", f"/api/sessions/{s['id']}")
                gone += 1
        return gone

    def log_tail(self, n: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-n:]


@contextmanager
def lab_server(
    tmp: Path, root_dir: Path, *, notifications: bool = True, app_settings_dir: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[Lab]:
    """Run ``jupyter lab`` on ``root_dir`` with its config under ``tmp``; stop it by PID on exit.

    ``notifications=False`` writes no news settings of the test's own; ``app_settings_dir`` is the
    folder JupyterLab reads ``overrides.json`` from (the course ships one in ``tools/jupyterlab/``);
    ``env`` is added to the server's environment, which its kernels inherit (a student's, say).
    """
    env = {**os.environ, **(env or {})}
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR"):
        env[var] = str(tmp / var.lower())
    env["JUPYTERLAB_SETTINGS_DIR"] = str(tmp / "settings")
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp / "workspaces")
    write_settings(tmp / "settings", notifications)
    extra = [f"--LabApp.app_settings_dir={app_settings_dir}"] if app_settings_dir is not None else []
    token, port = secrets.token_hex(16), free_port()
    env["JUPYTER_TOKEN"] = token  # not on the command line, which ps shows to every user of the machine
    log_path = tmp / "jupyter.log"
    with open(log_path, "wb") as log:
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
                f"--ServerApp.root_dir={root_dir}",
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--LabApp.extension_manager=readonly",
                *extra,
                *SERVER_ARGS,  # kernel websockets with TCP_NODELAY, as every server the kit starts
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        lab = Lab(f"http://127.0.0.1:{port}", token, root_dir, log_path, proc)
        try:
            _wait_ready(lab)
            yield lab
        finally:
            # SIGTERM to the server's PID also stops its kernels (and so the node each started)
            terminate(proc)


@contextmanager
def lab_on_copies(tmp_path_factory, *paths: Path, env: dict[str, str] | None = None) -> Iterator[Lab]:
    """A JupyterLab server of a test's own on copies of ``paths`` (notebooks, or folders such as
    ``solutions/``): kernels outlive their pages, and autosave may rewrite what it opened. ``env`` is
    added to the environment its kernels inherit."""
    require_chromium()
    tmp = tmp_path_factory.mktemp("lab")
    root_dir = tmp / "root"
    root_dir.mkdir()
    for path in paths:
        if path.is_dir():
            shutil.copytree(path, root_dir / path.name)
        else:
            shutil.copy(path, root_dir / path.name)
    with lab_server(tmp, root_dir, env=env) as server:
        yield server


def _wait_ready(lab: Lab) -> None:
    deadline = time.monotonic() + START_LIMIT_S
    while True:
        try:
            with urllib.request.urlopen(f"{lab.base}/api/status?token={lab.token}", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if lab.proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail("JupyterLab did not start:\n" + lab.log_tail())
        time.sleep(0.2)


@contextmanager
def chromium() -> Iterator[object]:
    """Headless Debian chromium (a fresh temporary profile), closed on exit."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_notebook(browser, lab: Lab, notebook: str, viewport: dict | None = None):
    """A new page on ``notebook``, once its kernel is up and idle; answers (page, panel)."""
    pg = browser.new_page(viewport=viewport or {"width": 1280, "height": 2400})
    pg.set_default_timeout(UI_MS)
    pg.goto(lab.url(notebook))
    panel = pg.get_by_role("tabpanel", name=Path(notebook).name)
    wait_kernel_idle(pg, panel)
    return pg, panel


def wait_kernel_idle(pg, panel, timeout_ms: int = UI_MS) -> None:
    # "idle" alone is not enough: the indicator says idle while the notebook still shows "No Kernel"
    expect(panel.locator(".jp-Toolbar-kernelName")).to_have_text(KERNEL_NAME, timeout=timeout_ms)
    expect(pg.locator(".jp-StatusBar-Widget", has_text="| Idle").first).to_be_visible(timeout=timeout_ms)


def menu(pg, *path: str) -> None:
    """Click through the menu bar by exact names, e.g. ``menu(pg, "Run", "Run All Cells")``."""
    for name in path:
        pg.get_by_role("menuitem", name=name, exact=True).click()


def clear_outputs(pg) -> None:
    """Clear every stored output and prompt, so that waiting for ``[n]:`` means this run drew it."""
    menu(pg, "Edit", "Clear Outputs of All Cells")


def run_all(pg) -> None:
    menu(pg, "Run", "Run All Cells")


# True once no cell is queued or running and either every code cell has an execution count
# or a cell failed (Run All stops at the first error, leaving the rest unnumbered).
_ALL_RAN_JS = """
panel => {
  const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')].map(p => p.textContent.trim());
  if (prompts.length === 0 || prompts.some(t => t === '[*]:')) return false;
  const failed = [...panel.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
    .some(o => o.textContent.includes('Traceback'));
  return failed || prompts.every(t => /^\\[\\d+\\]:$/.test(t));
}
"""


def wait_all_ran(pg, panel, timeout_ms: int) -> None:
    """Bound the wait for Run All to finish (or stop at an error), then for the kernel to be idle."""
    pg.wait_for_function(_ALL_RAN_JS, arg=panel.element_handle(), timeout=timeout_ms, polling=250)
    wait_kernel_idle(pg, panel)


def shot(pg, path: Path, locator=None) -> Path:
    """A PNG of ``locator``, or of the whole page; folders are made as needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if locator is not None:
        locator.screenshot(path=str(path))
    else:
        pg.screenshot(path=str(path), full_page=True)
    return path


def shot_whole_notebook(pg, panel, path: Path, width: int = 1280) -> Path:
    """Grow the window until the notebook needs no scrolling, then take a full-page PNG from its top."""
    fit_notebook(pg, panel, width)
    return shot(pg, path)


def fit_notebook(pg, panel, width: int = 1280) -> None:
    """Grow the window until the notebook needs no scrolling, its top in view: every cell on screen at once."""
    scroller = panel.locator(".jp-WindowedPanel-outer").first
    for _ in range(4):  # a taller window re-lays the notebook out; settle in a few rounds
        client, need = scroller.evaluate("e => [e.clientHeight, e.scrollHeight - e.clientHeight]")
        if need <= 2:
            break
        pg.set_viewport_size({"width": width, "height": pg.viewport_size["height"] + need + 40})
        # lumino lays the panel out again after the resize: wait (bounded) until the scroller grew
        pg.wait_for_function(
            "([e, h]) => e.clientHeight >= h", arg=[scroller.element_handle(), client + need], timeout=UI_MS
        )
    scroller.evaluate("e => { e.scrollTop = 0; }")


# Clicks ``button`` and answers the milliseconds, on the page's own clock, until the widget output it
# sits in shows a caption holding ``caption`` and a set view whose contents changed: click to redrawn
# view, kernel round trip included. A MutationObserver sees each DOM change as it lands.
_CLICK_TO_REDRAW_JS = """
(button, caption) => new Promise((resolve, reject) => {
  const box = button.closest('.jp-OutputArea-output');
  const viewNow = () => { const v = box.querySelector('.emq-view'); return v ? v.innerHTML : ''; };
  const before = viewNow();
  const redrawn = () => {
    const cap = box.querySelector('.emq-cap');
    return cap !== null && cap.textContent.includes(caption) && viewNow() !== before;
  };
  let t0 = 0;
  const obs = new MutationObserver(() => {
    if (redrawn()) { const ms = performance.now() - t0; obs.disconnect(); clearTimeout(bound); resolve(ms); }
  });
  const bound = setTimeout(() => { obs.disconnect(); reject(new Error('no redraw within the bound')); }, %d);
  obs.observe(box, {subtree: true, childList: true, characterData: true, attributes: true});
  t0 = performance.now();
  button.click();
})
"""


def click_to_redraw_ms(button, caption: str, bound_ms: int = UI_MS) -> float:
    """Click ``button``; the ms until its widget shows ``caption`` and a redrawn set view (a bound, not a goal)."""
    return float(button.evaluate(_CLICK_TO_REDRAW_JS % bound_ms, caption))
