"""What a node takes on this machine: a free loopback port and a private folder, swept once it is stale.

Every folder is named ``echomq-node-…`` and names its owner (the kernel) and,
once started, its server; ``sweep_stale_dirs`` deletes those whose kernel and
server are both gone (the floor's object store uses the same sweep).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

from .process import pid_alive

_DIR_PREFIX = "echomq-node-"
_OWNER_FILE = "owner.pid"
_SERVER_FILE = "server.pid"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sweep_stale_dirs() -> None:
    """Delete node folders whose kernel and server are both gone.

    A kernel that is shut down runs no exit hooks: its server dies with it
    (PR_SET_PDEATHSIG) but the small temp folder stays. Only folders that name
    their owner are touched, and only once neither process is alive.
    """
    for d in Path(tempfile.gettempdir()).glob(_DIR_PREFIX + "*"):
        try:
            owner = int((d / _OWNER_FILE).read_text())
            server = int((d / _SERVER_FILE).read_text()) if (d / _SERVER_FILE).exists() else None
        except (OSError, ValueError):
            continue
        if owner == os.getpid() or pid_alive(owner) or (server is not None and pid_alive(server)):
            continue
        shutil.rmtree(d, ignore_errors=True)


def node_folder() -> Path:
    """A new 0700 folder for a node, naming this kernel as its owner (stale folders swept first)."""
    sweep_stale_dirs()
    folder = Path(tempfile.mkdtemp(prefix=_DIR_PREFIX))
    folder.chmod(0o700)
    (folder / _OWNER_FILE).write_text(str(os.getpid()))
    return folder


def note_server(folder: Path, pid: int) -> None:
    """Name the server a node folder holds: the sweep leaves the folder while it runs."""
    (folder / _SERVER_FILE).write_text(str(pid))
