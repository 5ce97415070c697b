"""Nodes in containers: the node image from ``docker/`` run through testcontainers.

``start_node(provider="container")`` lands here. The container shares the
host's network stack and binds only 127.0.0.1, on a port chosen up front (a
container without host networking would get no network at all on an engine
started with ``--bridge=none``, and ``-p`` maps would be silently ignored).
The password lives in a config file bind-mounted read-only from a 0700
folder, never on a command line. testcontainers' Ryuk reaper is disabled: it
needs a registry pull and a mapped port; the kit removes its containers itself:
``stop()``; a finalizer when the node's last reference is dropped (and at
interpreter exit); a reaper process (``reaper.py``) that notices the kernel's
death, even by SIGKILL, through a closed pipe; and ``sweep()``, run at every
container start, which removes the containers whose owner label names a
process that is gone.

Build the image first, either route (see docs/containers.md)::

    bash docker/build-offline.sh                               # no registry needed
    docker build -f docker/node.Dockerfile -t echomq-node:local .  # FROM valkey/valkey:8.0
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import redis

from .. import keyspace
from ..errors import NodeError
from .host import free_port
from .node import Node
from .process import Child, keep_secret, pid_alive
from .server import server_config

#: the image tag both build routes produce; ``$ECHOMQ_NODE_IMAGE`` or ``image=`` choose another
DEFAULT_IMAGE = "echomq-node:local"
MODULE_PATH = "/usr/local/lib/valkey/trafikey.so"
MODULE_LABEL = "org.echomq.module"
CONF_PATH = "/etc/echomq/node.conf"
DATA_PATH = "/data"
READY_LINE = "Ready to accept connections"
READY_TIMEOUT_S = 20.0
#: the uid a root host runs the server as inside the container (both images need no passwd entry)
NOBODY = 65534
OWNER_LABEL = "org.echomq.owner"
#: the host folder holding the node's config (and a durable node's data): the sweep deletes it too
FOLDER_LABEL = "org.echomq.folder"

BUILD_HINT = (
    "build it first: `bash docker/build-offline.sh` (assembles it from this machine's valkey-server, "
    "no registry needed) or, with a registry, `docker build -f docker/node.Dockerfile -t {image} .`"
)
ENGINE_HINT = (
    "no Docker engine answers at {where} ({why}). Start one (as root: "
    '`eval "$(bash tools/dockerd.sh start /tmp/echomq-docker)"` sets DOCKER_HOST), '
    "or use the embedded node: start_node() with no provider."
)


def _docker_where() -> str:
    return os.environ.get("DOCKER_HOST") or "the default socket (DOCKER_HOST is not set)"


def engine() -> Any:
    """A docker SDK client whose engine answered a ping, or NodeError saying how to start one."""
    try:
        import docker
    except ImportError as exc:  # the optional 'container' extra
        raise NodeError("the container provider needs `pip install 'echomq-teach[container]'`") from exc
    try:
        client = docker.from_env(timeout=10)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - every failure here means "no engine"
        raise NodeError(ENGINE_HINT.format(where=_docker_where(), why=f"{type(exc).__name__}: {exc}")) from exc
    return client


def engine_answers() -> bool:
    """True when a Docker engine answers (for tests that skip without one)."""
    try:
        engine().close()
        return True
    except NodeError:
        return False


def image_info(client: Any, image: str) -> Any:
    """The local image, or NodeError with how to build it (the kit never pulls)."""
    import docker

    try:
        return client.images.get(image)
    except docker.errors.ImageNotFound:
        hint = BUILD_HINT.format(image=image)
        raise NodeError(f"the node image {image!r} is not in the local engine; {hint}") from None


def image_has_module(img: Any) -> bool:
    labels = (img.attrs.get("Config") or {}).get("Labels") or {}
    return labels.get(MODULE_LABEL) == "trafikey"


# -- owners, the reaper and the sweep --------------------------------------------------------------
def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat): a reused PID differs."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_token(pid: int | None = None) -> str:
    """``<host>:<pid>:<start time>``: the owner label a container node carries."""
    pid = pid or os.getpid()
    return f"{os.uname().nodename}:{pid}:{_start_time(pid) or ''}"


def owner_alive(token: str) -> bool:
    """False once the process a label names is gone (or its PID now names another process).

    A label from another machine (a shared engine) is never judged dead here.
    """
    host, _, rest = token.partition(":")
    pid_text, _, started = rest.partition(":")
    if host != os.uname().nodename or not pid_text.isdigit():
        return True
    pid = int(pid_text)
    if not pid_alive(pid):
        return False
    return not started or _start_time(pid) in (None, started)


def sweep(client: Any = None) -> list[str]:
    """Remove every container node whose owner is gone; answers their ids."""
    own = client is None
    client = client or engine()
    removed: list[str] = []
    try:
        for ct in client.containers.list(all=True, filters={"label": OWNER_LABEL}):
            if not owner_alive(ct.labels.get(OWNER_LABEL, "")):
                try:
                    ct.remove(force=True)
                    removed.append(ct.id)
                except Exception:  # noqa: BLE001 - gone already, or being removed by its reaper
                    continue
                folder = ct.labels.get(FOLDER_LABEL, "")
                if Path(folder).name.startswith("echomq-container-"):  # only a folder the kit made
                    shutil.rmtree(folder, ignore_errors=True)
    finally:
        if own:
            client.close()
    return removed


class _Reaper:
    """This process's reaper (reaper.py), started with the first container node."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._child: Child | None = None
        self._pid = 0

    def _send(self, line: str) -> None:
        if os.environ.get("ECHOMQ_NO_REAPER"):
            return  # the finalizer and the sweep still clean up
        with self._lock:
            if self._child is None or self._pid != os.getpid() or not self._child.alive:
                self._pid = os.getpid()
                # untied, in a session of its own: it must outlive the kernel, and a kill of the
                # kernel's process group must not reach it; its last words go to our stderr
                self._child = Child(
                    [sys.executable, "-m", "echomq_teach.nodes.reaper"], log=None, stdin_pipe=True, tied=False,
                    cwd=Path(__file__).resolve().parents[2], what="the container reaper",
                )
            stdin = self._child.proc.stdin
            assert stdin is not None
            try:
                stdin.write(line.encode() + b"\n")
                stdin.flush()
            except OSError:
                self._child = None

    def watch(self, cid: str, folder: Path) -> None:
        self._send(f"+ {cid} {folder}")

    def forget(self, cid: str) -> None:
        self._send(f"- {cid}")


