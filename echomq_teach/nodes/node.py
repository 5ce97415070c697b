"""What every node the kit talks to answers: its address, its wire, connectors (EchoMQ's node behaviour).

``LocalNode`` (``nodes.local``) is a server this kernel started; ``RemoteNode``
(``nodes.remote``) one named by a URL; the container node (``nodes.container``)
one in a container. Each hands out raw clients and traced connectors that keep
it alive: a node whose last reference is dropped is stopped by its finalizer.
"""

from __future__ import annotations

from typing import Any

import redis

from ..connector import Connector, connect, make_client


class Node:
    """A node the kit talks to; it hands out connectors (``node.connector()``)."""

    native: bool = False
    durable: bool = False

    @property
    def address(self) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def wire(self) -> int:
        return 6 if self.native else 4

    def client(self) -> redis.Redis:
        """A raw redis-py client, for looking under the hood (no trace); it keeps the node alive."""
        c = make_client(self.address)
        c.echomq_node = self  # a node whose last reference is dropped stops: this is one
        return c

    def connector(self, wire: int | None = None) -> Connector:
        """A traced connector: wire 4 on a scripted node, wire 6 on a native one; it keeps the node alive."""
        return connect(self.address, wire=self.wire if wire is None else wire, node=self)

    #: True for a node this kernel started (and so stops); a shared node stays up
    owned: bool = False

    @property
    def running(self) -> bool:
        """True while the node answers for this kernel; a shared node counts as always running."""
        return True

    def stop(self) -> None:
        """Stop the node if this kernel owns it; a shared node is left alone."""

    def __enter__(self) -> Node:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
