"""Nodes: the Valkey server a kernel talks to (EchoMQ's node providers).

``start_node()`` is the embedded default: a ``valkey-server`` child process on
a free 127.0.0.1 port (or a Unix socket in a private 0700 folder) with a
random password and no persistence. ``durable=True`` keeps an AOF so that
``restart()`` can show what survives. ``native=True`` builds and loads the
``trafikey`` module and brands the node ``echomq:6.0.0``. ``ECHOMQ_URL``
points the kit at an existing node instead (a classroom's shared node).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any

import redis

from . import keyspace, native
from .connector import Connector, address_from_url, connect, make_client
from .errors import NodeError

READY_TIMEOUT_S = 15.0
INSTALL_HINT = (
    "valkey-server (Valkey 8) is not installed. On Debian 12, as root: "
    "`bash tools/setup-system.sh` (adds bookworm-backports from this machine's own "
    "Debian sources and installs valkey-server); with conda: "
    "`conda install -c conda-forge valkey`; or set ECHOMQ_URL to a running node."
)

_live: weakref.WeakSet[Node] = weakref.WeakSet()


def server_binary() -> str:
    """The ``valkey-server`` to run (``$ECHOMQ_VALKEY_SERVER`` wins), or one clear error."""
    env = os.environ.get("ECHOMQ_VALKEY_SERVER")
    if env:
        # a named binary that is not there is the same missing server, not a bare FileNotFoundError
        found = shutil.which(env)
        if not found:
            raise NodeError(f"ECHOMQ_VALKEY_SERVER={env!r} is not an executable file. " + INSTALL_HINT)
        return found
    path = shutil.which("valkey-server")
    if not path:
        raise NodeError(INSTALL_HINT)
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_DIR_PREFIX = "echomq-node-"
_OWNER_FILE = "owner.pid"
_SERVER_FILE = "server.pid"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0 only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_dirs() -> None:
    """Delete node folders whose kernel and server are both gone.

    A kernel that is shut down runs no exit hooks: its server dies with it
    (PR_SET_PDEATHSIG) but the small temp folder stays. Only folders that name
    their owner are touched, and only once neither process is alive.
    """
    for d in Path(tempfile.gettempdir()).glob(_DIR_PREFIX + "*"):
        try:
            owner = int((d / _OWNER_FILE).read_text())
            server = int((d / _SERVER_FILE).read_text()) if (d / _SERVER_FILE).exists() else None
        except (OSError, ValueError):
            continue
        if owner == os.getpid() or _alive(owner) or (server is not None and _alive(server)):
            continue
        shutil.rmtree(d, ignore_errors=True)


def _die_with_parent() -> None:
    # Linux: the server gets SIGTERM if the kernel that started it dies hard,
    # so a crashed notebook never leaves a node behind.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def server_config(
    port: int,
    password: str,
    *,
    logfile: str,
    data_dir: str,
    durable: bool,
    module_path: str | None,
) -> list[str]:
    """The valkey.conf lines every node the kit starts shares: loopback, a password, no RDB.

    It goes in a file in a 0700 folder, which keeps the password out of ``ps``.
    ``durable`` keeps an AOF (fsync on every write, so a restart shows all of it).
    """
    lines = [
        "bind 127.0.0.1",
        f"port {port}",
        f"requirepass {password}",
        "protected-mode yes",
        f"dir {data_dir}",
        f'logfile "{logfile}"',
        "daemonize no",
        'save ""',
        "enable-debug-command local",
        "databases 1",
    ]
    lines += ["appendonly yes", "appendfsync always", "appenddirname aof"] if durable else ["appendonly no"]
    if module_path:
        lines.append(f"loadmodule {module_path}")
    return lines


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
        """A raw redis-py client, for looking under the hood (no trace)."""
        return make_client(self.address)

    def connector(self, wire: int | None = None) -> Connector:
        """A traced connector: wire 4 on a scripted node, wire 6 on a native one."""
        return connect(self.address, wire=self.wire if wire is None else wire)

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


class LocalNode(Node):
    """A ``valkey-server`` child process that this kernel started and will stop."""

    owned = True

    def __init__(
        self,
        native: bool = False,
        durable: bool = False,
        unix_socket: bool = False,
        replica_of: LocalNode | None = None,
        extra_config: dict[str, str] | None = None,
        *,
        password: str | None = None,
        port: int | None = None,
        brand: bool = True,
    ) -> None:
        """``password``, ``port`` and ``brand=False`` are for a cluster's nodes (``echomq_teach.cluster``):
        one password for all, ports chosen together, and no node-wide brand (a cluster's brand is per queue).
        """
        self.native = native
        self.brand = brand
        self.durable = durable
        self.unix_socket = unix_socket
        self.replica_of = replica_of
        # built before the folder exists: a missing compiler then leaves nothing behind
        self.module_path = native and native_module_path()
        self.password = password or secrets.token_urlsafe(24)
        sweep_stale_dirs()
        self.dir = Path(tempfile.mkdtemp(prefix=_DIR_PREFIX))
        self.dir.chmod(0o700)
        (self.dir / _OWNER_FILE).write_text(str(os.getpid()))
        self.port = 0 if unix_socket else (port or free_port())
        self.socket_path = str(self.dir / "valkey.sock") if unix_socket else None
        self.log_path = self.dir / "valkey.log"
        # what the server prints before its logfile opens (a config error) lands here
        self.stderr_path = self.dir / "valkey.stderr"
        self.extra_config = dict(extra_config or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.run_ids: list[str] = []
        try:
            self._write_config()
            self._launch()
        except BaseException:
            # a node that never started leaves no folder behind (its log tail is in the error)
            self._kill()
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        _live.add(self)

    # -- config and process ----------------------------------------------------------
    def _write_config(self) -> None:
        lines = server_config(
            self.port,
            self.password,
            logfile=str(self.log_path),
            data_dir=str(self.dir),
            durable=self.durable,
            module_path=str(self.module_path) if self.module_path else None,
        )
        if self.socket_path:
            lines += [f"unixsocket {self.socket_path}", "unixsocketperm 700"]
        if self.replica_of is not None:
            lines += [f"replicaof 127.0.0.1 {self.replica_of.port}", f"masterauth {self.replica_of.password}"]
        lines += [f"{k} {v}" for k, v in self.extra_config.items()]
        conf = self.dir / "valkey.conf"
        conf.write_text("\n".join(lines) + "\n")
        conf.chmod(0o600)

    def _launch(self) -> None:
        binary = server_binary()
        with open(self.stderr_path, "ab") as err:
            try:
                self.proc = subprocess.Popen(
                    [binary, str(self.dir / "valkey.conf")],
                    stdin=subprocess.DEVNULL,
                    stdout=err,
                    stderr=subprocess.STDOUT,
                    preexec_fn=_die_with_parent,
                )
            except OSError as exc:
                raise NodeError(f"could not run {binary!r}: {exc}. " + INSTALL_HINT) from exc
        assert self.proc is not None
        (self.dir / _SERVER_FILE).write_text(str(self.proc.pid))
        self._wait_ready()
        c = self.client()
        try:
            self.run_ids.append(c.info("server")["run_id"])
            if self.native and self.brand and self.replica_of is None:
                c.set(keyspace.VERSION_KEY, keyspace.BRAND_WIRE6)
        finally:
            c.close()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise NodeError(
                    f"valkey-server exited with code {self.proc.returncode} while starting; "
                    f"the end of its log:\n{self.log_tail()}"
                )
            try:
                c = self.client()
                try:
                    if c.ping():
                        return
                finally:
                    c.close()
            except (redis.exceptions.ConnectionError, redis.exceptions.BusyLoadingError, OSError) as exc:
                last = exc
            time.sleep(0.02)
        self._kill()
        raise NodeError(
            f"valkey-server did not answer within {READY_TIMEOUT_S:.0f} s ({last}); log:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of the server's log, and of what it printed before the log opened."""
        out: list[str] = []
        for path in (self.log_path, self.stderr_path):
            try:
                out += path.read_text(errors="replace").splitlines()
            except OSError:
                pass
        return "\n".join(out[-lines:]) if out else "(no log written)"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def address(self) -> dict[str, Any]:
        if self.socket_path:
            return {"unix_socket_path": self.socket_path, "password": self.password}
        return {"host": "127.0.0.1", "port": self.port, "password": self.password}

    @property
    def url(self) -> str:
        """A URL for this node, password included (give it only to your own kernels)."""
        if self.socket_path:
            return f"unix://:{self.password}@{self.socket_path}"
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    @property
    def run_id(self) -> str:
        """The server's current run_id: it changes at every restart."""
        return self.run_ids[-1]

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- restart and stop -----------------------------------------------------------------
    def restart(self) -> None:
        """Stop the server and start it again on the same port and data (``durable=True`` only)."""
        if not self.durable:
            raise NodeError("restart() keeps data only on a durable node: use start_node(durable=True)")
        self._shutdown()
        self._launch()

    def kill(self) -> None:
        """SIGKILL the server by its PID, as a crash would: no shutdown, no save; the folder stays."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def relaunch(self) -> None:
        """Start a killed server again on the same port, folder and config: a new process, a new run_id."""
        if self.running:
            raise NodeError(f"{self!r} is still running: kill() or stop it before relaunch()")
        self._launch()

    def _shutdown(self) -> None:
        if not self.running:
            return
        try:
            c = self.client()
            try:
                c.shutdown(nosave=not self.durable)
            except (redis.exceptions.ConnectionError, redis.exceptions.ResponseError):
                pass  # the server closes the link as it goes
            finally:
                c.close()
            assert self.proc is not None
            self.proc.wait(timeout=10)
        except (subprocess.TimeoutExpired, OSError, redis.exceptions.RedisError):
            self._kill()

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def stop(self) -> None:
        """Stop the server (by its PID if it will not shut down) and delete its folder."""
        self._shutdown()
        self._kill()
        shutil.rmtree(self.dir, ignore_errors=True)
        _live.discard(self)

    def __repr__(self) -> str:
        where = self.socket_path or f"127.0.0.1:{self.port}"
        kind = "native" if self.native else "scripted"
        state = "running" if self.running else "stopped"
        return f"<LocalNode {kind}{' durable' if self.durable else ''} {where} {state}>"


class RemoteNode(Node):
    """An existing node named by a URL (``ECHOMQ_URL``): the kit neither starts nor stops it."""

    def __init__(self, url: str, native: bool = False) -> None:
        self.url = url
        self.native = native
        self._address = address_from_url(url)

    @property
    def address(self) -> dict[str, Any]:
        return dict(self._address)

    def __repr__(self) -> str:
        a = self._address
        where = a.get("unix_socket_path") or f"{a.get('host')}:{a.get('port')}"
        return f"<RemoteNode {where}>"


def native_module_path() -> Path:
    """The built trafikey module (compiled on first use, cached by source hash)."""
    return native.build()


def start_node(
    native: bool = False,
    durable: bool = False,
    provider: str | None = None,
    unix_socket: bool = False,
    **kwargs: Any,
) -> Node:
    """Start (or find) a node: the embedded local default, ``ECHOMQ_URL``, or a container.

    ``provider`` is ``"local"`` (default), ``"url"`` (``$ECHOMQ_URL``, also chosen
    when that variable is set), or ``"container"`` (testcontainers and a Docker engine).
    """
    # a classroom may run its native (wire 6) node apart from the scripted one
    url = (native and os.environ.get("ECHOMQ_NATIVE_URL")) or os.environ.get("ECHOMQ_URL")
    provider = provider or ("url" if url else "local")
    if provider == "url":
        if not url:
            raise NodeError("provider 'url' needs ECHOMQ_URL, e.g. redis://:password@127.0.0.1:6390/0")
        return RemoteNode(url, native=native)
    if provider == "container":
        from . import container

        return container.start(native=native, durable=durable, **kwargs)
    if provider != "local":
        raise NodeError(f"unknown node provider {provider!r}: use 'local', 'url' or 'container'")
    return LocalNode(native=native, durable=durable, unix_socket=unix_socket, **kwargs)


@atexit.register
def _stop_all() -> None:
    for node in list(_live):
        try:
            node.stop()
        except Exception:  # noqa: BLE001 - the interpreter is exiting
            pass
