"""A classroom's shared node: one ACL user per student, each in a namespace of their own.

The instructor runs one node and provisions the roster::

    ECHOMQ_ADMIN_URL=redis://:ADMINPW@127.0.0.1:6390/0 \\
        python -m echomq_teach.classroom provision roster.txt --out credentials.json

Every student gets an ACL user named after them with a random password, and
two environment variables for their kernel (the hub's spawner sets them):

* ``ECHOMQ_URL=redis://<name>:<password>@host:port/0`` — ``start_node()``
  finds the shared node instead of starting one;
* ``ECHOMQ_NAMESPACE=<name>`` — the kit puts the namespace inside the hashtag,
  so queue ``orders`` lives at ``emq:{<name>.orders}:…`` and still sits in one
  slot. The user's key pattern ``~emq:{<name>.*}:*`` then covers every key of
  every queue of theirs, and nobody else's.

The brand ``{emq}:version`` is readable (``%R~``) but not writable, so the
instructor brands the node once, here. ``FLUSHALL``, ``FLUSHDB``,
``SCRIPT FLUSH``, ``FUNCTION``, ``CONFIG``, ``MODULE`` (and everything else
in ``@dangerous`` but ``INFO``) are denied; ``EVALSHA``/``EVAL``,
``SCRIPT LOAD`` and the ``EMQ.*`` commands are allowed.

Roster file: one student name per line, or a CSV whose first column is the
name (a header row whose first cell is ``name``, ``username``, ``student``
or ``login`` is skipped). Blank lines and lines starting with ``#`` are
ignored. Names are lower-cased; each must match ``[a-z][a-z0-9_-]{0,31}``
(no dots: ``al`` and ``al.ice`` would otherwise share a prefix).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import redis

from . import keyspace
from .connector import address_from_url, make_client
from .errors import EchoMQError

NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_HEADERS = {"name", "username", "student", "login", "user"}
#: names a student may not take: the node's own users
RESERVED = {"default", "admin", "instructor"}
NATIVE_COMMANDS = ("emq.claim", "emq.complete", "emq.fail", "emq.stalled.check")


class RosterError(EchoMQError, ValueError):
    """The roster file cannot be used as it is (the message names the line)."""


@dataclass(frozen=True)
class Student:
    """One provisioned student: their ACL user, password and kernel environment."""

    name: str
    password: str
    host: str
    port: int
    native_host: str | None = None
    native_port: int | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.name}:{self.password}@{self.host}:{self.port}/0"

    @property
    def native_url(self) -> str | None:
        if self.native_host is None:
            return None
        return f"redis://{self.name}:{self.password}@{self.native_host}:{self.native_port}/0"

    @property
    def env(self) -> dict[str, str]:
        """The variables the student's kernel needs."""
        out = {"ECHOMQ_URL": self.url, "ECHOMQ_NAMESPACE": self.name}
        if self.native_url:
            out["ECHOMQ_NATIVE_URL"] = self.native_url
        return out

    def env_lines(self) -> str:
        return "\n".join(f"export {k}='{v}'" for k, v in self.env.items())


# -- the roster -----------------------------------------------------------------------------------
def parse_roster(text: str, source: str = "roster") -> list[str]:
    """Student names from a roster's text (see the module docstring for the format)."""
    names: list[str] = []
    seen: dict[str, int] = {}
    rows = csv.reader(io.StringIO(text))
    for lineno, row in enumerate(rows, start=1):
        cell = row[0].strip() if row else ""
        if not cell or cell.startswith("#"):
            continue
        name = cell.lower()
        if not names and not seen and name in _HEADERS:
            continue  # a CSV header
        if not NAME_RE.match(name):
            raise RosterError(
                f"{source}:{lineno}: {cell!r} is not a usable student name: "
                "a letter, then up to 31 letters, digits, '_' or '-' (no dots, spaces or braces)"
            )
        if name in RESERVED:
            raise RosterError(f"{source}:{lineno}: {name!r} is reserved for the node itself")
        if name in seen:
            raise RosterError(f"{source}:{lineno}: {name!r} is listed twice (first on line {seen[name]})")
        seen[name] = lineno
        names.append(name)
    if not names:
        raise RosterError(f"{source}: no student names found")
    return names


