"""The hub's relays between its ports and the students' sockets, held in the hub's own process.

Students' containers have no network (``spawner.py``): a student's server
listens on a Unix socket in a folder only that student's container mounts,
and the container reaches the hub's API through a socket of the hub's. The
proxy, though, is best given TCP targets: configurable-http-proxy (5.1 and
5.3) sends every request to a Unix-socket target with ``Connection: close``
and may write to the socket after the server has answered and closed it; the
write fails (EPIPE) and the proxy answers 503 for a request the server
served. Over a socket path here that was a third of small POSTs (96 of 300).

So the hub holds, for each student, a port on 127.0.0.1 that relays bytes to
that student's socket (``serve_student``), for as long as the hub lives: a
server that stops or dies leaves its port held by the hub, never free for
anyone to bind, and its route leads to a socket only that student's next
server can bind. The hub's API is relayed the other way (``serve_hub_api``):
a socket in a folder mounted read-only into every container, to the hub's port.
No student's container can reach any of these ports: it has no network.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from pathlib import Path

CHUNK = 64 * 1024
#: student name -> (its relay, the port it holds); the hub's API relay; each lives as long as the hub
_STUDENTS: dict[str, tuple[asyncio.AbstractServer, int]] = {}
_HUB_API: dict[str, asyncio.AbstractServer] = {}


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Bytes from ``reader`` to ``writer`` until the reader's end, then the writer's half of the link closes."""
    try:
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


async def _pipe(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter,
                connect: object) -> None:
    """One relayed connection: open the far side (``connect()``), copy both ways, close both."""
    try:
        far_r, far_w = await connect()  # type: ignore[operator]
    except OSError:
        client_w.close()  # nobody there (a server that died): the proxy answers 503 for it
        return
    try:
        await asyncio.gather(_copy(client_r, far_w), _copy(far_r, client_w))
    finally:
        for w in (far_w, client_w):
            with contextlib.suppress(Exception):
                w.close()


async def serve_student(name: str, socket_path: str | os.PathLike[str]) -> int:
    """The port (127.0.0.1) that relays to ``name``'s server socket: made at the first spawn, then kept."""
    held = _STUDENTS.get(name)
    if held is not None:
        return held[1]
    path = str(socket_path)

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await _pipe(r, w, lambda: asyncio.open_unix_connection(path))

    server = await asyncio.start_server(handle, "127.0.0.1", 0, family=socket.AF_INET)
    port = server.sockets[0].getsockname()[1]
    _STUDENTS[name] = (server, port)
    return port


async def serve_hub_api(socket_path: str | os.PathLike[str], host: str, port: int) -> None:
    """The hub's API at ``socket_path`` (0666, its folder read-only in the containers), relayed to host:port."""
    path = str(socket_path)
    if path in _HUB_API:
        return

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await _pipe(r, w, lambda: asyncio.open_connection(host, port))

    Path(path).unlink(missing_ok=True)
    server = await asyncio.start_unix_server(handle, path)
    os.chmod(path, 0o666)  # every student's container connects (its uid is the image's); the folder is root's
    _HUB_API[path] = server


def student_port(name: str) -> int | None:
    """The port the hub holds for ``name``'s server, or None before their first spawn."""
    held = _STUDENTS.get(name)
    return held[1] if held else None
