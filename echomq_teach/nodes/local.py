"""The embedded default node: a ``valkey-server`` child process this kernel started and will stop.

``start_node()`` (``nodes.providers``) starts one on a free 127.0.0.1 port (or
a Unix socket in a private 0700 folder) with a random password and no
persistence. ``durable=True`` keeps an AOF so that ``restart()`` can show what
survives. ``native=True`` builds and loads the ``trafikey`` module and brands
the node ``echomq:6.0.0``. The server's binary and config are ``nodes.server``'s,
its port and folder ``nodes.host``'s; what every node answers is ``nodes.node``'s.

A server's life follows its kernel's in every case: it is a tied ``Child``
(``nodes.process``), forked from the launcher thread with SIGKILL as its death
signal; a node whose last reference is dropped is stopped by a finalizer, and
every connector and raw client of a node holds a reference to it.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import weakref
from pathlib import Path
from typing import Any

import redis

from .. import ending, keyspace
from ..errors import NodeError
from . import trafikey
from .host import free_port, node_folder, note_server
from .node import Node
from .process import Child, ChildError, keep_secret, read_tail
from .server import INSTALL_HINT, server_binary, server_config
from .slots import claim_slots

READY_TIMEOUT_S = 15.0


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
        keep_secret(self.password)  # no child of this process carries it on its command line
        self.dir = node_folder()
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
        note_server(self.dir, self._process.child.pid)
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


def native_module_path() -> Path:
    """The built trafikey module (compiled on first use, cached by source hash)."""
    return trafikey.build()
