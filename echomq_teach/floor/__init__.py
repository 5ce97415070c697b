"""The durable floor: archive a queue's completions stream before it is trimmed (EchoStore).

The queue lives in memory: a completed row is deleted, a dead one stays until
an operator reprocesses, removes or trims it, and a node without persistence
loses all of it when it restarts. A Consumer with ``record=True`` adds every
settle to ``emq:{q}:stream:completions``; the archive driver folds that stream,
slice by slice, into the floor, and trims each slice only after the floor
committed it::

    from echomq_teach import floor
    f = floor.open_floor("floor.sqlite3")                 # embedded: one SQLite file
    with floor.Driver(conn, "orders", f) as driver:       # one driver per stream
        driver.run(timeout=30)
    floor.reads.counts(f, "orders")                       # from the floor alone

With ``remote=floor.Remote(...)`` every slice is also sealed as an immutable
object in an S3-compatible store, and the stream is trimmed only once the
object is stored. ``python -m echomq_teach.floor`` runs a driver as a process.

The stream's entries and their parser are the core's (``echomq_teach.completions``).
Modules: ``embedded`` (SQLite),
``remote`` (the object store), ``lease`` (one driver per stream), ``driver``
(the fold), ``reads`` (queries and the throughput plot), ``process`` (a driver
as a child process), ``objectstore`` (a local SeaweedFS to be the remote). The
floor uses the core and the nodes' child process; the nodes never import it.
"""

from __future__ import annotations

from ..completions import Settle, StreamId, completions_stream
from ..errors import BadStream, DriverBusy, Fenced, FloorError
from . import reads
from .driver import STEPS, Driver, DriverReport, Fold
from .embedded import Floor, open_floor
from .remote import Remote

__all__ = [
    "STEPS",
    "BadStream",
    "Driver",
    "DriverBusy",
    "DriverReport",
    "Fenced",
    "Floor",
    "FloorError",
    "Fold",
    "Remote",
    "Settle",
    "StreamId",
    "completions_stream",
    "open_floor",
    "reads",
]
