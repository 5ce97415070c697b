"""The completions stream: what each entry holds, and its one parser (the floor's and the checker's).

A recording queue adds one entry per ending to ``emq:{q}:stream:completions``
(every way a job leaves for good, one entry per life): ``id``, ``outcome``
(one of ``jobs.OUTCOMES``: ``completed``, ``dead``, ``stalled``,
``child_failed``, ``removed``), ``attempts``, and ``result`` (a completion) or
``error`` (every other ending: why it ended). ``attempts`` is the settling
claim's token for ``completed`` and ``dead``; for the others it is the row's
attempts when it ended (0 for a job never claimed). The entry's stream id
(``<ms>-<seq>``) is the floor's key, and its ``<ms>`` is the ending's time on
the server clock. An entry of any other shape is refused before anything is
written.

The floor folds these entries into its archive (``echomq_teach.floor``), and
the fault lab's checker reads them to judge a run (``echomq_teach.lab.checker``):
both parse an entry with ``parse_entry`` here.
"""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime
from typing import Any, NamedTuple

from .connector import Connector
from .errors import BadStream
from .jobs import COMPLETED, DEAD, OUTCOMES, check_id
from .keyspace import queue_key

# the one field that carries the job's answer: a completion's result, every other ending's reason
_VALUE_FIELD = {o: "result" if o == COMPLETED else "error" for o in OUTCOMES}
# a settle by a worker carries its claim's token (at least 1); the other endings the row's attempts (0 or more)
_LEAST_ATTEMPTS = {o: 1 if o in (COMPLETED, DEAD) else 0 for o in OUTCOMES}
_ID = re.compile(r"^(\d{1,15})-(\d{1,10})$")
#: entries read per XRANGE call by ``read_all``
PAGE = 1000


def completions_stream(queue: str) -> str:
    """``emq:{q}:stream:completions``: the stream a Consumer with ``record=True`` fills."""
    return queue_key(queue, "stream:completions")


class StreamId(NamedTuple):
    """A stream id ``<ms>-<seq>``, ordered as the stream orders it."""

    ms: int
    seq: int

    @classmethod
    def parse(cls, text: str) -> StreamId:
        m = _ID.match(text)
        if not m:
            raise BadStream(f"stream id {text!r} is not <ms>-<seq> (at most 15 and 10 digits)")
        return cls(int(m.group(1)), int(m.group(2)))

    def __str__(self) -> str:
        return f"{self.ms}-{self.seq}"

    def next(self) -> StreamId:
        """The smallest id after this one: ``XTRIM MINID next`` removes this id and every one before it."""
        return StreamId(self.ms, self.seq + 1)

    def sortable(self) -> str:
        """Fixed width, so that names sort as ids do: ``000001764707412345-0000000003``."""
        return f"{self.ms:015d}-{self.seq:010d}"


ZERO = StreamId(0, 0)  # the cursor of a stream nothing was folded from (XADD never mints 0-0)

Value = str | bytes | None


class Settle(NamedTuple):
    """One entry of the completions stream: one ending of one job's life (the floor keeps each one)."""

    stream_id: StreamId
    job_id: str
    outcome: str
    attempts: int
    result: Value = None
    error: Value = None

    @property
    def settled_ms(self) -> int:
        """When the settle was recorded, in server ms: the stream id's first half."""
        return self.stream_id.ms

    @property
    def settled_at(self) -> datetime:
        return datetime.fromtimestamp(self.settled_ms / 1000, tz=UTC)

    def to_json(self) -> str:
        """One JSON line; bytes that are not UTF-8 go as base64 under ``result_b64`` / ``error_b64``."""
        d: dict[str, Any] = {
            "stream_id": str(self.stream_id),
            "job_id": self.job_id,
            "outcome": self.outcome,
            "attempts": self.attempts,
        }
        for name in ("result", "error"):
            v = getattr(self, name)
            if isinstance(v, bytes):
                d[name + "_b64"] = base64.b64encode(v).decode("ascii")
            elif v is not None:
                d[name] = v
        return json.dumps(d, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> Settle:
        d = json.loads(line)
        values = {}
        for name in ("result", "error"):
            if name + "_b64" in d:
                values[name] = base64.b64decode(d[name + "_b64"])
            else:
                values[name] = d.get(name)
        return cls(StreamId.parse(d["stream_id"]), d["job_id"], d["outcome"], int(d["attempts"]), **values)


def stored(value: str) -> str | bytes:
    """A stream value as the floor stores it: text when it is UTF-8, else the very bytes.

    The kit's client decodes with ``surrogateescape``, so a bytes result that is
    not UTF-8 arrives as a str that encodes back to the same bytes.
    """
    raw = value.encode("utf-8", "surrogateescape")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def parse_entry(stream: str, entry_id: str, fields: dict[str, str]) -> Settle:
    """One stream entry as a Settle, or ``BadStream`` naming the entry and what is wrong with it."""
    where = f"entry {entry_id} of {stream}"
    sid = StreamId.parse(entry_id)
    outcome = fields.get("outcome")
    if outcome not in OUTCOMES:
        raise BadStream(
            f"{where} has outcome {outcome!r}, not one of {', '.join(OUTCOMES)}: this is not a completions stream "
            f"(its fields are {sorted(fields)})"
        )
    want = {"id", "outcome", "attempts", _VALUE_FIELD[outcome]}
    if set(fields) != want:
        raise BadStream(f"{where} has fields {sorted(fields)}; a {outcome} settle has exactly {sorted(want)}")
    try:
        job_id = check_id(fields["id"])
    except ValueError as exc:
        raise BadStream(f"{where}: {exc}") from None
    attempts = fields["attempts"]
    if not attempts.isdigit() or int(attempts) < _LEAST_ATTEMPTS[outcome]:
        what = "a settle's token is a positive integer" if _LEAST_ATTEMPTS[outcome] else "a count of claims"
        raise BadStream(f"{where} has attempts {attempts!r}: {what}")
    value = stored(fields[_VALUE_FIELD[outcome]])
    if outcome == COMPLETED:
        return Settle(sid, job_id, outcome, int(attempts), result=value)
    return Settle(sid, job_id, outcome, int(attempts), error=value)


def read_all(conn: Connector, queue: str, page: int = PAGE) -> list[Settle]:
    """Every entry of ``queue``'s completions stream, oldest first, read in pages (untraced), each parsed."""
    stream = completions_stream(queue)
    out: list[Settle] = []
    start = "-"
    while True:
        entries = conn.client.xrange(stream, min=start, max="+", count=page)
        out += [parse_entry(stream, eid, fields) for eid, fields in entries]
        if len(entries) < page:
            return out
        start = "(" + entries[-1][0]