def read_roster(path: str | os.PathLike[str]) -> list[str]:
    p = Path(path)
    return parse_roster(p.read_text(encoding="utf-8-sig"), source=str(p))


# -- the rules ---------------------------------------------------------------------------------------
def key_pattern(name: str) -> str:
    """Every key of every queue of the student's: ``emq:{<name>.*}:*``."""
    return f"emq:{{{name}.*}}:*"


def student_rules(name: str, password: str, native_commands: Sequence[str] = ()) -> list[str]:
    """The ``ACL SETUSER`` rules for one student, in the order they apply."""
    if not NAME_RE.match(name):
        raise RosterError(f"{name!r} is not a usable student name")
    return [
        "reset",  # a re-run replaces everything, old passwords included
        "on",
        f">{password}",
        f"~{key_pattern(name)}",
        f"%R~{keyspace.VERSION_KEY}",  # the brand: read, never written
        "resetchannels",
        "-@all",
        # what the kit and its scripts send: reads and writes of their own keys, MULTI/EXEC,
        # AUTH/HELLO/CLIENT SETINFO/COMMAND (the connector's module check) ...
        "+@read",
        "+@write",
        "+@connection",
        "+@transaction",
        # ... less the dangerous ones (FLUSHALL, FLUSHDB, KEYS, SORT, DEBUG, CONFIG, MODULE, ...)
        "-@dangerous",
        "+info",  # notebooks read the version and run_id
        "+time",  # the scripts read the server clock
        "+eval",
        "+evalsha",
        "+eval_ro",
        "+evalsha_ro",
        "+script|load",
        "+script|exists",
        # denied explicitly as well, so the list reads as the course promises
        "-flushall",
        "-flushdb",
        "-script|flush",
        "-script|kill",
        "-function",
        "-fcall",
        "-fcall_ro",
        "-config",
        "-module",
        *[f"+{c}" for c in native_commands],
    ]


def _native_commands(admin: redis.Redis) -> list[str]:
    # ACL SETUSER refuses a command the node does not know, so only a native node's are added
    return [c.lower() for c in admin.command_list(module="trafikey") if c.lower() in NATIVE_COMMANDS]


def brand(admin: redis.Redis) -> str:
    """Brand the node once (``echomq:6.0.0`` with the module, else ``echomq:4.0.0``); answers the brand."""
    want = keyspace.BRAND_WIRE6 if _native_commands(admin) else keyspace.BRAND_WIRE4
    admin.set(keyspace.VERSION_KEY, want, nx=True)
    return admin.get(keyspace.VERSION_KEY)


def _where(admin: redis.Redis) -> tuple[str, int]:
    kw = admin.connection_pool.connection_kwargs
    if "path" in kw:
        raise EchoMQError("a classroom node must listen on TCP (students connect from their own kernels)")
    return str(kw.get("host", "127.0.0.1")), int(kw.get("port", 6379))


def provision_names(
    admin_client: redis.Redis,
    names: Sequence[str],
    native_admin_client: redis.Redis | None = None,
) -> list[Student]:
    """Create (or reset) one ACL user per name, with a fresh random password each; brand the node(s)."""
    host, port = _where(admin_client)
    nhost: str | None = None
    nport: int | None = None
    targets = [admin_client]
    if native_admin_client is not None:
        nhost, nport = _where(native_admin_client)
        targets.append(native_admin_client)
    students = [Student(n, secrets.token_urlsafe(18), host, port, nhost, nport) for n in names]
    for admin in targets:
        brand(admin)
        native = _native_commands(admin)
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


