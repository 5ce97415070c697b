"""The kit's exceptions: each names the problem in plain words.

Bad input raises before anything is sent, so a refused call writes nothing.
"""

from __future__ import annotations


class EchoMQError(Exception):
    """Base of every error the kit raises on purpose."""


class BadInput(EchoMQError, ValueError):
    """An argument the course's API would refuse (a lease, a queue name, a payload)."""


class DuplicateJob(EchoMQError):
    """`@enqueue` refused an id that already has a row (D-2 in docs/decisions.md: never overwrite)."""


class UnknownJob(EchoMQError, KeyError):
    """The job id has no row in this queue."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown job"


class WrongState(EchoMQError):
    """The job exists but is not in the state the call needs (EMQSTATE)."""


class WireError(EchoMQError):
    """The node's `{emq}:version` brand does not match the connector's wire (EMQWIRE)."""


class NodeError(EchoMQError):
    """A node could not be started, reached or stopped."""


class FloorError(EchoMQError):
    """The durable floor could not be opened, written or reached (a path, a file, an object store)."""


class BadStream(FloorError, BadInput):
    """The completions stream the archive driver was given is missing or holds entries of another shape."""


class DriverBusy(FloorError):
    """Another archive driver holds the stream's lease: one driver per stream, refused rather than raced."""


class Fenced(FloorError):
    """A driver's token is older than the floor's (or its lease went to another driver): its write is refused."""

class CrossSlot(BadInput):
    """A call's keys hash to more than one cluster slot: refused by the kit before anything is sent."""
