"""The embedded floor: one SQLite file per deployment (the page's CubDB, in EchoStore.Graft).

Three tables: ``settles`` (one row per archived stream entry, keyed by the
stream and the stream id), ``cursors`` (per stream: the last archived id and
the highest driver token seen) and ``objects`` (with a remote: the sealed
slices and whether each is uploaded). A fold's rows, its cursor and its
object go in ONE transaction (D-6 in docs/decisions.md), so the floor never holds a slice without
its cursor or a cursor without its slice.

WAL mode lets the reads run while a driver writes. ``synchronous=FULL`` makes
every commit reach the disk before it returns: the driver trims the stream
right after a commit, so a commit that a power cut could still undo
(``NORMAL`` in WAL mode) would lose what the trim removed.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..completions import ZERO, Settle, StreamId
from ..errors import Fenced, FloorError
from ..jobs import OUTCOMES

if TYPE_CHECKING:
    from .remote import Remote

#: "EMQF" in the SQLite header: a file the kit did not make is never taken for a floor
APPLICATION_ID = 0x454D5146
#: 2: every ending's outcome (jobs.OUTCOMES); a version 1 file (completed and dead only) is moved up on open
SCHEMA_VERSION = 2
BUSY_TIMEOUT_MS = 5_000

SETTLES = """
CREATE TABLE settles (
  stream     TEXT    NOT NULL,  -- emq:{q}:stream:completions
  settled_ms INTEGER NOT NULL,  -- the stream id's <ms>: when the ending was recorded (server clock)
  seq        INTEGER NOT NULL,  -- the stream id's <seq>
  job_id     TEXT    NOT NULL,
  outcome    TEXT    NOT NULL CHECK (outcome IN (<outcomes>)),
  attempts   INTEGER NOT NULL,
  result,                       -- TEXT, or BLOB for bytes that are not UTF-8
  error,
  PRIMARY KEY (stream, settled_ms, seq)
) WITHOUT ROWID;
CREATE INDEX settles_by_job ON settles (stream, job_id);
CREATE INDEX settles_by_outcome ON settles (stream, outcome, settled_ms);
""".replace("<outcomes>", ", ".join(f"'{o}'" for o in OUTCOMES))

SCHEMA = SETTLES + """
CREATE TABLE cursors (
  stream TEXT PRIMARY KEY,
  ms     INTEGER NOT NULL,  -- the last archived stream id
  seq    INTEGER NOT NULL,
  token  INTEGER NOT NULL,  -- the highest driver token seen: an older driver's writes are refused
  folded INTEGER NOT NULL   -- entries archived so far
);
CREATE TABLE objects (
  stream    TEXT    NOT NULL,
  name      TEXT    PRIMARY KEY,  -- sorts as the slice's first stream id does
  first_ms  INTEGER NOT NULL, first_seq INTEGER NOT NULL,
  last_ms   INTEGER NOT NULL, last_seq  INTEGER NOT NULL,
  rows      INTEGER NOT NULL,
  sha256    TEXT    NOT NULL,
  uploaded  INTEGER NOT NULL DEFAULT 0  -- 1 once the object store holds it
);
CREATE INDEX objects_pending ON objects (stream, uploaded, name);
"""

_COLUMNS = "settled_ms, seq, job_id, outcome, attempts, result, error"
_COLUMNS_ALL = "stream, " + _COLUMNS


def _settle(row: Sequence[object]) -> Settle:
    ms, seq, job_id, outcome, attempts, result, error = row
    return Settle(StreamId(int(ms), int(seq)), str(job_id), str(outcome), int(attempts), result, error)  # type: ignore[arg-type]


def select_sql(where: str = "", index: str | None = None) -> str:
    """The query behind ``Floor.settles``. ``index`` names the index to search: without it the planner
    prefers the primary key for the ORDER BY, and reads a whole stream to find one job."""
    source = f"settles INDEXED BY {index}" if index else "settles"
    cond = f" AND {where}" if where else ""
    return f"SELECT {_COLUMNS} FROM {source} WHERE stream = ?{cond} ORDER BY settled_ms, seq"


def check_path(path: Path) -> None:
    """Refuse a floor path that cannot be written, before anything is created."""
    parent = path.parent
    if path.is_dir():
        raise FloorError(
            f"cannot write the floor at {path}: it is a directory; give a file path such as {path}/floor.sqlite3"
        )
    if not parent.exists():
        raise FloorError(f"cannot write the floor at {path}: the folder {parent} does not exist")
    if not parent.is_dir():
        raise FloorError(f"cannot write the floor at {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise FloorError(f"cannot write the floor at {path}: the folder {parent} is not writable by this user")
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise FloorError(f"cannot write the floor at {path}: the file is not readable and writable by this user")


class Floor:
    """The durable floor of one deployment: a SQLite file, and optionally a remote object store."""

    def __init__(self, path: str | os.PathLike[str], remote: Remote | None = None, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.remote = remote
        self.readonly = readonly
        if readonly:
            if not self.path.is_file():
                raise FloorError(f"no floor at {self.path}")
            self.db = self._connect(f"file:{self.path}?mode=ro", uri=True)
            self._check_header(new=False)
            return
        check_path(self.path)
        if remote is not None:
            remote.check()  # an unreachable or misconfigured store is refused before the file is made
        existed = self.path.exists()
        new = not existed or self.path.stat().st_size == 0
        try:
            self.db = self._connect(str(self.path))
        except sqlite3.OperationalError as exc:
            raise FloorError(f"cannot open the floor at {self.path}: {exc}") from None
        except sqlite3.DatabaseError as exc:  # the first read of a file that is not SQLite
            raise FloorError(f"{self.path} is not a floor file: {exc}; nothing was written") from None
        try:
            self._check_header(new)
            if new:
                self._create()
            elif self._version() == 1:
                self._upgrade_from_1()
            # WAL is a property of the file; synchronous is one of each connection
            mode = self.db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode != "wal":
                raise FloorError(f"the floor at {self.path} cannot use WAL mode (it answered {mode!r})")
        except BaseException:
            self.db.close()
            if not existed:
                _remove_db_files(self.path)
            raise

    def _connect(self, target: str, uri: bool = False) -> sqlite3.Connection:
        # isolation_level=None: the floor opens its own transactions (BEGIN IMMEDIATE) where it writes
        db = sqlite3.connect(target, uri=uri, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        db.execute("PRAGMA synchronous=FULL")
        return db

    def _check_header(self, new: bool) -> None:
        try:
            app = self.db.execute("PRAGMA application_id").fetchone()[0]
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise FloorError(f"{self.path} is not a floor file: {exc}") from None
        if new:
            return
        if app != APPLICATION_ID:
            raise FloorError(
                f"{self.path} is a SQLite file but not a floor (application_id {app:#x}); nothing was written"
            )
        # a version 1 floor is read as it is, and moved up when opened for writing (its rows are version 2 rows)
        if version not in (1, SCHEMA_VERSION):
            raise FloorError(f"the floor at {self.path} has schema version {version}; this kit reads {SCHEMA_VERSION}")

    def _version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def _upgrade_from_1(self) -> None:
        """Version 1 admitted only completed and dead: the settles table is made again with every outcome,
        its rows copied, in one transaction (a crash leaves version 1 whole)."""
        try:
            with self.transaction() as db:
                db.execute("ALTER TABLE settles RENAME TO settles_v1")
                db.execute("DROP INDEX settles_by_job")
                db.execute("DROP INDEX settles_by_outcome")
                for statement in SETTLES.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"INSERT INTO settles SELECT {_COLUMNS_ALL} FROM settles_v1")
                db.execute("DROP TABLE settles_v1")
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.Error as exc:
            raise FloorError(
                f"cannot move the floor at {self.path} up to schema version {SCHEMA_VERSION}: {exc}"
            ) from None

    def _create(self) -> None:
        try:
            with self.transaction() as db:
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                self.db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.Error as exc:
            raise FloorError(f"cannot write the floor at {self.path}: {exc}") from None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT: the write lock first, so a check and the write after it are one step."""
        if self.readonly:
            raise FloorError(f"the floor at {self.path} was opened read-only")
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Floor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = f" + {self.remote!r}" if self.remote else ""
        return f"<Floor {self.path}{where}>"

    # -- the cursor and the fence ------------------------------------------------------------------
    def cursor(self, stream: str) -> StreamId:
        """The last stream id archived from ``stream`` (``0-0`` before the first fold)."""
        row = self.db.execute("SELECT ms, seq FROM cursors WHERE stream = ?", (stream,)).fetchone()
        return StreamId(*row) if row else ZERO

    def token(self, stream: str) -> int:
        """The highest driver token this floor has seen for ``stream``."""
        row = self.db.execute("SELECT token FROM cursors WHERE stream = ?", (stream,)).fetchone()
        return int(row[0]) if row else 0

    def _check_token(self, db: sqlite3.Connection, stream: str, token: int) -> tuple[StreamId, int] | None:
        row = db.execute("SELECT ms, seq, token FROM cursors WHERE stream = ?", (stream,)).fetchone()
        if row is None:
            return None
        if row[2] > token:
            raise Fenced(
                f"the floor has seen driver token {row[2]} for {stream}; this driver's token {token} is older: "
                "another driver took the stream over, and this one's write is refused"
            )
        return StreamId(row[0], row[1]), int(row[2])

    def fence(self, stream: str, token: int) -> None:
        """Record ``token`` as the newest driver's: from now on every write with an older token is refused."""
        with self.transaction() as db:
            if self._check_token(db, stream, token) is None:
                db.execute("INSERT INTO cursors VALUES (?, 0, 0, ?, 0)", (stream, token))
            else:
                db.execute("UPDATE cursors SET token = ? WHERE stream = ?", (token, stream))

    # -- the fold's write ------------------------------------------------------------------------------
    def commit(
        self,
        stream: str,
        since: StreamId,
        settles: Sequence[Settle],
        token: int,
        midway: Callable[[], None] | None = None,
    ) -> StreamId:
        """Archive one slice read after ``since``: rows, new cursor (with a remote, its object) in one transaction.

        Refused with ``Fenced`` when an older driver's token writes, or when the cursor is
        no longer ``since`` (the slice was read from a cursor that has moved on).
        ``midway`` runs with half the rows inserted and nothing committed (a crash point).
        """
        if not settles:
            return since
        last = settles[-1].stream_id
        with self.transaction() as db:
            found = self._check_token(db, stream, token)
            cursor = found[0] if found else ZERO
            if cursor != since:
                raise Fenced(
                    f"the floor's cursor for {stream} is {cursor}, not {since}: this slice was read from an old cursor"
                )
            rows = [
                (stream, s.settled_ms, s.stream_id.seq, s.job_id, s.outcome, s.attempts, s.result, s.error)
                for s in settles
            ]
            half = len(rows) // 2
            db.executemany("INSERT INTO settles VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows[:half])
            if midway is not None:
                midway()
            db.executemany("INSERT INTO settles VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows[half:])
            if found is None:
                db.execute("INSERT INTO cursors VALUES (?, ?, ?, ?, ?)", (stream, last.ms, last.seq, token, len(rows)))
            else:
                db.execute(
                    "UPDATE cursors SET ms = ?, seq = ?, token = ?, folded = folded + ? WHERE stream = ?",
                    (last.ms, last.seq, token, len(rows), stream),
                )
            if self.remote is not None:
                # the slice's object, planned in the fold's own transaction: uploaded = 0
                first = settles[0].stream_id
                db.execute(
                    "INSERT INTO objects VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)",
                    (stream, self.remote.name(stream, first, last), first.ms, first.seq, last.ms, last.seq,
                     len(settles), self.remote.digest(settles)),
                )
        return last

    def upload_pending(self, stream: str, after_put: Callable[[str], None] | None = None) -> list[tuple[str, bool]]:
        """Upload every planned object of ``stream``, oldest first; answers (name, True if this call stored it).

        False means the object was already in the store with the planned digest (an upload that
        landed before a crash) and was only marked. The body is rebuilt from the floor's rows and
        must match the planned digest. ``after_put`` runs once an object is stored and before the
        index marks it (a crash point).
        """
        assert self.remote is not None
        done = []
        planned = self.db.execute(
            "SELECT name, first_ms, first_seq, last_ms, last_seq, rows, sha256 FROM objects "
            "WHERE stream = ? AND uploaded = 0 ORDER BY name",
            (stream,),
        ).fetchall()
        for name, fms, fseq, lms, lseq, rows, digest in planned:
            settles = self.between(stream, StreamId(fms, fseq), StreamId(lms, lseq))
            if len(settles) != rows:
                raise FloorError(f"the floor's rows for {name} no longer match the slice that was planned")
            stored = self.remote.put_slice(name, settles, digest)
            if after_put is not None:
                after_put(name)
            with self.transaction() as db:
                db.execute("UPDATE objects SET uploaded = 1 WHERE name = ?", (name,))
            done.append((name, stored))
        return done

    def trim_below(self, stream: str) -> StreamId | None:
        """The MINID the stream may be trimmed to: every entry below it is durable on this floor.

        Embedded: the entry after the cursor. With a remote: the first id of the oldest
        slice not yet uploaded (a slice only the local file holds is not trimmed). ``None``
        before anything was archived.
        """
        cursor = self.cursor(stream)
        if cursor == ZERO:
            return None
        row = self.db.execute(
            "SELECT first_ms, first_seq FROM objects WHERE stream = ? AND uploaded = 0 ORDER BY name LIMIT 1", (stream,)
        ).fetchone()
        return StreamId(*row) if row else cursor.next()

    # -- reads ------------------------------------------------------------------------------------------
    def count(self, stream: str | None = None) -> int:
        """Rows on the floor: for one stream, or in all."""
        if stream is None:
            return int(self.db.execute("SELECT COUNT(*) FROM settles").fetchone()[0])
        return int(self.db.execute("SELECT COUNT(*) FROM settles WHERE stream = ?", (stream,)).fetchone()[0])

    def settles(
        self, stream: str, where: str = "", args: Sequence[object] = (), index: str | None = None
    ) -> list[Settle]:
        """Rows of ``stream`` in stream-id order, optionally filtered (``where`` is SQL over the columns)."""
        return [_settle(r) for r in self.db.execute(select_sql(where, index), (stream, *args))]

    def between(self, stream: str, first: StreamId, last: StreamId) -> list[Settle]:
        """Rows from ``first`` to ``last`` inclusive: the rows of one sealed slice."""
        return self.settles(
            stream,
            "(settled_ms, seq) >= (?, ?) AND (settled_ms, seq) <= (?, ?)",
            (first.ms, first.seq, last.ms, last.seq),
        )

    def streams(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT stream FROM cursors ORDER BY stream")]

    def dump(self) -> dict[str, list[tuple[object, ...]]]:
        """Every table's rows, for "nothing was written" comparisons."""
        if not self.path.exists():
            return {}
        return {t: list(self.db.execute(f"SELECT * FROM {t} ORDER BY 1, 2")) for t in ("settles", "cursors", "objects")}


def _remove_db_files(path: Path) -> None:
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            p.unlink()
        except FileNotFoundError:
            pass


def open_floor(path: str | os.PathLike[str], remote: Remote | None = None, *, readonly: bool = False) -> Floor:
    """Open (or make) the floor at ``path``; with ``remote`` every sealed slice also goes to an object store.

    An unwritable path, a file that is not a floor, or an unreachable remote is one
    ``FloorError`` and nothing is written.
    """
    return Floor(path, remote, readonly=readonly)
