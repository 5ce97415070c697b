"""A learner's fold step in a process of its own, killed (SIGKILL, by itself) at one step of it: 08.2's runner.

``python -m echomq_teach.course.fold_runner SPEC`` (SPEC a JSON object: the
queue, the floor's path, the module and function of the learner's fold step,
and ``kill_at``, the step event to die at, 0 for none). The node comes from
``ECHOMQ_ADDRESS``. The stream has a second reader, the shop's notifier, which
keeps the last id it has read in ``notifier_key(queue)``: it still needs every
entry after it. A fold takes one slice of at most ``slice`` settles (``SLICE``
unless the spec says): the kit refuses a read or a commit of more, so that every
fold has steps a kill can land between; and a stream or floor changed
around the kit's steps (their counts not what its last step left) is refused,
since a write the kit never numbered is one no kill lands after. The runner takes the stream's floor lease (waiting,
bounded, for one a killed runner left), hands the fold step a ``FoldKit``,
and calls it until it answers 0. After each fold that folded something it prints
``kept <fold> <n>``: the entries both readers held before that fold and the
stream still holds. Every step the kit takes is printed as one
line, ``step <n> <fold> <name>``, so the judge knows the steps of a fold; at
step ``kill_at`` the process kills itself with SIGKILL, as a crash would:
nothing after it runs, no ``finally``, no SQLite commit.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import time
from typing import Any

from ..completions import Settle, StreamId, completions_stream, parse_entry
from ..connector import Connector, connect
from ..errors import BadInput, DriverBusy
from ..floor.embedded import Floor, open_floor
from ..floor.lease import Lease
from ..keyspace import queue_key

MAX_FOLDS = 20
LEASE_MS = 1_000
#: the most settles one fold may read, or commit
SLICE = 10


def notifier_key(queue: str) -> str:
    """Where the stream's other reader, the shop's notifier, keeps the last stream id it has read."""
    return queue_key(queue, "notifier:cursor")


class FoldKit:
    """What a fold step is handed: the floor's cursor, and the steps a fold is made of.

    kit.commit(since, settles)  the settles' rows and the new cursor, in one SQLite transaction;
                                refused when the floor's cursor is no longer `since`, or for more than 10
    kit.cursor()                the last stream id the floor holds (0-0 before the first commit)
    kit.read(after, n)          at most n entries of the stream after the id `after`, as Settles (n at most 10)
    kit.notified()              the last stream id the shop's notifier has read (0-0 before it read any)
    kit.trim(minid)             XTRIM MINID minid: every entry of the stream below minid goes
    kit.trim_below()            the first stream id the floor does not hold (None before a commit)

    Stream ids (StreamId) compare as the stream orders them; ``sid.next()`` is the smallest id after ``sid``.
    """

    def __init__(self, conn: Connector, queue: str, floor: Floor, lease: Lease, kill_at: int,
                 slice_max: int = SLICE) -> None:
        self.conn, self.queue, self.floor, self.lease = conn, queue, floor, lease
        self.stream = completions_stream(queue)
        self.kill_at, self.steps, self.fold, self.slice_max = kill_at, 0, 0, slice_max
        self._held = self._holds()

    def _holds(self) -> tuple[int, int]:
        """What the stream and the floor hold: their entries and rows, as counts."""
        return int(self.conn.call("XLEN", self.stream)), self.floor.count(self.stream)

    def unchanged(self) -> None:
        """Refuse a fold that changed the stream or the floor past the kit: only the kit's steps are killed
        between, so a write made around them (an XTRIM on the kit's connection, a commit on its floor) would
        be a step no kill ever lands after."""
        now = self._holds()
        if now != self._held:
            raise BadInput(f"the stream or the floor changed other than through the kit (entries, rows: "
                           f"{self._held[0]}, {self._held[1]} after the kit's last step, now {now[0]}, {now[1]}): "
                           "a fold step changes them with kit.commit and kit.trim alone, the steps a kill lands "
                           "between")

    def _bounded(self, what: str, n: int) -> None:
        if n > self.slice_max:
            raise BadInput(f"{what} {n} settles: a fold takes one slice of at most {self.slice_max}")

    def _step(self, name: str) -> None:
        self.steps += 1
        print(f"step {self.steps} {self.fold} {name}", flush=True)
        if self.steps == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def cursor(self) -> StreamId:
        return self.floor.cursor(self.stream)

    def read(self, after: StreamId | str, n: int) -> list[Settle]:
        self._bounded("kit.read asked for", int(n))
        self.unchanged()
        entries = self.conn.call("XRANGE", self.stream, f"({after}", "+", "COUNT", int(n))
        self._step("read")
        return [parse_entry(self.stream, eid, fields) for eid, fields in entries]

    def commit(self, since: StreamId, settles: list[Settle]) -> StreamId:
        self._bounded("kit.commit was handed", len(settles))
        self.unchanged()
        last = self.floor.commit(self.stream, since, settles, self.lease.token, midway=lambda: self._step("write"))
        self._held = self._holds()
        self._step("commit")
        return last

    def notified(self) -> StreamId:
        raw = self.conn.call("GET", notifier_key(self.queue))
        return StreamId.parse(raw) if raw else StreamId(0, 0)

    def kept(self, before: StreamId) -> int:
        """How many entries the stream still holds that the floor held (``before``: its cursor as a fold began)
        and the notifier had read: what the fold should have trimmed, for the judge (not a step)."""
        bound = min(before, self.notified())
        return 0 if bound == StreamId(0, 0) else len(self.conn.call("XRANGE", self.stream, "-", str(bound)))

    def trim_below(self) -> StreamId | None:
        return self.floor.trim_below(self.stream)

    def trim(self, minid: StreamId | str) -> int:
        self.unchanged()
        if self.lease.age_ms() > self.lease.lease_ms / 2:
            # a slow fold (a busy machine) renews its lease before trimming, as the driver does
            self.floor.fence(self.stream, self.lease.take(self.floor.token(self.stream)))
        n = self.lease.trim(self.stream, str(minid), str(self.cursor()))
        self._held = self._holds()
        self._step("trim")
        return n


def _take(lease: Lease, floor: Floor, stream: str, wait_s: float = 10.0) -> int:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return lease.take(floor.token(stream))
        except DriverBusy:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def main(argv: list[str]) -> int:
    spec: dict[str, Any] = json.loads(argv[0])
    sys.path.insert(0, spec["folder"])
    fold_step = getattr(importlib.import_module(spec["module"]), spec["function"])
    conn = connect(json.loads(os.environ["ECHOMQ_ADDRESS"]))
    with open_floor(spec["floor"]) as floor:
        lease = Lease(conn, spec["queue"], LEASE_MS)
        stream = completions_stream(spec["queue"])
        floor.fence(stream, _take(lease, floor, stream))
        kit = FoldKit(conn, spec["queue"], floor, lease, int(spec["kill_at"]), int(spec.get("slice", SLICE)))
        for kit.fold in range(1, MAX_FOLDS + 1):
            print(f"fold {kit.fold}", flush=True)
            before = kit.cursor()
            n = fold_step(kit)
            kit.unchanged()
            if not isinstance(n, int) or isinstance(n, bool):
                print(f"answer fold step answered {n!r}, not a whole number", flush=True)
                return 3
            if n == 0:
                print("done", flush=True)
                break
            print(f"kept {kit.fold} {kit.kept(before)}", flush=True)
            floor.fence(stream, lease.take(floor.token(stream)))  # renewed between folds, as a driver does
        lease.release()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
