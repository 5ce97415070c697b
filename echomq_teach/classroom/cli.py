"""The instructor's command for a classroom's shared node (``echomq-classroom``).

::

    python -m echomq_teach.classroom init ~/classroom
    set -a; . ~/classroom/admin.env; set +a          # or: --admin-env ~/classroom/admin.env
    python -m echomq_teach.classroom provision roster.txt --out ~/classroom/credentials.json

The pieces live in their own modules: ``roster`` (who), ``acl`` (the rules),
``provision`` (users on the node), ``credentials`` (the files), ``compose``
(the classroom folder). The admin URL comes from ``$ECHOMQ_ADMIN_URL`` or
``--admin-env FILE``, never from the command line, where ``ps`` would show it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import redis

from .. import keyspace
from ..connector import address_from_url, make_client
from ..errors import EchoMQError
from . import kit_scripts
from .compose import init_folder
from .credentials import ADMIN_VARS, admin_urls, export_lines, read_credentials, write_credentials
from .holders import holders
from .provision import brand, flush_scripts, kill_script, provision, revoke


def _admin(urls: dict[str, str], var: str = "ECHOMQ_ADMIN_URL") -> redis.Redis:
    url = urls.get(var)
    if not url:
        raise SystemExit(
            f"classroom: set {var} (e.g. `set -a; . DIR/admin.env; set +a`) or give --admin-env DIR/admin.env"
        )
    return make_client(address_from_url(url))


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m echomq_teach.classroom", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def admin_env(p: argparse.ArgumentParser) -> None:
        p.add_argument("--admin-env", metavar="FILE", help="an env file with ECHOMQ_ADMIN_URL (default: environment)")

    p = sub.add_parser("provision", help="create one ACL user per student of a roster file")
    p.add_argument("roster", help="one name per line, or a CSV whose first column is the name")
    admin_env(p)
    p.add_argument("--no-native", action="store_true", help="ignore ECHOMQ_NATIVE_ADMIN_URL")
    p.add_argument("--out", default="classroom-credentials.json", help="the credentials file (written 0600)")
    p.add_argument("--print", action="store_true", help="also print each student's export lines")
    i = sub.add_parser("init", help="write a classroom folder for docker/compose.yaml")
    i.add_argument("folder")
    i.add_argument("--maxmemory", default="512mb", help="each shared node's memory cap (noeviction)")
    i.add_argument("--maxclients", type=int, default=1000)
    e = sub.add_parser("env", help="print one student's export lines from the credentials file")
    e.add_argument("name")
    e.add_argument("--credentials", default="classroom-credentials.json")
    for name, text in (
        ("brand", "brand the node once (echomq:6.0.0 with trafikey loaded, else echomq:4.0.0)"),
        ("kill-script", "end a script that keeps the node busy (the instructor only)"),
        ("flush-scripts", "empty the node's script cache (loaded scripts are never evicted; keep-scripts reloads)"),
        ("load-scripts", "load the kit's scripts on both nodes once (students may not load scripts)"),
        ("keep-scripts", "keep the kit's scripts on both nodes through every restart and flush (runs until stopped)"),
    ):
        admin_env(sub.add_parser(name, help=text))
    sub.add_parser("holders", help="open sockets per student container, from the host (when the node is full)")
    r = sub.add_parser("revoke", help="delete students' ACL users")
    r.add_argument("names", nargs="+")
    admin_env(r)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        urls = admin_urls(getattr(args, "admin_env", None)) if args.cmd not in ("init", "env", "holders") else {}
        if args.cmd == "provision":
            admin = _admin(urls)
            native = None if args.no_native or "ECHOMQ_NATIVE_ADMIN_URL" not in urls else _admin(
                urls, "ECHOMQ_NATIVE_ADMIN_URL"
            )
            students = provision(admin, args.roster, native)
            out = write_credentials(args.out, students)
            print(f"provisioned {len(students)} students on {students[0].host}:{students[0].port}; brand ", end="")
            print(f"{admin.get(keyspace.VERSION_KEY)}; credentials in {out} (mode 0600)")
            for s in students:
                print(f"# {s.name}\n{export_lines(s.env)}" if args.print else f"  {s.name}")
        elif args.cmd == "init":
            init_folder(args.folder, args.maxmemory, args.maxclients)
            d = Path(args.folder).resolve()
            print(f"classroom folder {d} (0700): admin.env, instructor.password, .env, hub/, node/")
            print(f"next: docker compose -p the-queue --env-file {d}/.env -f docker/compose.yaml up -d")
            print(f"      python -m echomq_teach.classroom provision ROSTER --admin-env {d}/admin.env \\")
            print(f"          --out {d}/credentials.json")
        elif args.cmd == "env":
            env = read_credentials(args.credentials).get(args.name.lower())
            if env is None:
                print(f"classroom: {args.name!r} is not in {args.credentials}", file=sys.stderr)
                return 1
            print(export_lines(env))
        elif args.cmd == "brand":
            print(brand(_admin(urls)))
        elif args.cmd == "kill-script":
            print(kill_script(_admin(urls)))
        elif args.cmd == "flush-scripts":
            print(f"flushed the script cache ({flush_scripts(_admin(urls))} scripts)")
        elif args.cmd == "load-scripts":
            _admin(urls)  # the scripted node's URL is required: refused here, by name, when missing
            for var in (v for v in ADMIN_VARS if v in urls):
                print(f"{var}: loaded {kit_scripts.load(_admin(urls, var))} of the kit's scripts")
        elif args.cmd == "keep-scripts":
            _admin(urls)  # the scripted node's URL is required: refused here, by name, when missing
            makers = [lambda v=v: _admin(urls, v) for v in ADMIN_VARS if v in urls]
            print(f"keep-scripts: keeping the kit's scripts on {len(makers)} node(s)", flush=True)
            try:
                kit_scripts.keep(makers, say=lambda line: print(line, flush=True))
            except KeyboardInterrupt:
                return 0
        elif args.cmd == "holders":
            from ..nodes import container  # the Docker client: only this command needs it

            client = container.engine()
            try:
                for name, n in holders(client):
                    print(f"{name}\t{n} open sockets")
            finally:
                client.close()
        elif args.cmd == "revoke":
            print(f"deleted {revoke(_admin(urls), args.names)} users")
    except (EchoMQError, OSError, redis.exceptions.RedisError) as exc:  # a NodeError from engine() too
        print(f"classroom: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
