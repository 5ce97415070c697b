"""Provisioning a shared node: brand it, load the kit's scripts, and give each student an ACL user of their own.

``provision(admin, roster)`` creates (or resets) one ACL user per student with
a fresh random password, on the scripted node and, when given, on its native
twin; ``revoke`` deletes users (their keys stay). The rules are ``acl.student_rules``;
students may not load scripts, so the kit's are loaded here (``kit_scripts``).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence

import redis

from .. import keyspace
from ..errors import EchoMQError
from ..nodes.slots import claim_slots
from . import kit_scripts
from .acl import native_commands, student_rules
from .compose import STUDENT_SOCKET_DIR
from .credentials import Student
from .roster import check_name, read_roster


def brand(admin: redis.Redis) -> str:
    """Brand the node once (``echomq:6.0.0`` with the module, else ``echomq:4.0.0``); answers the brand.

    A cluster-mode node takes its slots first (``claim_slots``).
    """
    claim_slots(admin)
    want = keyspace.BRAND_WIRE6 if native_commands(admin) else keyspace.BRAND_WIRE4
    admin.set(keyspace.VERSION_KEY, want, nx=True)
    return admin.get(keyspace.VERSION_KEY)


def where(admin: redis.Redis) -> tuple[str, int, str | None]:
    """Where students reach the node: host and port, and for a node behind a Unix socket that socket.

    The instructor reaches the nodes at ``DIR/node/run/node.sock`` and ``native.sock``; a
    student's container has that folder at ``/run/echomq`` (``compose.STUDENT_SOCKET_DIR``).
    """
    kw = admin.connection_pool.connection_kwargs
    if "path" in kw:
        return "127.0.0.1", 0, f"{STUDENT_SOCKET_DIR}/{os.path.basename(kw['path'])}"
    return str(kw.get("host", "127.0.0.1")), int(kw.get("port", 6379)), None


def provision_names(
    admin_client: redis.Redis,
    names: Sequence[str],
    native_admin_client: redis.Redis | None = None,
) -> list[Student]:
    """Create (or reset) one ACL user per name, with a fresh random password each; brand the node(s)."""
    for n in names:
        check_name(n)
    host, port, sock = where(admin_client)
    nhost: str | None = None
    nport: int | None = None
    nsock: str | None = None
    targets = [admin_client]
    if native_admin_client is not None:
        nhost, nport, nsock = where(native_admin_client)
        if nsock and sock and nsock == sock:
            raise EchoMQError(f"the scripted and the native admin URLs name the same socket ({sock})")
        targets.append(native_admin_client)
    students = [Student(n, secrets.token_urlsafe(18), host, port, nhost, nport, sock, nsock) for n in names]
    for admin in targets:
        brand(admin)
        kit_scripts.load(admin)  # students may not load scripts: the kit's are there before they connect
        native = native_commands(admin)
        for s in students:
            admin.execute_command("ACL", "SETUSER", s.name, *student_rules(s.name, s.password, native))
        try:
            admin.execute_command("ACL", "SAVE")  # kept across restarts when the node has an aclfile
        except redis.exceptions.ResponseError:
            pass  # no aclfile: the users live until the node restarts; provision again then
    return students


def provision(
    admin_client: redis.Redis,
    roster_path: str | os.PathLike[str],
    native_admin_client: redis.Redis | None = None,
) -> list[Student]:
    """Provision every student of the roster file on the shared node (and its native twin, if given)."""
    return provision_names(admin_client, read_roster(roster_path), native_admin_client)


def revoke(admin_client: redis.Redis, names: Sequence[str]) -> int:
    """Delete the students' ACL users (their keys stay); answers how many existed."""
    return int(admin_client.execute_command("ACL", "DELUSER", *names)) if names else 0


def flush_scripts(admin_client: redis.Redis) -> int:
    """Empty the node's script cache (the instructor's ``SCRIPT FLUSH``); answers the scripts it held.

    ``SCRIPT LOAD`` is accepted even on a full node and a loaded script is never
    evicted: this is how the instructor gets that memory back. Every kit
    connector loads its scripts again on the next ``NOSCRIPT``.
    """
    held = int(admin_client.info("memory").get("number_of_cached_scripts", 0))
    admin_client.execute_command("SCRIPT", "FLUSH", "SYNC")
    return held


def kill_script(admin_client: redis.Redis) -> str:
    """End the busy script or function on the node (the instructor's ``SCRIPT KILL``/``FUNCTION KILL``).

    Answers what happened. A script that already wrote cannot be killed (the
    server refuses, to keep the data whole): then only ``SHUTDOWN NOSAVE`` ends it.
    """
    for cmd in (("SCRIPT", "KILL"), ("FUNCTION", "KILL")):
        try:
            admin_client.execute_command(*cmd)
            return f"{' '.join(cmd)}: the busy {cmd[0].lower()} was ended"
        except redis.exceptions.ResponseError as exc:
            text = str(exc)
            if "UNKILLABLE" in text:
                return (
                    f"{' '.join(cmd)}: {text}; it has written, so only SHUTDOWN NOSAVE ends it "
                    "(the AOF keeps everything up to the script; compose restarts the node)"
                )
            if "NOTBUSY" not in text:
                raise
    return "no script or function is running"