# -- the credentials file --------------------------------------------------------------------------
def write_credentials(path: str | os.PathLike[str], students: Sequence[Student]) -> Path:
    """A JSON file, mode 0600 from its first byte: ``{"students": {name: {VAR: value}}}``."""
    p = Path(path)
    data = {"students": {s.name: s.env for s in students}}
    tmp = p.with_name(p.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
    os.chmod(tmp, 0o600)
    owner = p.resolve().parent.stat()
    if os.getuid() == 0 and owner.st_uid != 0:
        # root writing into a classroom folder: the hub there runs as the folder's owner
        os.chown(tmp, owner.st_uid, owner.st_gid)
    os.replace(tmp, p)
    return p


def read_credentials(path: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    """name → the student's environment, from a file written by ``write_credentials``."""
    return dict(json.loads(Path(path).read_text(encoding="utf-8"))["students"])


def spawner_environment(username: str, path: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The variables a hub spawner sets for ``username`` (``{}`` when not on the roster)."""
    path = path or os.environ.get("ECHOMQ_CLASSROOM_CREDENTIALS")
    if not path or not Path(path).exists():
        return {}
    return dict(read_credentials(path).get(username.lower(), {}))


# -- a classroom folder for docker/compose.yaml ------------------------------------------------------
#: where compose mounts the classroom folder inside the node and hub containers
MOUNT = "/classroom"
NODE_PORT, NATIVE_PORT, HUB_PORT = 6390, 6391, 8000


def _node_conf(port: int, acl: str, native: bool) -> str:
    lines = [
        "bind 127.0.0.1",
        f"port {port}",
        "protected-mode yes",
        f"aclfile {MOUNT}/{acl}",  # users live here; ACL SAVE (run by provision) keeps them
        'save ""',
        # students' queues and the brand survive a restart of the node
        "appendonly yes",
        "appendfsync everysec",
        f"appenddirname aof-{acl.removesuffix('.acl')}",  # one folder per node: they share /classroom
        'logfile ""',
        f"dir {MOUNT}",
        "databases 1",
    ]
    if native:
        lines.append("loadmodule /usr/local/lib/valkey/trafikey.so")
    return "\n".join(lines) + "\n"


def init_folder(path: str | os.PathLike[str]) -> dict[str, str]:
    """Write a classroom folder: node configs, ACL files with a random admin password, compose's .env.

    The folder is 0700 and every file 0600, owned by the user the containers run
    as (a root host hands them to nobody, 65534, so no server runs as root).
    Answers the admin environment (``ECHOMQ_ADMIN_URL``, ``ECHOMQ_NATIVE_ADMIN_URL``).
    """
    d = Path(path).resolve()
    if (d / "admin.env").exists():
        raise EchoMQError(f"{d} is already a classroom folder (admin.env exists); use another folder")
    d.mkdir(parents=True, exist_ok=True)
    uid, gid = (65534, 65534) if os.getuid() == 0 else (os.getuid(), os.getgid())
    admin_pw = secrets.token_urlsafe(24)
    admin = {
        "ECHOMQ_ADMIN_URL": f"redis://:{admin_pw}@127.0.0.1:{NODE_PORT}/0",
        "ECHOMQ_NATIVE_ADMIN_URL": f"redis://:{admin_pw}@127.0.0.1:{NATIVE_PORT}/0",
    }
    files = {
        "node.conf": _node_conf(NODE_PORT, "users.acl", native=False),
        "native.conf": _node_conf(NATIVE_PORT, "native-users.acl", native=True),
        "users.acl": f"user default on >{admin_pw} ~* &* +@all\n",
        "native-users.acl": f"user default on >{admin_pw} ~* &* +@all\n",
        "admin.env": "".join(f"{k}={v}\n" for k, v in admin.items()),
        ".env": "".join(
            f"{k}={v}\n"
            for k, v in {
                "ECHOMQ_CLASSROOM_DIR": str(d),
                "ECHOMQ_UID": uid,
                "ECHOMQ_GID": gid,
                "ECHOMQ_HUB_PASSWORD": secrets.token_urlsafe(9),
            }.items()
        ),
    }
    for name, text in files.items():
        fd = os.open(d / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    (d / "hub").mkdir(exist_ok=True)
    for p in [d, d / "hub", *(d / n for n in files)]:
        p.chmod(0o700 if p.is_dir() else 0o600)
        if os.getuid() == 0:
            os.chown(p, uid, gid)
    return admin


# -- the instructor command -----------------------------------------------------------------------
def _admin(url: str | None, what: str) -> redis.Redis:
    if not url:
        raise SystemExit(f"classroom: give {what} (or set ECHOMQ_ADMIN_URL), e.g. redis://:ADMINPW@127.0.0.1:6390/0")
    return make_client(address_from_url(url))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m echomq_teach.classroom", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("provision", help="create one ACL user per student of a roster file")
    p.add_argument("roster", help="one name per line, or a CSV whose first column is the name")
    p.add_argument("--admin-url", default=os.environ.get("ECHOMQ_ADMIN_URL"), help="default: $ECHOMQ_ADMIN_URL")
    p.add_argument(
        "--native-admin-url",
        default=os.environ.get("ECHOMQ_NATIVE_ADMIN_URL"),
        help="a second, native node (trafikey loaded) for notebooks 04-06; default: $ECHOMQ_NATIVE_ADMIN_URL",
    )
    p.add_argument("--out", default="classroom-credentials.json", help="the credentials file (written 0600)")
    p.add_argument("--print", action="store_true", help="also print each student's export lines")
    i = sub.add_parser("init", help="write a classroom folder for docker/compose.yaml")
    i.add_argument("folder")
    e = sub.add_parser("env", help="print one student's export lines from the credentials file")
    e.add_argument("name")
    e.add_argument("--credentials", default="classroom-credentials.json")
    b = sub.add_parser("brand", help="brand the node once (echomq:6.0.0 with trafikey loaded, else echomq:4.0.0)")
    b.add_argument("--admin-url", default=os.environ.get("ECHOMQ_ADMIN_URL"))
    r = sub.add_parser("revoke", help="delete students' ACL users")
    r.add_argument("names", nargs="+")
    r.add_argument("--admin-url", default=os.environ.get("ECHOMQ_ADMIN_URL"))
    args = ap.parse_args(argv)

    try:
        if args.cmd == "provision":
            admin = _admin(args.admin_url, "--admin-url")
            native = _admin(args.native_admin_url, "--native-admin-url") if args.native_admin_url else None
            students = provision(admin, args.roster, native)
            out = write_credentials(args.out, students)
            print(f"provisioned {len(students)} students on {students[0].host}:{students[0].port}; brand ", end="")
            print(f"{admin.get(keyspace.VERSION_KEY)}; credentials in {out} (mode 0600)")
            for s in students:
                print(f"# {s.name}\n{s.env_lines()}" if args.print else f"  {s.name}")
        elif args.cmd == "init":
            init_folder(args.folder)
            d = Path(args.folder).resolve()
            print(f"classroom folder {d} (0700): node.conf, native.conf, users.acl, admin.env, .env")
            print(f"next: docker compose --env-file {d}/.env -f docker/compose.yaml up -d")
            print(f"      set -a; . {d}/admin.env; set +a")
            print(f"      python -m echomq_teach.classroom provision ROSTER --out {d}/credentials.json")
        elif args.cmd == "env":
            env = read_credentials(args.credentials).get(args.name.lower())
            if env is None:
                print(f"classroom: {args.name!r} is not in {args.credentials}", file=sys.stderr)
                return 1
            print("\n".join(f"export {k}='{v}'" for k, v in env.items()))
        elif args.cmd == "brand":
            print(brand(_admin(args.admin_url, "--admin-url")))
        elif args.cmd == "revoke":
            print(f"deleted {revoke(_admin(args.admin_url, '--admin-url'), args.names)} users")
    except (EchoMQError, OSError, redis.exceptions.RedisError) as exc:
        print(f"classroom: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
