"""Who holds the connections: open sockets per student container, read from the host, not the node.

A full node (``maxclients`` reached) refuses every new connection, the
instructor's too, so the instructor cannot ask it ``CLIENT LIST``. Valkey has
no per-user connection limit. What the host still sees is each container's
processes and their open sockets (``/proc/<pid>/fd``); the hub names each
student's container ``echomq-<name>``. ``holders()`` counts them, as root; the
instructor then stops that student's server (the hub's admin page, or
``docker stop echomq-<name>``), which closes every connection it held, and
``revoke`` runs once the node answers again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

PREFIX = "echomq-"


def sockets_of(pids: list[int]) -> int:
    """Open sockets across ``pids`` (a process that is gone, or unreadable, counts none)."""
    n = 0
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                try:
                    n += os.readlink(fd).startswith("socket:")
                except OSError:
                    continue
        except OSError:
            continue
    return n


def holders(client: Any) -> list[tuple[str, int]]:
    """(student, open sockets) for every running ``echomq-<name>`` container, most first."""
    out = []
    for ct in client.containers.list(filters={"name": PREFIX}):
        if not ct.name.startswith(PREFIX):
            continue
        titles_procs = ct.top(ps_args="-o pid")
        pids = [int(row[0]) for row in titles_procs.get("Processes") or []]
        out.append((ct.name.removeprefix(PREFIX), sockets_of(pids)))
    return sorted(out, key=lambda pair: (-pair[1], pair[0]))
