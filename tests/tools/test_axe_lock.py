"""The browser tests' axe-core is the one tools/axe.lock pins: a copy with another digest is refused by name."""

from __future__ import annotations

import hashlib
import re

import a11y_support as a11y
import pytest


def test_the_lock_pins_a_version_and_a_digest():
    lock = a11y.lock()
    assert re.fullmatch(r"\d+\.\d+\.\d+", lock["version"])
    assert re.fullmatch(r"[0-9a-f]{64}", lock["axe_min_sha256"])


def test_a_copy_that_is_not_the_pinned_one_is_refused(tmp_path, monkeypatch):
    fake = tmp_path / "axe.min.js"
    fake.write_text("window.axe = {version: '4.14.1'};")  # the right version string, not the right script
    assert hashlib.sha256(fake.read_bytes()).hexdigest() != a11y.lock()["axe_min_sha256"]
    monkeypatch.setattr(a11y, "AXE", fake)
    a11y.axe_source.cache_clear()
    try:
        with pytest.raises(pytest.fail.Exception, match="is not the axe-core tools/axe.lock pins"):
            a11y.axe_source()
        monkeypatch.setattr(a11y, "AXE", tmp_path / "absent.js")
        with pytest.raises(pytest.fail.Exception, match="run bash tools/install-axe.sh"):
            a11y.axe_source()
    finally:
        a11y.axe_source.cache_clear()
