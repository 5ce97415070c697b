"""How the ``trafikey`` module is compiled: its sources, flags and cached name (standard library only).

One recipe for the two places that compile it: the kit at first use (``nodes.trafikey.build``)
and ``setup.py`` when it builds a wheel (it loads this file by path, without the kit's
dependencies, and puts the module it compiles into the wheel under the same name, so the kit
finds it prebuilt). The name carries a hash of the sources and flags: a change to the C
rebuilds it, an unchanged tree reuses it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

MODULE_NAME = "trafikey"
CFLAGS = ["-std=c11", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden"]


def sources(src: Path) -> list[Path]:
    """The module's ``.c`` and ``.h`` files in ``src``, in a fixed order (empty when there are none)."""
    return sorted(src.glob("*.c")) + sorted(src.glob("*.h"))


def file_name(files: list[Path]) -> str:
    """``trafikey-<hash>.so``: the hash of ``files`` (names and bytes) and the flags."""
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    digest.update(" ".join(CFLAGS).encode())
    return f"{MODULE_NAME}-{digest.hexdigest()[:16]}.so"


def command(cc: str, src: Path, files: list[Path], out: Path) -> list[str]:
    """The compiler's command line that builds ``out`` from ``files`` (headers from ``src``)."""
    return [cc, *CFLAGS, "-I", str(src), "-o", str(out), *[str(f) for f in files if f.suffix == ".c"]]
