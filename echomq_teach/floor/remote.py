"""The remote floor: sealed slices as immutable objects in an S3-compatible store (the page's Tigris).

Each fold's slice becomes one object, planned in the same SQLite transaction
as the slice's rows and cursor, then uploaded, then marked uploaded in the
local index. Its name sorts as the slice's first stream id does::

    <prefix>/<queue>/000001764707412345-0000000000_000001764707412399-0000000003.jsonl

The body is JSON lines, one settle a line, in stream-id order: a slice is a
few hundred small rows that are written once and read whole, which JSON lines
serves without a columnar library, and anyone can read an object with ``cat``.
The object carries the body's SHA-256 in its metadata. An upload that crashed
is redone from the floor's own rows (not from the stream, which may be
trimmed): the same name and the same bytes, so it is never duplicated; an
object that is already there with the same digest is only marked.

The client is the MinIO Python SDK, with retries off and short timeouts: a
store that does not answer is an error now, and the next fold tries again.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from ..completions import Settle, StreamId
from ..errors import FloorError
from ..keyspace import queue_of

CONNECT_TIMEOUT_S = 3.0
READ_TIMEOUT_S = 30.0
CONTENT_TYPE = "application/x-ndjson"
SHA_META = "sha256"
_REDONE = "it stays planned; the next fold uploads it"


def encode(settles: Sequence[Settle]) -> bytes:
    """A slice's object body: one JSON line per settle, in stream-id order."""
    return "".join(s.to_json() + "\n" for s in settles).encode("utf-8")


def decode(body: bytes) -> list[Settle]:
    return [Settle.from_json(line) for line in body.decode("utf-8").splitlines() if line]


@dataclass
class Remote:
    """Where sealed slices go: an S3 endpoint (``host:port``), a bucket, a key prefix and credentials."""

    endpoint: str
    bucket: str
    access_key: str
    secret_key: str = field(repr=False)
    prefix: str = "floor"
    secure: bool = False

    @classmethod
    def from_url(cls, url: str, access_key: str, secret_key: str) -> Remote:
        """``http://127.0.0.1:8333/bucket/prefix`` (https for TLS) and the credentials."""
        u = urlsplit(url)
        parts = [p for p in u.path.split("/") if p]
        if u.scheme not in ("http", "https") or not u.netloc or not parts:
            raise FloorError(f"remote URL {url!r} must look like http://host:port/bucket[/prefix]")
        return cls(u.netloc, parts[0], access_key, secret_key, "/".join(parts[1:]) or "floor", u.scheme == "https")

    @property
    def url(self) -> str:
        return f"{'https' if self.secure else 'http'}://{self.endpoint}/{self.bucket}/{self.prefix}"

    def client(self) -> Any:
        """A MinIO client that never retries by itself and gives up on a silent store quickly."""
        try:
            import urllib3
            from minio import Minio
        except ImportError as exc:
            raise FloorError(
                f"the remote floor needs the MinIO client ({exc.name} is missing): pip install -e '.[floor]'"
            ) from None
        if not hasattr(self, "_client"):
            http = urllib3.PoolManager(
                timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S),
                retries=urllib3.Retry(total=0),
            )
            self._client = Minio(self.endpoint, self.access_key, self.secret_key, secure=self.secure, http_client=http)
        return self._client

    def _fail(self, doing: str, exc: Exception) -> FloorError:
        from minio.error import S3Error

        if isinstance(exc, S3Error):
            why = f"{exc.code}: {exc.message}"
        else:
            # urllib3 wraps the socket's error; its last line names it (connection refused, timed out)
            why = str(getattr(exc, "reason", None) or exc).splitlines()[-1]
        return FloorError(f"the object store at {self.url} failed {doing}: {why}")

    def check(self) -> None:
        """Refuse a store that does not answer, or answers without this bucket, before anything is written."""
        try:
            ok = self.client().bucket_exists(self.bucket)
        except Exception as exc:  # noqa: BLE001 - every failure here is "cannot reach", named
            raise self._fail("to answer (is it running? nothing was written)", exc) from None
        if not ok:
            raise FloorError(f"the object store at {self.endpoint} has no bucket {self.bucket!r}: create it first")

    # -- names --------------------------------------------------------------------------------------
    def folder(self, stream: str) -> str:
        return f"{self.prefix}/{quote(queue_of(stream), safe='')}/"

    def name(self, stream: str, first: StreamId, last: StreamId) -> str:
        return f"{self.folder(stream)}{first.sortable()}_{last.sortable()}.jsonl"

    # -- the upload (the floor plans and marks each object in its own table: embedded.py) -----------------
    def digest(self, settles: Sequence[Settle]) -> str:
        """The sha256 of a slice's object body, as the floor plans it."""
        return hashlib.sha256(encode(settles)).hexdigest()

    def put_slice(self, name: str, settles: Sequence[Settle], digest: str) -> bool:
        """Store one planned slice whose body must match ``digest``; True if this call stored it.

        False means the object was already in the store with the planned digest (an upload that
        landed before a crash).
        """
        body = encode(settles)
        if hashlib.sha256(body).hexdigest() != digest:
            raise FloorError(f"the floor's rows for {name} no longer match the slice that was planned")
        return self._put_once(name, body, digest)

    def _put_once(self, name: str, body: bytes, digest: str) -> bool:
        from minio.error import S3Error

        c = self.client()
        try:
            st = c.stat_object(self.bucket, name)
        except S3Error as exc:
            if exc.code not in ("NoSuchKey", "NoSuchObject", "ResourceNotFound"):
                raise self._fail(f"to look up {name} ({_REDONE})", exc) from None
            st = None
        except Exception as exc:  # noqa: BLE001
            raise self._fail(f"to look up {name} ({_REDONE})", exc) from None
        if st is not None:
            # an upload that landed before its crash: the same bytes are there, so only the mark is missing
            there = (st.metadata or {}).get(f"x-amz-meta-{SHA_META}")
            if there != digest:
                raise FloorError(f"{name} is already in the store with other content (sha256 {there}): not overwritten")
            return False
        try:
            c.put_object(
                self.bucket, name, io.BytesIO(body), len(body), content_type=CONTENT_TYPE, metadata={SHA_META: digest}
            )
        except Exception as exc:  # noqa: BLE001
            raise self._fail(f"to store {name} ({_REDONE})", exc) from None
        return True

    # -- reading the store back ------------------------------------------------------------------------------
    def objects(self, stream: str) -> list[str]:
        """The object names under this stream's folder, in name (so stream-id) order."""
        try:
            found = [
                o.object_name for o in self.client().list_objects(self.bucket, self.folder(stream), recursive=True)
            ]
        except Exception as exc:  # noqa: BLE001
            raise self._fail("to list objects", exc) from None
        return sorted(found)

    def read(self, name: str) -> list[Settle]:
        """One object's settles, after checking its body against the digest it was stored with."""
        c = self.client()
        try:
            resp = c.get_object(self.bucket, name)
            try:
                body = resp.read()
                there = resp.headers.get(f"x-amz-meta-{SHA_META}")
            finally:
                resp.close()
                resp.release_conn()
        except Exception as exc:  # noqa: BLE001
            raise self._fail(f"to read {name}", exc) from None
        if hashlib.sha256(body).hexdigest() != there:
            raise FloorError(f"{name}: its body does not match the sha256 it was stored with")
        return decode(body)

    def settles(self, stream: str) -> Iterator[Settle]:
        """Every settle the store holds for ``stream``, in stream-id order: the floor read from the bucket alone."""
        for name in self.objects(stream):
            yield from self.read(name)
