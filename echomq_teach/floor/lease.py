"""One driver per stream: a lease on the node with a fencing token (EchoStore.StreamArchive.Driver's lock).

``emq:{q}:floor:driver`` holds ``"<token> <holder>"`` with a TTL; a new holder
takes the next token from ``emq:{q}:floor:fence``. The lease alone cannot stop
a driver that was paused (SIGSTOP, a long GC) and wakes after its lease ran
out, so every write checks the token where it lands: the floor refuses an
older token than it has seen, and ``@floor_trim`` trims only for the holder.
"""

from __future__ import annotations

import os
import secrets
import socket
import time

from .. import transitions
from ..connector import Connector
from ..errors import BadStream, DriverBusy, Fenced


def holder_name() -> str:
    """This process, uniquely: ``host:pid:nonce`` (a pid is reused; the nonce is not)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Lease:
    """The lease of one queue's completions stream, as one driver holds it."""

    def __init__(self, conn: Connector, queue: str, lease_ms: int) -> None:
        self.conn, self.queue, self.lease_ms = conn, queue, lease_ms
        self.holder = holder_name()
        self.token = 0
        self._taken_at = 0.0

    def take(self, floor_token: int) -> int:
        """Take or renew the lease; answers the token. ``DriverBusy`` when another driver holds it."""
        token, who, *left = self.conn.run(transitions.floor_lease(self.queue, self.holder, self.lease_ms, floor_token))
        if int(token) == 0:
            ms = int(left[0]) if left else -1
            raise DriverBusy(
                f"another archive driver ({who}) holds the stream of queue {self.queue!r} for {ms} ms more: "
                "one driver per stream; this one is refused"
            )
        self.token = int(token)
        self._taken_at = time.monotonic()
        return self.token

    def age_ms(self) -> float:
        """How long ago this driver last took or renewed the lease."""
        return (time.monotonic() - self._taken_at) * 1000

    def trim(self, stream: str, minid: str, cursor: str) -> int:
        """``@floor_trim``: XTRIM MINID while this driver holds the lease; answers how many entries went."""
        call = transitions.floor_trim(self.queue, stream, self.token, self.holder, minid, self.lease_ms, cursor)
        n = int(self.conn.run(call))
        if n == -1:
            raise Fenced(
                f"the lease on queue {self.queue!r} is no longer this driver's (token {self.token}): not trimmed"
            )
        if n == -2:
            raise BadStream(
                f"{stream} has ids below the floor's cursor {cursor}: it is not the stream the floor archived "
                "(deleted and made again?); nothing was trimmed"
            )
        return n

    def release(self) -> bool:
        """Give the lease back if it is still ours (``@floor_release``)."""
        if not self.token:
            return False
        return self.conn.run(transitions.floor_release(self.queue, self.token, self.holder)) == 1
