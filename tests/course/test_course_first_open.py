"""A fresh notebook opened from the course command shows its stored widgets (issue 22, item 1).

``tools/course.sh`` trusts the course's notebooks; 01 and 07 are then opened in
headless chromium in that command's JupyterLab, and before any cell runs each
stored widget must be drawn from the stored state — 07's chaos widget (its
verdict line), 01's lifecycle stepper (its caption and set view) — not shown
as the line of text an untrusted notebook shows (``ChaosView(…)``,
``Lifecycle stepper, …``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import browser_support as bs
import pytest
from browser_support import expect

pytestmark = pytest.mark.browser


# per notebook: text the drawn widget shows, and its text fallback (what an untrusted notebook shows instead)
STORED = {
    "01-lifecycle.ipynb": ("The lifecycle stepper", re.compile(r"Lifecycle stepper, \w+ path")),
    "07-when-things-fail.ipynb": ("verdict:", re.compile(r"ChaosView\(\d+ workers\)")),
}


def test_notebooks_open_showing_their_stored_widgets(tmp_path: Path) -> None:
    bs.require_chromium()
    port = bs.free_port()
    env = {**os.environ, "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data")}  # trusted by this run only
    proc = subprocess.Popen(
        ["bash", str(bs.ROOT / "tools" / "course.sh"), f"--ServerApp.port={port}", "--ServerApp.port_retries=0"],
        cwd=bs.ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        url = ""
        deadline = time.monotonic() + bs.START_LIMIT_S
        assert proc.stdout is not None
        while time.monotonic() < deadline and not url:
            line = proc.stdout.readline()
            if not line:
                break
            m = re.search(r"http://127\.0\.0\.1:\d+/lab\?token=[0-9a-f]+", line)
            url = m.group(0) if m else ""
        assert url, "the course command printed no URL"
        with bs.chromium() as browser:
            for notebook, (drawn, fallback_text) in STORED.items():
                pg = browser.new_page(viewport={"width": 1280, "height": 2400})
                pg.set_default_timeout(bs.UI_MS)
                pg.goto(url.replace("/lab?", f"/lab/tree/{notebook}?reset&"))
                panel = pg.get_by_role("tabpanel", name=notebook)
                # the stored widget drawn by the front end, with no cell run
                expect(panel.locator(".widget-html", has_text=drawn).first).to_be_visible(timeout=bs.UI_MS)
                outputs = panel.locator(".jp-OutputArea-output")
                assert outputs.filter(has_text=fallback_text).count() == 0, f"{notebook}: a widget shown as text"
                # no kernel ran a cell: every code cell's prompt is still the stored one or empty, none busy
                assert "[*]:" not in panel.locator(".jp-InputArea-prompt").all_text_contents()
                bs.shot(pg, bs.ROOT / "artifacts" / f"course-{notebook[:2]}-first-open.png")
                pg.close()
    finally:
        os.kill(proc.pid, signal.SIGTERM)  # the command's own PID: its trap stops JupyterLab and its kernels
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the session this test started
            proc.wait(timeout=10)
