"""A classroom folder for ``docker/compose.yaml``: the shared nodes' configs, ACL files and secrets.

``init_folder(DIR)`` writes::

    DIR/               0700, the instructor's (root on a hub host)
      admin.env        0600  ECHOMQ_ADMIN_URL, ECHOMQ_NATIVE_ADMIN_URL (the admin password)
      instructor.password  0600  the hub's instructor login (JupyterHub's admin)
      .env             0600  what compose reads: the node folder, its uid/gid
      hub/             0700  the hub's state (database, cookie secret), created empty
      node/            0700, owned by the user the node containers run as (nobody on a root host)
        node.conf, native.conf         the two nodes' configs (limits below)
        users.acl, native-users.acl    the admin user, by the SHA-256 of its password only
        run/           0755  the nodes' Unix sockets, node.sock and native.sock: their only way in

Students' credentials (``provision --out DIR/credentials.json``) join the
0600 files of DIR. The nodes never see DIR itself, only ``node/``, so
nothing a node runs as can read the admin password or the credentials.

Both nodes run in a network namespace of their own (compose: ``network_mode:
none``), their TCP ports on a loopback nobody else shares, and listen for
clients on Unix sockets in ``node/run``: the hub mounts that folder, alone and
read-only, into each student's container at ``/run/echomq``. The scripted node
runs in cluster mode, and a cluster node obeys anyone who reaches its bus port
(no password: ``CLUSTER MEET``, then a takeover): its bus is on that private
loopback too. Nothing of either node is on a loopback a student shares, so a
connection to them is a socket of the student's container, which the
instructor's ``holders`` counts.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from ..errors import EchoMQError

#: where compose mounts the node folder inside the node containers
MOUNT = "/classroom"
NODE_PORT, NATIVE_PORT, HUB_PORT = 6390, 6391, 8000
NOBODY = 65534
#: the nodes' sockets: in the node's folder, and where a student's container sees them
SOCKET_DIR, SOCKET_NAME, NATIVE_SOCKET_NAME = "run", "node.sock", "native.sock"
STUDENT_SOCKET_DIR = "/run/echomq"
#: the node container's memory and its data-segment limit, past maxmemory: client buffers, the
#: AOF rewrite's copies, and the Lua heap, which maxmemory does not count (docs/classroom.md)
MEMORY_HEADROOM, DATA_HEADROOM = 1024 * 2**20, 768 * 2**20


def protection(maxmemory: str = "512mb", maxclients: int = 1000) -> dict[str, str]:
    """The limits that keep one student from starving the rest of a shared node.

    - ``maxmemory`` with ``noeviction``: a full node refuses writes (OOM) and never
      evicts anyone's keys; one command may add at most ``proto-max-bulk-len``;
    - ``busy-reply-threshold`` (``lua-time-limit``): after 1 s a running script makes
      the node answer BUSY, and from then on the instructor can ``SCRIPT KILL`` it
      (students may not: ``acl.student_rules``);
    - ``maxclients`` and ``maxmemory-clients``: a bound on connections, and on the
      memory their buffers take (the biggest client is dropped first); ``timeout``
      closes connections idle for an hour. Valkey has no per-user client limit (docs/classroom.md:
      the instructor's ``holders``).
    """
    return {
        "maxmemory": maxmemory,
        "maxmemory-policy": "noeviction",
        "busy-reply-threshold": "1000",
        "maxclients": str(maxclients),
        "maxmemory-clients": "10%",
        "proto-max-bulk-len": "8mb",
        "client-query-buffer-limit": "16mb",
        "timeout": "3600",
    }


def cluster_mode(config_file: str = "nodes.conf", bus_port: int | None = None) -> dict[str, str]:
    """A node in cluster mode, alone: it serves every slot (``provision.claim_slots`` takes them).

    Then ``SCAN MATCH emq:{q}:…`` (the hashtag names one slot) visits that slot
    only, so ``@snapshot`` and ``@drop`` cost what one queue holds, not what the
    whole class holds. The bus port defaults to the node's port + 10000.
    """
    out = {"cluster-enabled": "yes", "cluster-config-file": config_file}
    if bus_port is not None:
        out["cluster-port"] = str(bus_port)
    return out


def node_conf(port: int, acl: str, native: bool, limits: dict[str, str] | None = None) -> str:
    """A shared node's valkey.conf, as the node container sees it (files under ``MOUNT``).

    Clients come in through its socket only (``node/run``): its TCP port stays in the node's own network
    namespace (compose: ``network_mode: none``); the ACL, not the socket's mode, keeps students apart.
    """
    lines = [
        "bind 127.0.0.1",
        f"port {port}",
        "protected-mode yes",
        f"aclfile {MOUNT}/{acl}",  # users live here; ACL SAVE (run by provision) keeps them
        'save ""',
        # students' queues and the brand survive a restart of the node
        "appendonly yes",
        "appendfsync everysec",
        f"appenddirname aof-{acl.removesuffix('.acl')}",  # one folder per node: they share the mount
        'logfile ""',
        f"dir {MOUNT}",
        "databases 1",
    ]
    if not native:
        # not the native node: trafikey reads the brand {emq}:version, a key of another slot, from
        # inside its commands, and in cluster mode Valkey looks such a key up in the command's slot
        lines += [f"{k} {v}" for k, v in cluster_mode(f"nodes-{acl.removesuffix('.acl')}.conf").items()]
    lines += [f"unixsocket {MOUNT}/{SOCKET_DIR}/{NATIVE_SOCKET_NAME if native else SOCKET_NAME}", "unixsocketperm 666"]
    lines += [f"{k} {v}" for k, v in (limits or protection()).items()]
    if native:
        lines.append("loadmodule /usr/local/lib/valkey/trafikey.so")
    return "\n".join(lines) + "\n"


def size_bytes(size: str) -> int:
    """``"512mb"`` (kb, mb, gb; k, m, g; or plain bytes, as valkey.conf writes sizes) in bytes."""
    text = size.strip().lower()
    units = {"gb": 2**30, "mb": 2**20, "kb": 2**10, "g": 10**9, "m": 10**6, "k": 10**3, "b": 1}
    for unit, factor in units.items():
        if text.endswith(unit) and text[: -len(unit)].isdigit():
            return int(text[: -len(unit)]) * factor
    if text.isdigit():
        return int(text)
    raise EchoMQError(f"{size!r} is not a size (e.g. 512mb, 1gb)")


def container_limits(maxmemory: str) -> dict[str, int]:
    """The node containers' memory cap and data-segment limit (bytes), from the node's ``maxmemory``.

    The data limit comes first: a script's one big allocation past it fails as
    "not enough memory" and the node lives on; the memory cap is the backstop the
    host keeps whatever else happens (the kernel ends the node, compose restarts it
    from its AOF).
    """
    cap = size_bytes(maxmemory)
    return {"memory": cap + MEMORY_HEADROOM, "data": cap + DATA_HEADROOM}


def acl_admin_line(password: str) -> str:
    """The ACL file's admin user, by the SHA-256 of its password: the node folder holds no password."""
    return f"user default on #{hashlib.sha256(password.encode()).hexdigest()} ~* &* +@all\n"


def _create(path: Path, text: str) -> None:
    # a fresh folder: every file is new, created exclusively and 0600 from its first byte
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def init_folder(path: str | os.PathLike[str], maxmemory: str = "512mb", maxclients: int = 1000) -> dict[str, str]:
    """Write a classroom folder (see the module docstring); answers the admin environment."""
    d = Path(path).resolve()
    if (d / "admin.env").exists() or (d / "node").exists():
        raise EchoMQError(f"{d} is already a classroom folder (admin.env or node/ exists); use another folder")
    sizes = container_limits(maxmemory)  # refuses a size it cannot read, before anything is written
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o700)
    uid, gid = (NOBODY, NOBODY) if os.getuid() == 0 else (os.getuid(), os.getgid())
    admin_pw = secrets.token_urlsafe(24)
    node = d / "node"
    limits = protection(maxmemory, maxclients)
    admin = {
        "ECHOMQ_ADMIN_URL": f"unix://:{admin_pw}@{node / SOCKET_DIR / SOCKET_NAME}",
        "ECHOMQ_NATIVE_ADMIN_URL": f"unix://:{admin_pw}@{node / SOCKET_DIR / NATIVE_SOCKET_NAME}",
    }
    node.mkdir(mode=0o700)
    (node / SOCKET_DIR).mkdir(mode=0o755)
    node_files = {
        "node.conf": node_conf(NODE_PORT, "users.acl", native=False, limits=limits),
        "native.conf": node_conf(NATIVE_PORT, "native-users.acl", native=True, limits=limits),
        "users.acl": acl_admin_line(admin_pw),
        "native-users.acl": acl_admin_line(admin_pw),
    }
    for name, text in node_files.items():
        _create(node / name, text)
        if os.getuid() == 0:
            os.chown(node / name, uid, gid)
    if os.getuid() == 0:
        os.chown(node, uid, gid)
        os.chown(node / SOCKET_DIR, uid, gid)
    _create(d / "admin.env", "".join(f"{k}={v}\n" for k, v in admin.items()))
    _create(d / "instructor.password", secrets.token_urlsafe(12) + "\n")
    _create(
        d / ".env",
        f"ECHOMQ_NODE_DIR={node}\nECHOMQ_UID={uid}\nECHOMQ_GID={gid}\n"
        f"ECHOMQ_NODE_MEM_LIMIT={sizes['memory']}\nECHOMQ_NODE_DATA_LIMIT={sizes['data']}\n",
    )
    (d / "hub").mkdir(mode=0o700, exist_ok=True)
    return admin