reaper = _Reaper()


class _Owned:
    """What a ContainerNode's finalizer needs, held apart from the node so the node can be collected."""

    def __init__(self, folder: Path) -> None:
        self.cid: str | None = None
        self.folder = folder

    def end(self) -> None:
        """Remove the container (if any) and delete the folder: the node is gone."""
        if self.cid is not None:
            cid, self.cid = self.cid, None
            try:
                client = engine()
                try:
                    client.containers.get(cid).remove(force=True)
                finally:
                    client.close()
            except Exception:  # noqa: BLE001 - already gone, or the engine is: the sweep takes it then
                pass
            reaper.forget(cid)
        shutil.rmtree(self.folder, ignore_errors=True)


def _testcontainers() -> Any:
    try:
        from testcontainers.core.config import testcontainers_config
        from testcontainers.core.container import DockerContainer
    except ImportError as exc:  # the optional 'container' extra
        raise NodeError("the container provider needs `pip install 'echomq-teach[container]'`") from exc

    # Ryuk would pull its own image and need a mapped port: neither exists here
    testcontainers_config.ryuk_disabled = True
    return DockerContainer


class ContainerNode(Node):
    """A Valkey node in a container on host networking, bound to 127.0.0.1; stopped by ``stop()``."""

    def __init__(self, native: bool = False, durable: bool = False, image: str | None = None) -> None:
        self.native = native
        self.durable = durable
        self.image = image or os.environ.get("ECHOMQ_NODE_IMAGE") or DEFAULT_IMAGE
        self.password = secrets.token_urlsafe(24)
        keep_secret(self.password)
        self.port = 0
        self.run_ids: list[str] = []
        self._tc: Any = None
        self.dir = Path(tempfile.mkdtemp(prefix="echomq-container-"))
        self.dir.chmod(0o700)  # the config with the password sits here; only we traverse it
        self._owned = _Owned(self.dir)
        # the last reference dropped (or the interpreter exiting): remove the container, delete the folder
        self._finalizer = weakref.finalize(self, self._owned.end)
        try:
            self._start()
        except BaseException:
            self._remove()
            self._finalizer()
            raise

    # -- starting ------------------------------------------------------------------------------
    def _start(self) -> None:
        client = engine()
        try:
            sweep(client)  # containers of kernels that died before their reaper could act
            img = image_info(client, self.image)
            if self.native and not image_has_module(img):
                raise NodeError(
                    f"the image {self.image!r} has no trafikey module (label {MODULE_LABEL} is not 'trafikey'); "
                    "rebuild it once native/ compiles: `bash docker/build-offline.sh --module yes`"
                )
        finally:
            client.close()
        # a free port can be taken between the probe and the bind: try a fresh one
        for attempt in range(3):
            self.port = free_port()
            self._write_config()
            try:
                self._launch()
                break
            except NodeError as exc:
                self._remove()
                if "Address already in use" not in str(exc) or attempt == 2:
                    raise
        self._after_ready()

    def _uid(self) -> str:
        # a root host runs the server as nobody (chown'ing its files); anyone else as themselves,
        # so the files it writes stay theirs to delete
        if os.getuid() == 0:
            return f"{NOBODY}:{NOBODY}"
        return f"{os.getuid()}:{os.getgid()}"

    def _write_config(self) -> None:
        if self.durable:
            (self.dir / "data").mkdir(exist_ok=True)
        # logfile "": stdout, which the engine keeps (docker logs) and the readiness wait reads
        lines = server_config(
            self.port,
            self.password,
            logfile="",
            data_dir=DATA_PATH if self.durable else "/",
            durable=self.durable,
            module_path=MODULE_PATH if self.native else None,
        )
        conf = self.dir / "node.conf"
        conf.write_text("\n".join(lines) + "\n")
        conf.chmod(0o600)
        if os.getuid() == 0:
            os.chown(conf, NOBODY, NOBODY)
            if self.durable:
                os.chown(self.dir / "data", NOBODY, NOBODY)

    def _launch(self) -> None:
        docker_container = _testcontainers()
        from testcontainers.core.wait_strategies import LogMessageWaitStrategy

        volumes = {str(self.dir / "node.conf"): {"bind": CONF_PATH, "mode": "ro"}}
        if self.durable:
            volumes[str(self.dir / "data")] = {"bind": DATA_PATH, "mode": "rw"}
        tc = docker_container(self.image).with_command([CONF_PATH])
        for host_path, m in volumes.items():
            tc = tc.with_volume_mapping(host_path, m["bind"], m["mode"])
        # with_kwargs replaces, never merges: everything the engine needs goes in one call.
        # network="host" also stops testcontainers from guessing a network of its own.
        tc = tc.with_kwargs(
            network="host",
            user=self._uid(),
            labels={OWNER_LABEL: owner_token(), FOLDER_LABEL: str(self.dir)},
        )
        tc = tc.waiting_for(
            LogMessageWaitStrategy(READY_LINE).with_startup_timeout(READY_TIMEOUT_S).with_poll_interval(0.05)
        )
        self._tc = tc
        try:
            tc.start()
            self._owned.cid = tc.get_container_id()
            reaper.watch(self._owned.cid, self.dir)
        except Exception as exc:  # noqa: BLE001 - turned into one message with the server's own words
            raise NodeError(
                f"the node container ({self.image}) did not become ready: {type(exc).__name__}; "
                f"its log:\n{self.log_tail()}"
            ) from exc
        self._wait_ping()

    def _wait_ping(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                c = self.client()
                try:
                    if c.ping():
                        return
                finally:
                    c.close()
            except (redis.exceptions.ConnectionError, redis.exceptions.BusyLoadingError, OSError) as exc:
                last = exc
            if not self.running:
                break
            time.sleep(0.02)
        raise NodeError(f"the node container did not answer PING ({last}); its log:\n{self.log_tail()}")

    def _after_ready(self) -> None:
        c = self.client()
        try:
            self.run_ids.append(c.info("server")["run_id"])
            if self.native:
                # the brand goes on at start, as on an embedded native node
                c.set(keyspace.VERSION_KEY, keyspace.BRAND_WIRE6)
        finally:
            c.close()

    # -- what a Node offers ----------------------------------------------------------------------
    @property
    def address(self) -> dict[str, Any]:
        return {"host": "127.0.0.1", "port": self.port, "password": self.password}

    @property
    def url(self) -> str:
        """A URL for this node, password included (give it only to your own kernels)."""
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    @property
    def run_id(self) -> str:
        """The server's current run_id: it changes at every restart."""
        return self.run_ids[-1]

    @property
    def container_id(self) -> str | None:
        return self._tc.get_container_id() if self._tc is not None and self._tc._container else None

    @property
    def running(self) -> bool:
        if self._tc is None or self._tc._container is None:
            return False
        try:
            self._tc.reload()
            return self._tc.status == "running"
        except Exception:  # noqa: BLE001 - a removed container is simply not running
            return False

    def log_tail(self, lines: int = 15) -> str:
        """The last lines the server printed in its container."""
        if self._tc is None or self._tc._container is None:
            return "(no container)"
        try:
            out, err = self._tc.get_logs()
        except Exception as exc:  # noqa: BLE001
            return f"(no log: {exc})"
        text = (out + err).decode(errors="replace").splitlines()
        return "\n".join(text[-lines:]) or "(empty log)"

    def restart(self) -> None:
        """Restart the container on the same port and data (``durable=True`` only)."""
        if not self.durable:
            raise NodeError(
                "restart() keeps data only on a durable node: start_node(provider='container', durable=True)"
            )
        self._tc.get_wrapped_container().restart(timeout=10)
        self._wait_ping()
        c = self.client()
        try:
            self.run_ids.append(c.info("server")["run_id"])
        finally:
            c.close()

    def _remove(self) -> None:
        if self._tc is None or self._tc._container is None:
            return
        try:
            wrapped = self._tc.get_wrapped_container()
            if self.durable:
                wrapped.stop(timeout=5)  # let the AOF close cleanly
            self._tc.stop(force=True, delete_volume=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
        self._tc._container = None
        if self._owned.cid is not None:
            reaper.forget(self._owned.cid)
            self._owned.cid = None

    def stop(self) -> None:
        """Remove the container and delete its folder."""
        self._remove()
        self._finalizer()

    def __repr__(self) -> str:
        kind = "native" if self.native else "scripted"
        state = "running" if self.running else "stopped"
        return f"<ContainerNode {kind}{' durable' if self.durable else ''} 127.0.0.1:{self.port} {self.image} {state}>"


def start(native: bool = False, durable: bool = False, image: str | None = None, **kw: Any) -> ContainerNode:
    """A node in a container from the node image (``start_node(provider="container")``)."""
    if kw:
        raise NodeError(f"the container provider does not take {', '.join(sorted(kw))}")
    return ContainerNode(native=native, durable=durable, image=image)
