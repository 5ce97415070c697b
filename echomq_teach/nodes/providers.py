"""The node providers: where ``start_node()`` finds or starts a node (EchoMQ's node providers).

The embedded local node is the default; ``ECHOMQ_URL`` (and, for a native
node, ``ECHOMQ_NATIVE_URL``) names an existing one; ``provider="container"``
runs the node image. The dependency runs one way: this module imports
``local``, ``remote`` and ``container``, and each builds on ``node``.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import NodeError
from .local import LocalNode
from .node import Node
from .remote import RemoteNode


def start_node(
    native: bool = False,
    durable: bool = False,
    provider: str | None = None,
    unix_socket: bool = False,
    **kwargs: Any,
) -> Node:
    """Start (or find) a node: the embedded local default, ``ECHOMQ_URL``, or a container.

    ``provider`` is ``"local"`` (default), ``"url"`` (``$ECHOMQ_URL``, also chosen
    when that variable is set), or ``"container"`` (testcontainers and a Docker engine).
    """
    # a classroom may run its native (wire 6) node apart from the scripted one
    url = (native and os.environ.get("ECHOMQ_NATIVE_URL")) or os.environ.get("ECHOMQ_URL")
    provider = provider or ("url" if url else "local")
    if provider == "url":
        if not url:
            raise NodeError("provider 'url' needs ECHOMQ_URL, e.g. redis://:password@127.0.0.1:6390/0")
        return RemoteNode(url, native=native)
    if provider == "container":
        from . import container  # the optional extra: imported only when asked for

        return container.start(native=native, durable=durable, **kwargs)
    if provider != "local":
        raise NodeError(f"unknown node provider {provider!r}: use 'local', 'url' or 'container'")
    return LocalNode(native=native, durable=durable, unix_socket=unix_socket, **kwargs)
