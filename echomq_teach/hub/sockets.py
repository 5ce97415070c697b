"""The hub's Unix-socket URLs: ``http+unix://<quoted path>`` (JupyterHub's form) and back.

On a classroom host a student's container reaches the hub's API and the live
view's reports through Unix sockets (``docker/jupyterhub_config.py``), named by
such URLs. JupyterHub's own HTTP client (aiohttp) lower-cases the host part of
a URL, and for these URLs the host part is the socket's path: a path with a
capital letter would name another file. ``unix_url`` refuses one, by name.
"""

from __future__ import annotations

import os
from urllib.parse import quote, unquote


class SocketPathError(ValueError):
    """A socket path the hub's URLs cannot carry (the message names it and why)."""


def unix_url(path: str | os.PathLike[str]) -> str:
    """An ``http+unix://`` URL for the socket at ``path`` (absolute, lower case, short enough)."""
    text = str(path)
    if not os.path.isabs(text):
        raise SocketPathError(f"{text!r}: a socket's path must be absolute")
    if text != text.lower():
        raise SocketPathError(
            f"{text!r}: JupyterHub's client lower-cases a socket URL's path, so the path must be in lower case "
            "(choose a state folder such as /srv/classroom/hub)"
        )
    if len(text.encode()) > 107:
        raise SocketPathError(f"{text!r}: longer than a Unix socket's name may be (107 bytes)")
    return "http+unix://" + quote(text, safe="")


def socket_path(url: str) -> str | None:
    """The socket of an ``http+unix://`` (or ``unix+http://``) URL, a port suffix dropped; None for any other URL."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http+unix", "unix+http"):
        return None
    netloc = rest.split("/", 1)[0]
    host, colon, port = netloc.rpartition(":")
    return unquote(host if colon and port.isdigit() else netloc)
