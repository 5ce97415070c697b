"""The archive driver: fold the completions stream into the floor, then trim it (EchoStore.StreamArchive.Driver).

One fold, in this order:

1. ``read``   — ``XRANGE stream (<cursor> + COUNT n``: the next slice after the floor's cursor;
2. ``write``  — the slice's rows, its cursor (and with a remote its planned object) in one
   SQLite transaction (D-6 in docs/decisions.md); a crash inside it rolls the whole slice back;
3. ``commit`` — the transaction is on disk;
4. ``upload`` — with a remote, the slice's object is stored, then marked in the index;
5. ``trim``   — ``@floor_trim``: ``XTRIM stream MINID <first id not durable>``.

The trim never precedes the write it depends on, and the next fold starts
from the committed cursor, so a crash at any step loses nothing and folds
nothing twice: a fold first finishes what a crashed one left (uploads, then
the trim), then reads after the cursor.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..completions import ZERO, Settle, StreamId, completions_stream, parse_entry
from ..connector import Connector
from ..errors import BadInput, BadStream, DriverBusy
from ..jobs import positive_int
from ..keyspace import check_queue
from .embedded import Floor
from .lease import Lease

STEPS = ("read", "write", "commit", "upload", "trim")
DEFAULT_SLICE = 100
DEFAULT_LEASE_MS = 10_000

#: called as ``on_step(step, fold_number)`` at each step of a fold that read something (crash points)
StepHook = Callable[[str, int], None]


def check_stream(conn: Connector, stream: str, floor: Floor) -> None:
    """Refuse a stream that is missing or is another type, naming what the floor still holds."""
    kind = conn.call("TYPE", stream)
    if kind == "stream":
        return
    if kind == "none":
        cursor = floor.cursor(stream)
        held = (
            f"the floor holds its settles up to {cursor}; a node restarted without persistence "
            "has lost what was not yet folded"
            if cursor != ZERO
            else "nothing was ever recorded on it: run a Consumer with record=True first, or check the queue name"
        )
        raise BadStream(f"no stream at {stream}: {held}")
    raise BadStream(f"{stream} is a {kind}, not a stream: the driver folds only a completions stream")


@dataclass
class Fold:
    """What one fold did, and the stream and floor after it."""

    read: int = 0
    first: str | None = None
    last: str | None = None
    uploaded: list[str] = field(default_factory=list)
    #: uploaded names that were already in the store (a crashed upload had landed): only marked
    found_stored: list[str] = field(default_factory=list)
    trimmed: int = 0
    stream_len: int = 0
    floor_rows: int = 0


@dataclass
class DriverReport:
    folds: int = 0
    folded: int = 0
    trimmed: int = 0
    uploaded: int = 0
    seconds: float = 0.0
    stopped_by: str = ""


class Driver:
    """Folds one queue's completions stream into ``floor`` (EchoStore.StreamArchive.Driver).

    The first fold (or ``start()``) checks the stream, takes the stream's lease —
    a second driver is refused with ``DriverBusy`` — and fences the floor with
    the lease's token, so a driver that wakes after losing its lease writes nothing.
    """

    def __init__(
        self,
        conn: Connector,
        queue: str,
        floor: Floor,
        *,
        slice_size: int = DEFAULT_SLICE,
        lease_ms: int = DEFAULT_LEASE_MS,
        on_step: StepHook | None = None,
    ) -> None:
        check_queue(queue)
        positive_int("slice_size", slice_size)
        positive_int("lease_ms", lease_ms)
        if floor.readonly:
            raise BadInput(f"the floor at {floor.path} is open read-only: a driver writes")
        self.conn, self.queue, self.floor = conn, queue, floor
        self.stream = completions_stream(queue)
        self.slice_size = slice_size
        self.lease = Lease(conn, queue, lease_ms)
        self.on_step = on_step
        self.folds = 0  # folds that read something
        self._fenced = 0
        self._peeked: tuple[StreamId, list[Settle]] | None = None

    # -- the lease --------------------------------------------------------------------------------
    def start(self, wait_s: float = 0.0) -> int:
        """Check the stream and the next slice, then take the lease; answers the token.

        ``wait_s`` waits (bounded) for a lease another driver left, e.g. one that was killed.
        """
        check_stream(self.conn, self.stream, self.floor)
        # a slice of another shape is refused before the lease is written; a fold that follows reuses it
        self._peeked = (self.floor.cursor(self.stream), self._next_slice())
        deadline = time.monotonic() + wait_s
        while True:
            try:
                token = self.lease.take(self.floor.token(self.stream))
                break
            except DriverBusy:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)
        self._fence(token)
        return token

    def _fence(self, token: int) -> None:
        if token != self._fenced:
            self.floor.fence(self.stream, token)
            self._fenced = token

    @property
    def token(self) -> int:
        return self.lease.token

    def stop(self) -> bool:
        """Give the lease back (answers whether it was still ours); the floor stays open."""
        released = self.lease.release()
        self.lease.token = self._fenced = 0
        return released

    def __enter__(self) -> Driver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- one fold -----------------------------------------------------------------------------------
    def _step(self, name: str) -> None:
        if self.on_step is not None:
            self.on_step(name, self.folds)

    def _next_slice(self) -> list[Settle]:
        cursor = self.floor.cursor(self.stream)
        entries = self.conn.call("XRANGE", self.stream, f"({cursor}", "+", "COUNT", self.slice_size)
        return [parse_entry(self.stream, eid, fields) for eid, fields in entries]

    def _trim(self) -> int:
        minid = self.floor.trim_below(self.stream)
        if minid is None:
            return 0
        # an upload to a slow store may outlast the lease: renew past half of it. If nobody took the
        # stream meanwhile, this driver takes it again under a newer token; else it is refused here
        if self.lease.age_ms() > self.lease.lease_ms / 2:
            self._fence(self.lease.take(self.floor.token(self.stream)))
        return self.lease.trim(self.stream, str(minid), str(self.floor.cursor(self.stream)))

    def _upload(self, f: Fold) -> None:
        if self.floor.remote is None:
            return
        for name, stored in self.floor.upload_pending(self.stream, lambda n: self._step("upload")):
            f.uploaded.append(name)
            if not stored:
                f.found_stored.append(name)

    def fold(self) -> Fold:
        """Finish what an earlier fold left, then fold one slice: read, write, commit, (upload), trim."""
        if not self.lease.token:
            self.start()
        else:
            self._fence(self.lease.take(self.floor.token(self.stream)))  # renew; refused if lost
            check_stream(self.conn, self.stream, self.floor)
        f = Fold()
        self._upload(f)
        f.trimmed += self._trim()
        cursor = self.floor.cursor(self.stream)
        peeked, self._peeked = self._peeked, None
        settles = peeked[1] if peeked is not None and peeked[0] == cursor else self._next_slice()
        if settles:
            self.folds += 1
            f.read, f.first, f.last = len(settles), str(settles[0].stream_id), str(settles[-1].stream_id)
            self._step("read")
            self.floor.commit(self.stream, cursor, settles, self.lease.token, midway=lambda: self._step("write"))
            self._step("commit")
            self._upload(f)
            f.trimmed += self._trim()
            self._step("trim")
        f.stream_len = int(self.conn.call("XLEN", self.stream))
        f.floor_rows = self.floor.count(self.stream)
        return f

    def run(
        self,
        timeout: float = 10.0,
        *,
        until_empty: bool = True,
        max_folds: int | None = None,
        idle_ms: int = 50,
        on_fold: Callable[[Fold], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> DriverReport:
        """Fold until the stream is empty (``until_empty``), ``max_folds``, ``should_stop()`` or ``timeout`` s."""
        if timeout is None or timeout <= 0:
            raise BadInput("run() needs a positive timeout in seconds: every loop here is bounded")
        r = DriverReport()
        start = time.monotonic()
        while True:
            if should_stop is not None and should_stop():
                r.stopped_by = "stop"
                break
            if max_folds is not None and r.folds >= max_folds:
                r.stopped_by = "max_folds"
                break
            if time.monotonic() - start >= timeout:
                r.stopped_by = "timeout"
                break
            f = self.fold()
            r.folds += 1
            r.folded += f.read
            r.trimmed += f.trimmed
            r.uploaded += len(f.uploaded)
            if on_fold is not None:
                on_fold(f)
            if f.read == 0:
                if until_empty:
                    r.stopped_by = "empty"
                    break
                time.sleep(idle_ms / 1000)
        r.seconds = time.monotonic() - start
        return r
