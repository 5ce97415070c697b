"""The course opens on its first notebook, not on JupyterLab's question about news.

JupyterLab asks "Would you like to get notified about official Jupyter news?" in a toast over the
notebook whenever the setting ``fetchNews`` is unset, whatever the server's ``news_url``. The course
ships ``tools/jupyterlab/overrides.json``, which its launch command and images put in JupyterLab's
app settings. Here JupyterLab runs with only that file (no news settings of the test's own) and the
question must not appear; with an empty app settings folder it does, so the check can fail.
"""

from __future__ import annotations

import shutil

import browser_support as bs
import pytest

pytestmark = pytest.mark.browser

QUESTION = "Would you like to get notified about official Jupyter news?"
FIRST = "00-start-here.ipynb"


def _question_count(tmp, app_settings) -> int:
    root = tmp / "root"
    root.mkdir()
    shutil.copy(bs.ROOT / "notebooks" / FIRST, root / FIRST)
    with bs.lab_server(tmp, root, notifications=False, app_settings_dir=app_settings) as lab, bs.chromium() as b:
        pg = b.new_page(viewport={"width": 1280, "height": 900})
        pg.set_default_timeout(bs.UI_MS)
        pg.goto(lab.url(FIRST))
        panel = pg.get_by_role("tabpanel", name=FIRST)
        bs.wait_kernel_idle(pg, panel)
        pg.wait_for_timeout(3000)  # the question comes once the app is restored: give it time to show
        count = pg.get_by_text(QUESTION).count()
        if app_settings is not None:
            bs.shot(pg, bs.ARTIFACTS / "course-first-open.png")
        pg.close()
        lab.close_sessions()
        return count


def test_the_course_settings_keep_the_news_question_away(tmp_path):
    bs.require_chromium()
    settings = tmp_path / "app-settings"
    settings.mkdir()
    shutil.copy(bs.ROOT / "tools" / "jupyterlab" / "overrides.json", settings / "overrides.json")
    (tmp_path / "with").mkdir()
    assert _question_count(tmp_path / "with", settings) == 0


def test_without_them_the_question_covers_the_notebook(tmp_path):
    bs.require_chromium()
    empty = tmp_path / "app-settings"
    empty.mkdir()
    (tmp_path / "without").mkdir()
    assert _question_count(tmp_path / "without", empty) >= 1
